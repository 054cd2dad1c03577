"""Path converters: `<entry_id:entry_id>` takes an entry id of any shape as one path segment."""

from __future__ import annotations

from django.urls import register_converter

from sessions_app.core import entryids

ENTRY_ID = "entry_id"


class EntryIdConverter:
    """core/entryids.url_segment when reversing, its inverse when resolving."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return entryids.segment_id(value)

    def to_url(self, value: str) -> str:
        return entryids.url_segment(value)


register_converter(EntryIdConverter, ENTRY_ID)
