"""fanout: a session's events reach each process's hub once, in order, and its sockets from there."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis
from channels.layers import channel_layers, get_channel_layer

from sessions_app import events, fanout

pytestmark = pytest.mark.django_db
EVENT: events.ChangedEvent = {"type": "session.changed", "session": "x", "seq": 1, "leaf_id": None, "reason": "test"}
REDIS = "redis://127.0.0.1:6379/9"


class Viewer:
    def __init__(self) -> None:
        self.got: list[Any] = []
        self.lost = 0

    async def hub_deliver(self, event: Any) -> None:
        self.got.append(event)

    async def hub_lost(self) -> None:
        self.lost += 1


@pytest.fixture
def in_memory_layer(settings):
    channel_layers.backends.clear()
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    yield get_channel_layer()
    channel_layers.backends.clear()


@pytest.fixture
def redis_layer(settings):
    channel_layers.backends.clear()
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS]}}
    }
    yield get_channel_layer()
    channel_layers.backends.clear()


def test_no_viewer_no_hop(in_memory_layer, monkeypatch):
    hops: list[object] = []

    def hop(fn: object) -> object:
        hops.append(fn)
        return lambda *args: None

    monkeypatch.setattr(fanout, "async_to_sync", hop)
    events.publish_sync(424242, EVENT)
    assert hops == []


def test_a_viewer_in_this_process_gets_the_event(in_memory_layer):
    viewer = Viewer()

    async def scenario() -> None:
        await fanout.hub.join(events.group_name(424242), viewer)
        await asyncio.to_thread(events.publish_sync, 424242, EVENT)  # a service's thread, after commit
        fanout.hub.leave(events.group_name(424242), viewer)

    asyncio.run(scenario())
    assert [e["reason"] for e in viewer.got] == ["test"]


def test_with_redis_each_process_gets_each_event_once_and_in_order(redis_layer):
    """Two hubs stand for two server processes, with several viewers each: one subscription per
    hub, every viewer gets every event, in the order published, whoever published it."""
    group = events.group_name(777)

    async def scenario() -> tuple[list[Viewer], list[int]]:
        hubs = [fanout.Hub(), fanout.Hub()]
        viewers = [Viewer() for _ in range(6)]
        for i, viewer in enumerate(viewers):
            await hubs[i % 2].join(group, viewer)
        subscribed = [len(h.subscriber.pubsub.channels) if h.subscriber else 0 for h in hubs]
        for n in range(50):
            if n % 10 == 9:
                await asyncio.to_thread(fanout.publish_sync, group, {"type": "session.delta", "index": n})
            else:
                await fanout.publish(group, {"type": "session.delta", "index": n})
        for _ in range(100):
            if all(len(v.got) == 50 for v in viewers):
                break
            await asyncio.sleep(0.02)
        for i, viewer in enumerate(viewers):
            hubs[i % 2].leave(group, viewer)
        await asyncio.sleep(0.05)  # the unsubscribes go out
        return viewers, subscribed

    viewers, subscribed = asyncio.run(scenario())
    assert subscribed == [1, 1]
    for viewer in viewers:
        assert [e["index"] for e in viewer.got] == list(range(50))


def test_instances_on_other_redis_databases_never_see_each_others_events(redis_layer, settings):
    """Pub/sub channels ignore Redis's database number: an instance on database 10 publishing for
    the same session pk reaches nobody on database 9."""
    group = events.group_name(778)

    def use(url: str) -> None:
        settings.CHANNEL_LAYERS = {"default": {**settings.CHANNEL_LAYERS["default"], "CONFIG": {"hosts": [url]}}}

    async def scenario() -> list[Any]:
        hub, viewer = fanout.Hub(), Viewer()
        await hub.join(group, viewer)  # on database 9
        use("redis://127.0.0.1:6379/10")
        await fanout.publish(group, {"type": "session.delta", "index": 1})
        await asyncio.to_thread(fanout.publish_sync, group, {"type": "session.delta", "index": 2})
        use(REDIS)
        await fanout.publish(group, {"type": "session.delta", "index": 3})
        for _ in range(100):
            if viewer.got:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)  # anything else would have arrived by now
        hub.leave(group, viewer)
        return [e["index"] for e in viewer.got]

    assert asyncio.run(scenario()) == [3]


def test_a_broken_subscription_makes_the_viewers_reconnect(redis_layer):
    group = events.group_name(778)

    async def scenario() -> Viewer:
        hub = fanout.Hub()
        viewer = Viewer()
        await hub.join(group, viewer)
        assert hub.subscriber is not None
        # The server drops it (as a restart would): redis-py must not resubscribe by itself, or
        # what was published meanwhile is missed unseen.
        killer = redis.Redis.from_url(REDIS)
        ids = [c["id"] for c in killer.client_list() if c["name"] == fanout.SUBSCRIBER_NAME]
        assert ids
        for client_id in ids:
            killer.client_kill_filter(_id=client_id)
        for _ in range(100):
            if viewer.lost:
                break
            await asyncio.sleep(0.02)
        hub.leave(group, viewer)
        return viewer

    assert asyncio.run(scenario()).lost == 1
