"""Entry ids in URLs and in the DOM: the one place each is made.

pi draws 8 hex digits, but an imported file (or POST /entries) may bring any non-empty string up
to piformat.MAX_ID_CHARS: '/', '?', '#', '%', spaces, quotes, '<>', unicode. Query strings and
attribute values take such an id as it is (urlencode, the templates' escaping); a URL path segment
and an element id cannot, so they are made here:

- url_segment / segment_id: the id as one path segment (web/converters.py's `<entry_id:...>`);
- dom_id: the id as an element id (the templates' `dom_id` filter).
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

_PLAIN = re.compile(r"[A-Za-z0-9-]+")  # kept as they are in an element id: pi's own ids are
_ESCAPED = re.compile(r"[^A-Za-z0-9-]")


def url_segment(entry_id: str) -> str:
    """The id as one URL path segment: percent-encoded whole ('/' included), dots too, so that no
    id is a '.' or '..' segment a browser resolves away. segment_id(url_segment(x)) == x.

    Django's reverse() quotes the '%' again (the URL holds '%252F'); the server decodes the path
    once, and the converter hands this back to segment_id."""
    return quote(entry_id, safe="").replace(".", "%2E")


def segment_id(segment: str) -> str:
    """The entry id a path segment names (url_segment's inverse; a plain id names itself)."""
    return unquote(segment)


def dom_id(entry_id: str, prefix: str) -> str:
    """An element id for the entry: `<prefix>-<id>` for ids of letters, digits and '-' (pi's),
    otherwise with every other character written `_<hex code point>_`. Distinct ids get distinct
    element ids, which need no escaping in a CSS selector, a URL fragment or an HTML attribute."""
    if _PLAIN.fullmatch(entry_id):
        return f"{prefix}-{entry_id}"
    return f"{prefix}-" + _ESCAPED.sub(lambda m: f"_{ord(m.group()):x}_", entry_id)
