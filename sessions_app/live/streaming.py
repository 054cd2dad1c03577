"""The assistant turn runner: context -> provider stream -> viewers -> one assistant entry.

A turn is a :class:`~sessions_app.models.StreamingTurn` row. :func:`run_turn` claims it, builds the
context at the turn's parent (``selectors.session_context`` -> ``compaction.convert_to_llm``), and
streams the provider's events. Output is coalesced: a delta goes out at once when the previous one
left more than ``PIWEB_STREAM_INTERVAL_MS`` ago, else when that interval is up, so tokens only wait
under load. Each delta frame is rendered once here (frames.delta) and travels ready-made.

Snapshot + stream = every delta exactly once: before a delta is published, the partial message and
its index become the turn's *live state* (:func:`live_publish`: this process's memory, and Redis
when the layer is shared, set in the round trip that publishes the delta), which a connecting
viewer's snapshot prefers over the row (:func:`live_get`).
The row itself (``partial``/``last_index``) is written in the background at most every
``PIWEB_STREAM_SAVE_MS`` (:class:`_Saver`), off the delta path, for crash survival. Recovery of a
dead runner's turn prefers the live state in Redis when it is newer than the row, so with a shared
layer nothing a viewer was shown is lost; with the in-memory layer (the runner dies with the whole
server) at most ``PIWEB_STREAM_SAVE_MS`` of output is. ``PIWEB_STREAM_SAVE_MS=0`` writes the row
before every delta instead (the old, slower behaviour).

Where turns run: with the in-memory channel layer, as an asyncio task in the process that served the
request (:func:`dispatch` from an async view); with Redis, in a Channels worker
(``manage.py runworker piweb-turns`` or ``manage.py turn_worker``) that receives ``turn.run``.

Stop: ``abort_requested`` on the row (any process may set it) is polled every 0.25 s; a stop in
the same process also sets the turn's event at once. Recovery: a turn whose runner died (same host,
pid gone) or whose heartbeat is older than ``PIWEB_TURN_STALE_SECONDS`` becomes an assistant entry
with its partial content and stopReason ``error`` (:func:`recover_stale_turns`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import socket
import time
import uuid
from collections.abc import Coroutine, Mapping
from datetime import timedelta
from typing import Any, Literal, TypeVar

import orjson
from asgiref.sync import ThreadSensitiveContext
from channels.db import database_sync_to_async
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from sessions_app import events, fanout
from sessions_app.core import compaction
from sessions_app.core.clock import now_ms
from sessions_app.errors import SessionsError
from sessions_app.live import compacting
from sessions_app.llm.assemble import Assembler
from sessions_app.llm.base import Error, Event, ModelInfo, TextDelta, ThinkingDelta, ToolCallDelta
from sessions_app.llm.registry import Registry, registry_from_settings
from sessions_app.models import VISIBLE, Session, StreamingTurn
from sessions_app.render import frames
from sessions_app.store import search_index, selectors, services

log = logging.getLogger(__name__)
T = TypeVar("T")

HOST = socket.gethostname()
RUNNER_ID = f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
ACTIVE = ("queued", "streaming")
CRASH_MESSAGE = "The server stopped while this reply was streaming"

_local_aborts: dict[str, asyncio.Event] = {}  # turns running in this process, by public id
_tasks: set[asyncio.Task[Any]] = set()  # strong references to running turn tasks


def stream_interval() -> float:
    return settings.PIWEB_STREAM_INTERVAL_MS / 1000


def save_interval() -> float:
    return settings.PIWEB_STREAM_SAVE_MS / 1000


def stale_after() -> float:
    return float(settings.PIWEB_TURN_STALE_SECONDS)


def uses_worker() -> bool:
    """True when turns go to a Channels worker (any layer shared between processes)."""
    return not isinstance(get_channel_layer(), InMemoryChannelLayer)


# --- model choice -------------------------------------------------------------------------------


def model_ref(model: ModelInfo) -> dict[str, str]:
    """What a turn row stores of its model (StreamingTurn.model); Registry.resolve reads it back."""
    return {"api": model.api, "provider": model.provider, "id": model.id}


# --- dispatch and stop ----------------------------------------------------------------------------


async def dispatch(turn: StreamingTurn) -> None:
    """Start a queued turn: here (in-memory layer) or on a worker (Redis). Call after commit."""
    ensure_janitor()
    if uses_worker():
        layer = get_channel_layer()
        assert layer is not None
        await layer.send(events.TURN_CHANNEL, {"type": "turn.run", "turn": turn.pk})
    else:
        start_local(turn.pk)


def start_local(turn_pk: int) -> asyncio.Task[Any]:
    task = background(run_turn(turn_pk))
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task


def background(work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """A task that outlives the request or socket that starts it (a turn, the janitor).

    It runs in a context of its own, not a copy of the caller's: asgiref gives each request a
    thread for its ORM calls and shuts it down when the request ends, and a task holding the
    request's context then got a new thread for its next call, left behind when it ended (one
    thread per turn, for the life of the process: bench_concurrency counts them). Here the task
    has one thread for its ORM calls while it runs, released when it ends."""

    async def run() -> T:
        async with ThreadSensitiveContext():
            return await work

    return asyncio.get_running_loop().create_task(run(), context=contextvars.Context())


def abort_local(turn_public_id: str) -> bool:
    """Set the abort event of a turn running in this process (call on its event loop)."""
    event = _local_aborts.get(turn_public_id)
    if event is None:
        return False
    event.set()
    return True


# --- database steps (sync; run through database_sync_to_async) -----------------------------------


def _claim(turn_pk: int) -> tuple[StreamingTurn, dict[str, Any]] | None:
    claimed = StreamingTurn.objects.filter(pk=turn_pk, status="queued").update(
        status="streaming", runner=RUNNER_ID, heartbeat_at=timezone.now()
    )
    if not claimed:
        return None
    turn = StreamingTurn.objects.select_related("session").get(pk=turn_pk)
    try:
        context = selectors.session_context(session=turn.session, leaf_id=turn.parent_id)
    except SessionsError:
        context = {"messages": [], "thinkingLevel": "off", "model": None}
    return turn, context


def partial_save(turn_pk: int, message: dict[str, Any], index: int) -> None:
    """The turn row's copy of the output so far (delta index), which recovery falls back on; the
    runner calls it at most every PIWEB_STREAM_SAVE_MS (before every delta when that is 0)."""
    StreamingTurn.objects.filter(pk=turn_pk, status="streaming").update(
        partial=message, last_index=index, heartbeat_at=timezone.now()
    )


def _poll(turn_pk: int, beat: bool) -> bool:
    if beat:
        StreamingTurn.objects.filter(pk=turn_pk, status="streaming").update(heartbeat_at=timezone.now())
    return bool(StreamingTurn.objects.filter(pk=turn_pk, abort_requested=True).exists())


def _status(message: Mapping[str, Any]) -> Literal["done", "error", "aborted"]:
    reason = message.get("stopReason")
    return "aborted" if reason == "aborted" else "error" if reason == "error" else "done"


@transaction.atomic
def finish_turn(turn: StreamingTurn, message: dict[str, Any], *, expect_runner: str | None) -> str | None:
    """Store the turn's assistant message as an entry (once) and close the row.

    expect_runner: only finish if this runner still owns the turn (None: recovery, any owner).
    The entry moves the leaf only if the leaf is still where the turn started.
    """
    # Lock the turn only (not the joined session row), and without blocking key-share locks.
    locked = (
        StreamingTurn.objects.select_for_update(of=("self",), no_key=True)
        .select_related("session")
        .filter(pk=turn.pk)
        .first()
    )
    if locked is None or locked.status not in ACTIVE:
        return None
    if expect_runner is not None and locked.runner != expect_runner:
        return None
    status = _status(message)
    session = Session.objects.filter(VISIBLE, pk=locked.session_id).first()
    entry_id = None
    if session is not None:
        try:
            entry = services.entry_append(
                session=session,
                payload={"type": "message", "message": message},
                parent_id=locked.parent_id,
                author=None,
                move_leaf=session.leaf_id == locked.parent_id,
            )
            entry_id = entry.entry_id
        except SessionsError:
            log.warning("turn %s: the reply could not be stored (parent gone?)", locked.public_id)
    locked.status = status
    locked.partial = message
    locked.entry_id = entry_id
    locked.save(update_fields=["status", "partial", "entry_id", "updated_at"])
    end: events.StreamEndEvent = {
        "type": "session.stream_end",
        "session": locked.session.public_id,
        "turn": str(locked.public_id),
        "status": status,
        "entry_id": entry_id,
    }
    pk = locked.session_id
    transaction.on_commit(lambda: events.publish_sync(pk, end))
    return entry_id


# --- live state: the newest published (index, partial) of each running turn -----------------------

LIVE_KEEP_SECONDS = 60.0  # a finished turn's live state stays this long (late snapshots stay exact)
_live: dict[str, tuple[int, dict[str, Any]]] = {}  # turn public id -> (index, partial message)


def _live_key(turn_id: str) -> str:
    return f"piweb:live:{turn_id}"


def _live_record(turn_id: str, index: int, message: dict[str, Any]) -> fanout.Remember | None:
    """Record the newest published (index, partial) here; what Redis must hold too, if shared."""
    _live[turn_id] = (index, message)  # one assignment: a reader sees the old or the new pair
    if not uses_worker():
        return None
    return _live_key(turn_id), orjson.dumps([index, message]), int(stale_after() * 4) + 60


async def live_publish(session_pk: int, delta: events.DeltaEvent, message: dict[str, Any]) -> None:
    """Record the live state, then publish the delta: with Redis, one round trip (the SET first)."""
    remember = _live_record(delta["turn"], delta["index"], message)
    await events.publish_now(session_pk, delta, remember=remember)


async def live_get(turn_ids: list[str]) -> dict[str, tuple[int, dict[str, Any]]]:
    """The newest live state of these turns: this process's, or Redis's when the layer is shared."""
    found = {t: _live[t] for t in turn_ids if t in _live}
    if turn_ids and uses_worker():
        for turn_id, raw in zip(
            turn_ids, await fanout.redis_client().mget([_live_key(t) for t in turn_ids]), strict=True
        ):
            if raw is not None:
                index, message = orjson.loads(raw)
                if turn_id not in found or found[turn_id][0] < index:
                    found[turn_id] = (int(index), message)
    return found


async def _live_forget(turn_id: str) -> None:
    """A finished turn: drop its live state later (a snapshot that read the row as streaming just
    before it finished still finds the final index)."""
    asyncio.get_running_loop().call_later(LIVE_KEEP_SECONDS, _live.pop, turn_id, None)
    if uses_worker():
        await fanout.redis_client().expire(_live_key(turn_id), int(LIVE_KEEP_SECONDS))


class _Saver:
    """Writes the partial to the row in the background, at most every save_interval(), newest only."""

    def __init__(self, turn_pk: int) -> None:
        self.turn_pk = turn_pk
        self.pending: tuple[dict[str, Any], int] | None = None
        self.task: asyncio.Task[None] | None = None
        self.last = 0.0
        self.saves = 0

    def offer(self, message: dict[str, Any], index: int) -> None:
        self.pending = (message, index)
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while self.pending is not None:
            wait = self.last + save_interval() - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            item, self.pending = self.pending, None
            if item is None:  # close() came while waiting
                return  # type: ignore[unreachable]
            try:
                await database_sync_to_async(partial_save)(self.turn_pk, item[0], item[1])
                self.saves += 1
            except Exception:  # pragma: no cover - a lost save only widens what a crash loses
                log.exception("turn %s: saving the partial failed", self.turn_pk)
            self.last = time.monotonic()

    async def close(self) -> None:
        """Stop saving (the turn's end writes the final message itself)."""
        self.pending = None
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with contextlib.suppress(BaseException):
                await self.task


# --- the runner -----------------------------------------------------------------------------------


class _Coalescer:
    """Stream events -> delta parts (merged per block), tracking content-array positions."""

    def __init__(self, assembler: Assembler) -> None:
        self.asm = assembler
        self.positions: dict[int | str, int] = {}
        self.parts: list[events.DeltaPart] = []
        self.first_at = 0.0  # wall time of the oldest token not yet flushed

    def feed(self, event: Event) -> None:
        before = len(self.asm.content)
        self.asm.feed(event)
        if not isinstance(event, TextDelta | ThinkingDelta | ToolCallDelta):
            return
        new = len(self.asm.content) > before
        if new:
            self.positions[event.block] = before
        position = self.positions.get(event.block)
        if position is None:
            return
        kind = str(self.asm.content[position]["type"])
        text = event.json if isinstance(event, ToolCallDelta) else event.text
        name = event.name if isinstance(event, ToolCallDelta) else ""
        if not new and not text:
            return
        if not self.parts:
            self.first_at = time.time()
        last = self.parts[-1] if self.parts else None
        if last is not None and last["block"] == position and not new:
            last["text"] += text
        else:
            self.parts.append({"block": position, "kind": kind, "text": text, "new": new, "name": name})

    def take(self) -> list[events.DeltaPart]:
        parts, self.parts = self.parts, []
        return parts


async def _watch(turn_pk: int, abort: asyncio.Event) -> None:
    """Poll the cross-process stop flag (and keep the heartbeat fresh) while the turn runs."""
    n = 0
    while not abort.is_set():
        await asyncio.sleep(0.25)
        n += 1
        try:
            if await database_sync_to_async(_poll)(turn_pk, n % 8 == 0):
                abort.set()
        except Exception:  # pragma: no cover - a database hiccup must not kill the turn
            log.exception("turn %s: polling the stop flag failed", turn_pk)


async def run_turn(turn_pk: int, *, registry: Registry | None = None) -> str | None:
    """Run one queued turn to its end; returns the assistant entry id (None if not run here)."""
    claimed = await database_sync_to_async(_claim)(turn_pk)
    if claimed is None:
        return None
    turn, context = claimed
    registry = registry or registry_from_settings()
    ref = turn.model or {}
    model = registry.resolve(provider=ref.get("provider"), model_id=ref.get("id"))
    provider = registry.provider_for(model)
    session_pk, session_id, turn_id = turn.session_id, turn.session.public_id, str(turn.public_id)
    abort = asyncio.Event()
    if turn.abort_requested:
        abort.set()
    _local_aborts[turn_id] = abort
    watcher = asyncio.create_task(_watch(turn_pk, abort))
    coalescer = _Coalescer(Assembler(model=model, timestamp_ms=now_ms()))
    saver = _Saver(turn_pk)
    index = 0
    try:
        model_name = f"{model.provider}/{model.id}"
        await events.publish_now(
            session_pk,
            {
                "type": "session.turn_start",
                "session": session_id,
                "turn": turn_id,
                "index": 0,
                "parent_id": turn.parent_id,
                "model": model_name,
                "html": frames.turn_start(session_id=session_id, turn=turn_id, model=model_name),
            },
        )

        async def flush() -> None:
            nonlocal index
            first_at = coalescer.first_at
            parts = coalescer.take()
            if not parts:
                return
            index += 1
            message = coalescer.asm.message()
            if save_interval() <= 0:  # strict: the row is written before every delta goes out
                await database_sync_to_async(partial_save)(turn_pk, message, index)
            else:
                saver.offer(message, index)
            delta: events.DeltaEvent = {
                "type": "session.delta",
                "session": session_id,
                "turn": turn_id,
                "index": index,
                "html": frames.delta(turn=turn_id, index=index, t=first_at, parts=parts),
                "t": first_at,
            }
            await live_publish(session_pk, delta, message)

        await _pump(provider_events(provider, model, context, abort), coalescer, flush)
    except Exception as exc:
        log.exception("turn %s failed", turn_id)
        if not coalescer.asm.finished:
            coalescer.asm.feed(Error(f"{type(exc).__name__}: {exc}"))
    finally:
        watcher.cancel()
        with contextlib.suppress(BaseException):
            await watcher
        await saver.close()
        _local_aborts.pop(turn_id, None)
    if not coalescer.asm.finished:
        coalescer.asm.feed(Error("The stream ended without a stop reason"))
    message = coalescer.asm.message()
    entry_id: str | None = await database_sync_to_async(finish_turn)(turn, message, expect_runner=RUNNER_ID)
    try:
        await _live_forget(turn_id)
    except Exception:  # pragma: no cover - Redis expires the key anyway
        log.exception("turn %s: dropping the live state failed", turn_id)
    if entry_id is not None and message["stopReason"] in ("stop", "length", "toolUse"):
        try:
            await compacting.auto_compact(session_pk, entry_id, model, message, registry)
        except Exception:
            log.exception("turn %s: automatic compaction failed", turn_id)
    return entry_id


def provider_events(provider: Any, model: ModelInfo, context: Mapping[str, Any], abort: asyncio.Event) -> Any:
    level = context.get("thinkingLevel") or "off"
    return provider.stream(
        model=model,
        messages=compaction.convert_to_llm(context.get("messages") or []),
        system=settings.PIWEB_CHAT_SYSTEM_PROMPT,
        thinking_level=level if model.reasoning else "off",
        max_tokens=model.max_tokens,
        abort=abort,
    )


async def _pump(stream: Any, coalescer: _Coalescer, flush: Any) -> None:
    """Feed the stream through the coalescer; flush at once when idle, else at most every interval."""
    interval = stream_interval()
    queue: asyncio.Queue[Event | None] = asyncio.Queue()

    async def produce() -> None:
        try:
            async for event in stream:
                queue.put_nowait(event)
        finally:
            queue.put_nowait(None)

    producer = asyncio.create_task(produce())
    last_flush = 0.0
    try:
        while True:
            pending = bool(coalescer.parts)
            timeout = max(0.0, last_flush + interval - time.monotonic()) if pending else None
            try:
                event = await asyncio.wait_for(queue.get(), timeout) if timeout is not None else await queue.get()
            except TimeoutError:
                await flush()
                last_flush = time.monotonic()
                continue
            if event is None:
                break
            coalescer.feed(event)
            if coalescer.parts and time.monotonic() - last_flush >= interval:
                # Take whatever else is already queued first: one delta instead of many.
                while not queue.empty():
                    more = queue.get_nowait()
                    if more is None:
                        queue.put_nowait(None)
                        break
                    coalescer.feed(more)
                await flush()
                last_flush = time.monotonic()
        await flush()
        await producer
    finally:
        if not producer.done():
            producer.cancel()
            with contextlib.suppress(BaseException):
                await producer


# --- compaction ---------------------------------------------------------------------------------


# --- recovery -------------------------------------------------------------------------------------


def _runner_dead(runner: str) -> bool:
    host, _, rest = runner.partition(":")
    pid_text, _, _token = rest.partition(":")
    if host != HOST or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return runner != RUNNER_ID
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def is_stale(turn: StreamingTurn, *, everything: bool = False) -> bool:
    if everything:
        return True
    if turn.status == "streaming" and turn.runner == RUNNER_ID:
        return str(turn.public_id) not in _local_aborts
    if turn.runner and _runner_dead(turn.runner):
        return True
    seen = turn.heartbeat_at or turn.created_at
    return timezone.now() - seen > timedelta(seconds=stale_after())


def recover_stale_turns(*, session: Session | None = None, everything: bool = False) -> list[str]:
    """Turn every stale queued/streaming turn into an assistant entry (partial content, stopReason
    error). everything=True treats all of them as stale (a single-process server that restarted)."""
    query = StreamingTurn.objects.filter(status__in=ACTIVE)
    if session is not None:
        query = query.filter(session=session)
    recovered = []
    for turn in query.select_related("session"):
        if not is_stale(turn, everything=everything):
            continue
        index, partial = _live_saved(str(turn.public_id))
        if index > turn.last_index and partial:  # newer than the row: everything viewers were shown
            turn.partial, turn.last_index = partial, index
        message = dict(turn.partial or _empty_message(turn))
        message["stopReason"] = "error"
        message["errorMessage"] = CRASH_MESSAGE
        message.pop("timestamp", None)
        message["timestamp"] = (turn.partial or {}).get("timestamp") or int(turn.created_at.timestamp() * 1000)
        finish_turn(turn, message, expect_runner=None)
        recovered.append(str(turn.public_id))
    return recovered


def _live_saved(turn_id: str) -> tuple[int, dict[str, Any] | None]:
    """The live state a dead runner left (this process's memory, else Redis when shared)."""
    if turn_id in _live:
        return _live[turn_id]
    if not uses_worker():
        return -1, None
    try:
        raw = fanout.sync_redis_client().get(_live_key(turn_id))
    except Exception:  # pragma: no cover - recovery goes on with the row's partial
        log.exception("turn %s: reading the live state failed", turn_id)
        return -1, None
    if raw is None:
        return -1, None
    index, message = orjson.loads(raw)
    return int(index), message


def _empty_message(turn: StreamingTurn) -> dict[str, Any]:
    ref = turn.model or {}
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    return {
        "role": "assistant",
        "content": [],
        "api": ref.get("api", "demo"),
        "provider": ref.get("provider", "piweb"),
        "model": ref.get("id", ""),
        "usage": {**zero, "totalTokens": 0, "cost": {**zero, "total": 0}},
        "stopReason": "error",
    }


# --- janitor: periodic recovery + presence heartbeat, one per process -------------------------------

_janitor: asyncio.Task[Any] | None = None


def ensure_janitor() -> None:
    """Start (once per event loop) the periodic sweep: stale turns, stopped imports' staging
    sessions, presence heartbeats."""
    global _janitor
    if not settings.PIWEB_JANITOR:
        return
    loop = asyncio.get_running_loop()
    if _janitor is not None and not _janitor.done() and _janitor.get_loop() is loop:
        return
    _janitor = background(_janitor_loop())


async def _janitor_loop() -> None:
    from sessions_app.live import presence

    first = True
    while True:
        try:
            await database_sync_to_async(recover_stale_turns)()
            await database_sync_to_async(services.staging_discard_stale)()  # imports that stopped
            await database_sync_to_async(search_index.resume_pending)()  # indexers that stopped
            if not first:
                await database_sync_to_async(presence.heartbeat)()
        except Exception:  # pragma: no cover
            log.exception("janitor sweep failed")
        first = False
        await asyncio.sleep(max(1.0, min(30.0, stale_after() / 3)))


# --- snapshot for consumers -------------------------------------------------------------------------


def active_turns(session: Session) -> list[StreamingTurn]:
    return list(StreamingTurn.objects.filter(session=session, status__in=ACTIVE).order_by("created_at", "pk"))
