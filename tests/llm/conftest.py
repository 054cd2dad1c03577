from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llm.server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer().start()
    yield srv
    srv.stop()
