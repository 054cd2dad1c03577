"""Session events to the websockets watching the session: each server process gets an event once and
hands it to its own sockets (the Hub).

One process (the in-memory channel layer): publish() hands the event to this process's hub.
Several (Redis, PIWEB_REDIS_URL): publish() PUBLISHes it on the session's Redis channel; each
process with viewers of that session holds one subscription to it (Subscriber) and hands what
arrives to its hub. One Redis message per process per event, where a channel-layer group_send made
one per socket (a session watched by 50 people: 50 writes and 50 reads per streamed delta).

Order: a session's events reach its sockets in the order they were published (a Redis channel keeps
the order of what it receives; publishers await each publish). Catch-up: a consumer joins, and its
process's subscription is confirmed, before it reads its snapshot; what arrives meanwhile it buffers,
then drops what the snapshot covered (live/consumers.py). A process that loses its subscription
closes its sockets, whose pages reconnect to a fresh snapshot. Turns still go to the workers through
the channel layer's queue (events.TURN_CHANNEL): pub/sub only fans out.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
from collections.abc import Callable
from typing import Any, Protocol

import orjson
from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings

log = logging.getLogger(__name__)


class Listener(Protocol):
    async def hub_deliver(self, event: Any) -> None: ...

    async def hub_lost(self) -> None:
        """Events may have been missed (the subscription broke): resynchronise."""
        ...


def shared() -> bool:
    """True when events cross processes: the channel layer is Redis (PIWEB_REDIS_URL)."""
    return not isinstance(get_channel_layer(), InMemoryChannelLayer)


def redis_url() -> str:
    """The Redis of the channel layer (its first host): live events and live state go there too."""
    layer: dict[str, Any] = settings.CHANNEL_LAYERS["default"]
    config: dict[str, Any] = layer.get("CONFIG") or {}
    host: Any = (config.get("hosts") or [settings.REDIS_URL])[0]
    if isinstance(host, dict):
        host = host.get("address", "")
    if isinstance(host, list | tuple):
        host = f"redis://{host[0]}:{host[1]}"
    return str(host)


def channel_of(group: str) -> str:
    """The session group's Redis channel. Pub/sub channels ignore the database number, so the
    number is part of the name: piweb instances sharing a Redis on different databases (and test
    runs) never see each other's events."""
    return f"piweb:{_redis_db(redis_url())}:session:{group}"


@functools.lru_cache(maxsize=8)
def _redis_db(url: str) -> int:
    from redis.connection import parse_url

    return int(parse_url(url).get("db", 0))  # type: ignore[no-untyped-call]  # redis's own rules: /N or ?db=N


class Hub:
    """This process's listeners (consumers) by session group."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[int, Listener]] = {}
        self.subscriber: Subscriber | None = None

    async def join(self, group: str, listener: Listener) -> None:
        """Register listener; returns once events published from now on will reach it."""
        first = group not in self.groups
        self.groups.setdefault(group, {})[id(listener)] = listener
        if first and shared():
            await self._subscriber().subscribe(group)

    def leave(self, group: str, listener: Listener) -> None:
        members = self.groups.get(group)
        if members is None:
            return
        members.pop(id(listener), None)
        if not members:
            del self.groups[group]
            if self.subscriber is not None and not self.subscriber.loop.is_closed():
                self.subscriber.unsubscribe_later(group)

    async def deliver(self, group: str, event: Any) -> None:
        for listener in list(self.groups.get(group, {}).values()):
            try:
                await listener.hub_deliver(event)
            except Exception:  # one broken socket must not stop the others
                log.exception("delivering %s to a viewer failed", event.get("type"))

    async def lost(self) -> None:
        for members in list(self.groups.values()):
            for listener in list(members.values()):
                with contextlib.suppress(Exception):
                    await listener.hub_lost()

    def _subscriber(self) -> Subscriber:
        loop = asyncio.get_running_loop()
        if self.subscriber is None or self.subscriber.loop is not loop:
            self.subscriber = Subscriber(self, loop)
        return self.subscriber


class Subscriber:
    """This process's one Redis pub/sub connection: the channels of the sessions it has viewers of."""

    def __init__(self, hub: Hub, loop: asyncio.AbstractEventLoop) -> None:
        self.hub, self.loop = hub, loop
        self.pubsub: Any = None
        self.reader: asyncio.Task[None] | None = None
        self.lock = asyncio.Lock()

    async def subscribe(self, group: str) -> None:
        async with self.lock:
            if self.pubsub is None:
                self.pubsub = subscriber_client().pubsub(ignore_subscribe_messages=True)
            await self.pubsub.subscribe(channel_of(group))  # answered: subscribed from here on
            if self.reader is None or self.reader.done():
                # Its own context: not the context of the socket that happened to subscribe first.
                self.reader = self.loop.create_task(self._read(self.pubsub), context=contextvars.Context())

    def unsubscribe_later(self, group: str) -> None:
        async def run() -> None:
            async with self.lock:
                if group not in self.hub.groups and self.pubsub is not None:
                    with contextlib.suppress(Exception):
                        await self.pubsub.unsubscribe(channel_of(group))

        task = self.loop.create_task(run())
        _pending.add(task)
        task.add_done_callback(_pending.discard)

    async def _read(self, pubsub: Any) -> None:
        try:
            while True:
                message = await pubsub.get_message(timeout=None)
                if message is None or message.get("type") != "message":
                    continue
                channel = message["channel"].decode()
                await self.hub.deliver(channel.removeprefix(channel_of("")), orjson.loads(message["data"]))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("the live events' Redis subscription broke; viewers reconnect", exc_info=True)
            async with self.lock:
                # (and no reader: a viewer who joins while the others are told starts a new one)
                self.pubsub, self.reader = None, None
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
            await self.hub.lost()


