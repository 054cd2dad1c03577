"""SessionConsumer: one websocket per open session page. Push-only and thin (STYLE 3.6).

connect: authenticate and check access (session_get_for_user), join the session's group, accept,
then send the snapshot: the chat log for the leaf path, the live state (seq, leaf), every reply still
streaming with the text so far, and who is viewing. Events that queued up meanwhile and are already
in the snapshot are dropped: entries at or below the snapshot's seq, deltas at or below each turn's
index in the snapshot (the runner's live state, streaming.live_get, else the row). After that it
only forwards events as htmx out-of-band fragments (chat_frames); streamed output and presence
arrive already rendered, so forwarding them is one socket write.

Session events reach it through this process's hub (fanout.py -> :meth:`SessionConsumer.hub_deliver`),
one delivery per process whatever the number of sockets; a consumer joins the hub before reading its
snapshot and buffers what it is handed until the snapshot has gone out. Only the notice that a
user lost access comes through the channel layer (the user's group). Commands never come through
here: they are CSRF-protected POSTs (chat_views).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from autobahn.exception import Disconnected  # (daphne's websocket library)
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.contrib.auth.models import User

from sessions_app import events, fanout
from sessions_app.access import permissions, revoke
from sessions_app.errors import SessionsError
from sessions_app.live import presence, streaming
from sessions_app.models import VISIBLE, Session
from sessions_app.render import frames
from sessions_app.store import selectors


class SessionConsumer(revoke.AccessRecheck, AsyncWebsocketConsumer):  # type: ignore[misc]
    session_pk: int = 0
    group: str = ""
    user_group: str = ""
    in_hub: bool = False
    ready: bool = False  # the snapshot went out: hub events are forwarded, not buffered
    LOST = 4000  # close code when this process may have missed events: the page reconnects

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close()
            return
        try:
            session = await database_sync_to_async(selectors.session_get_for_user)(
                user=user, public_id=self.scope["url_route"]["kwargs"]["public_id"]
            )
        except SessionsError:  # SessionNotFound, or SessionForbidden for a read-less role
            await self.close()
            return
        self.session_pk = session.pk
        self.public_id = session.public_id
        self.group = events.group_name(session.pk)
        # Join before reading the snapshot: whatever happens after the read arrives as an event.
        self.turn_index: dict[str, int] = {}
        self.snapshot_seq = session.last_seq
        self.pending: list[Any] = []
        await fanout.hub.join(self.group, self)
        self.in_hub = True
        # Access taken away (member removed, user deactivated) arrives on the user's group.
        self.user_group = revoke.user_group(user.pk)
        await self.channel_layer.group_add(self.user_group, self.channel_name)
        await self.accept()
        session, turns, viewers = await database_sync_to_async(self._snapshot)(user)
        self.snapshot_seq = session.last_seq
        # The runner's live state is at least as new as the last delta published (the row lags).
        live = await streaming.live_get([str(t.public_id) for t in turns])
        for t in turns:
            index, partial = live.get(str(t.public_id), (-1, None))
            if index > t.last_index:
                t.last_index, t.partial = index, partial
        self.turn_index = {str(t.public_id): t.last_index for t in turns}
        await self.send(
            text_data=await database_sync_to_async(frames.snapshot)(session=session, turns=turns, viewers=viewers)
        )
        while self.pending:  # handed over by the hub while the snapshot was being built
            await self._forward(self.pending.pop(0))
        self.ready = True
        await events.publish_now(session.pk, self._presence_event(session.public_id, viewers))
        streaming.ensure_janitor()

    async def hub_deliver(self, event: Any) -> None:
        if self.ready:
            await self._forward(event)
        else:
            self.pending.append(event)

    async def hub_lost(self) -> None:
        await self.close(self.LOST)

    async def _forward(self, event: Any) -> None:
        handler = self.HANDLERS.get(event.get("type"))
        if handler is None:
            return
        try:
            await handler(self, event)
        except Disconnected:  # the client left; until its disconnect is handled the hub still holds it
            self._leave_hub()

    def _leave_hub(self) -> None:
        if self.in_hub:
            fanout.hub.leave(self.group, self)
            self.in_hub = False

    async def close(self, code: int | bool | None = None, reason: str | None = None) -> None:
        self._leave_hub()  # nothing more reaches a socket being closed (access taken away, deleted)
        await super().close(code, reason)

    def _snapshot(self, user: User) -> tuple[Session, list[Any], list[str]]:
        session = Session.objects.get(pk=self.session_pk)
        streaming.recover_stale_turns(session=session)
        session.refresh_from_db()
        turns = streaming.active_turns(session)
        viewers = presence.join(session=session, user=user, channel_name=self.channel_name)
        return session, turns, viewers

    @staticmethod
    def _presence_event(public_id: str, viewers: list[str]) -> events.PresenceEvent:
        return {
            "type": "session.presence",
            "session": public_id,
            "viewers": viewers,
            "html": frames.presence(viewers),
        }

    async def disconnect(self, code: int) -> None:
        self._leave_hub()
        if not self.session_pk:
            return
        await self.channel_layer.group_discard(self.user_group, self.channel_name)
        viewers = await database_sync_to_async(presence.leave)(
            session_pk=self.session_pk, channel_name=self.channel_name
        )
        await events.publish_now(self.session_pk, self._presence_event(self.public_id, viewers))

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Push-only: htmx's ws extension may send form data; commands go through POST instead."""

    def _since(self) -> int | None:
        values = parse_qs(self.scope.get("query_string", b"").decode()).get("seq")
        return int(values[0]) if values and values[0].isdigit() else None

    async def _session(self) -> Session | None:
        return await Session.objects.filter(VISIBLE, pk=self.session_pk).afirst()

    # --- events ---------------------------------------------------------------------------------

    async def session_entry(self, event: events.EntryEvent) -> None:
        if event["seq"] <= self.snapshot_seq:
            return
        needs_log = event["leaf_id"] == event["entry_id"] and event["parent_id"] != event["prev_leaf_id"]
        session = await self._session() if needs_log else None
        html = await database_sync_to_async(frames.entry)(event, session) if needs_log else frames.entry(event)
        await self.send(text_data=html)

    async def session_leaf(self, event: events.LeafEvent) -> None:
        session = await self._session()
        await self.send(text_data=await database_sync_to_async(frames.leaf)(event, session))

    async def session_changed(self, event: events.ChangedEvent) -> None:
        if event["reason"] == "deleted":
            await self.send(text_data=frames.deleted())
            await self.close()
            return
        session = await self._session()
        await self.send(text_data=await database_sync_to_async(frames.leaf)(event, session))

    async def session_turn_start(self, event: events.TurnStartEvent) -> None:
        if event["turn"] in self.turn_index:
            return
        self.turn_index[event["turn"]] = 0
        await self.send(text_data=event["html"])

    async def session_delta(self, event: events.DeltaEvent) -> None:
        seen = self.turn_index.get(event["turn"])
        if seen is not None and event["index"] <= seen:
            return
        self.turn_index[event["turn"]] = event["index"]
        await self.send(text_data=event["html"])

    async def session_stream_end(self, event: events.StreamEndEvent) -> None:
        self.turn_index.pop(event["turn"], None)
        await self.send(text_data=frames.stream_end(event))

    async def session_presence(self, event: events.PresenceEvent) -> None:
        await self.send(text_data=event.get("html") or frames.presence(event["viewers"]))

    async def session_review(self, event: events.ReviewEvent) -> None:
        await self.send(text_data=await database_sync_to_async(self._review_frame)(event["entry_id"]))

    def _review_frame(self, entry_id: str) -> str:
        session = Session.objects.get(pk=self.session_pk)
        can: dict[str, bool] = dict.fromkeys(permissions.session_capabilities(self.scope["user"], session), True)
        return frames.review(session, entry_id, can)

    HANDLERS: dict[str, Any] = {
        "session.review": session_review,
        "session.entry": session_entry,
        "session.leaf": session_leaf,
        "session.changed": session_changed,
        "session.turn_start": session_turn_start,
        "session.delta": session_delta,
        "session.stream_end": session_stream_end,
        "session.presence": session_presence,
        "access.recheck": revoke.AccessRecheck.access_recheck,
    }


class InboxConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]
    """/ws/inbox/: one per signed-in page, push-only. Sends the user's inbox badge (and, from the
    queue page, ?queue=1[&session=<id>], its section counts) on connect and again whenever a review
    request for them is made or done (events.inbox_changed_on_commit). The event names no data:
    each socket counts only what its own user may see, so nothing leaks between users."""

    group: str = ""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close()
            return
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        self.queue = query.get("queue") == ["1"]
        self.session_filter = (query.get("session") or [""])[0][:200] or None
        self.group = events.inbox_group(user.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        # Deactivation or sign-out anywhere (revoke.user_group) closes this socket too.
        await self.channel_layer.group_add(revoke.user_group(user.pk), self.channel_name)
        await self.accept()
        await self.inbox_changed({})

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await self.channel_layer.group_discard(revoke.user_group(self.scope["user"].pk), self.channel_name)

    async def access_recheck(self, event: dict[str, Any]) -> None:
        if not await database_sync_to_async(_still_active)(self.scope["user"].pk):
            await self.close()

    async def inbox_changed(self, event: dict[str, Any]) -> None:
        user = self.scope["user"]
        if not await database_sync_to_async(_still_active)(user.pk):
            await self.close()
            return
        html = await database_sync_to_async(frames.inbox)(user, queue=self.queue, session=self.session_filter)
        await self.send(text_data=html)


def _still_active(user_id: int) -> bool:
    return User.objects.filter(pk=user_id, is_active=True).exists()
