"""publish_sync skips the cross-thread hop when nobody in this process watches the session."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.layers import channel_layers, get_channel_layer

from sessions_app import events

pytestmark = pytest.mark.django_db
EVENT: events.ChangedEvent = {"type": "session.changed", "session": "x", "seq": 1, "leaf_id": None, "reason": "test"}


@pytest.fixture
def in_memory_layer(settings):
    channel_layers.backends.clear()
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    yield get_channel_layer()
    channel_layers.backends.clear()


def test_no_viewer_no_hop(in_memory_layer, monkeypatch):
    hops: list[object] = []

    def hop(fn: object) -> object:
        hops.append(fn)
        return lambda *args: None

    monkeypatch.setattr(events, "async_to_sync", hop)
    events.publish_sync(424242, EVENT)
    assert hops == []


def test_a_viewer_gets_the_event(in_memory_layer):
    channel = async_to_sync(in_memory_layer.new_channel)()
    async_to_sync(in_memory_layer.group_add)(events.group_name(424242), channel)
    events.publish_sync(424242, EVENT)
    message = async_to_sync(in_memory_layer.receive)(channel)
    assert message["type"] == "session.changed" and message["reason"] == "test"
