"""A cache backend for tests that need to see what code writes to the cache, set with the settings
fixture (``settings.CACHES = RecordingCache.CACHES``) instead of patching the code that writes."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.locmem import LocMemCache


class RecordingCache(LocMemCache):
    """Local memory that also keeps a copy of every value set, in order (clear `writes` first)."""

    CACHES: ClassVar[dict[str, dict[str, str]]] = {"default": {"BACKEND": "tests.caches.RecordingCache"}}
    writes: ClassVar[list[tuple[str, Any]]] = []

    def set(self, key: str, value: Any, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None) -> None:
        self.writes.append((key, copy.deepcopy(value)))
        super().set(key, value, timeout, version)
