"""The Redis channel layer as settings build it from PIWEB_REDIS_URL.

redis-py 8 gives every connection a 5 s socket timeout by default, and channels-redis's receive
blocks on the server (BZPOPMIN) for 5 s too: the two race, and a consumer waiting for messages
dies with "Timeout reading from ..." (django/channels_redis#422; seen here as websockets closed
with 1011). The client must wait longer than the server-side block."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import json
import django
django.setup()
from django.conf import settings
from channels.layers import get_channel_layer
from channels_redis.utils import create_pool
layer = get_channel_layer()
pool = create_pool(layer.hosts[0])
print(json.dumps({"block": layer.brpop_timeout, "socket": pool.connection_kwargs.get("socket_timeout"),
                  "url": pool.connection_kwargs.get("host")}))
"""


def test_the_redis_layer_reads_longer_than_its_blocking_receive_waits():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIWEB_")}
    env.update(DJANGO_SETTINGS_MODULE="piweb.settings", PIWEB_REDIS_URL="redis://127.0.0.1:6379/9")
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    assert probe["url"] == "127.0.0.1"
    assert probe["socket"] is not None  # a dead connection is still noticed
    assert probe["socket"] > probe["block"] + 5