_pending: set[asyncio.Task[None]] = set()
hub = Hub()


Remember = tuple[str, bytes, int]  # (key, value, seconds to live): a Redis SET to make with a publish


async def publish(group: str, event: dict[str, Any], *, remember: Remember | None = None) -> None:
    """Hand an event to every socket watching the session, in every server process. A lost event
    never fails the caller: a turn's end redraws what its deltas drew, a snapshot the rest.
    remember: a key to set just before, in the same round trip to Redis (shared layer only)."""
    if not shared():
        await hub.deliver(group, event)
        return
    try:
        data = orjson.dumps(event)
        if remember is None:
            await redis_client().publish(channel_of(group), data)
            return
        key, value, ttl = remember
        async with redis_client().pipeline(transaction=False) as pipe:
            pipe.set(key, value, ex=ttl)
            pipe.publish(channel_of(group), data)
            await pipe.execute()
    except Exception:
        log.exception("publishing %s to %s failed", event.get("type"), group)


def publish_sync(group: str, event: dict[str, Any]) -> None:
    """publish() from synchronous code (a service, after its transaction committed). A lost
    notification never fails the write: viewers catch up at their next snapshot."""
    try:
        if shared():
            sync_redis_client().publish(channel_of(group), orjson.dumps(event))
        elif hub.groups.get(group):
            # One process: nobody watching means no hop to the event loop, for which async_to_sync
            # starts a thread and a loop (~1 ms of every append).
            async_to_sync(hub.deliver)(group, event)
    except Exception:
        log.exception("publishing %s to %s failed", event.get("type"), group)


# --- the Redis clients (the live state of streaming turns uses them too) ----------------------------


def _client_options(retry: type[Any]) -> dict[str, Any]:
    """A pooled connection from before a Redis restart fails on its first use: try again, on a
    new connection (three times, 50-500 ms apart). retry: redis-py's Retry class for the client
    (the asyncio one for an asyncio client)."""
    from redis.backoff import ExponentialBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    return {
        "socket_keepalive": True,
        "health_check_interval": 30,
        "retry": retry(ExponentialBackoff(cap=0.5, base=0.05), 3),
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
    }


SUBSCRIBER_NAME = "piweb-subscriber"
_async_clients: dict[tuple[int, str], tuple[asyncio.AbstractEventLoop, Any]] = {}
_subscriber_clients: dict[tuple[int, str], tuple[asyncio.AbstractEventLoop, Any]] = {}
_sync_clients: dict[str, Any] = {}


def _loop_client(
    clients: dict[tuple[int, str], tuple[asyncio.AbstractEventLoop, Any]], options: Callable[[], dict[str, Any]]
) -> Any:
    """This event loop's redis.asyncio client of `clients`, made with options() (a client belongs
    to the loop it was made on)."""
    import redis.asyncio as aioredis

    loop, url = asyncio.get_running_loop(), redis_url()
    entry = clients.get((id(loop), url))
    if entry is None or entry[0] is not loop:
        entry = (loop, aioredis.from_url(url, **options()))
        clients[(id(loop), url)] = entry
    return entry[1]


def redis_client() -> Any:
    """This event loop's redis.asyncio client."""
    return _loop_client(_async_clients, _async_options)


def subscriber_client() -> Any:
    """The client of this event loop's subscription: one that never retries. A subscription that
    redis-py reconnected by itself would have missed what was published meanwhile, unseen: broken,
    it must fail, so that its viewers reconnect to a fresh snapshot (Subscriber._read)."""
    return _loop_client(_subscriber_clients, _subscriber_options)


def _async_options() -> dict[str, Any]:
    from redis.asyncio.retry import Retry

    return _client_options(Retry)


def _subscriber_options() -> dict[str, Any]:
    """The other clients' options, with no retry on any error; named, so that an operator finds
    it in CLIENT LIST."""
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    no_retry = {"retry": Retry(NoBackoff(), 0, ()), "retry_on_error": []}
    return {**_client_options(Retry), **no_retry, "client_name": SUBSCRIBER_NAME}


def sync_redis_client() -> Any:
    import redis
    from redis.retry import Retry

    url = redis_url()
    if url not in _sync_clients:
        _sync_clients[url] = redis.Redis.from_url(url, **_client_options(Retry))
    return _sync_clients[url]
