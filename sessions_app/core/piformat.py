"""Reading pi session files (JSONL v1, v2, v3): parse, migrate as pi does, validate. Pure.

pi silently drops lines it cannot read; piweb reports every problem with its line number and, by
default, refuses the whole file (the caller decides). This module reads lines; core/intake.py
fits the entries it reads into a tree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from sessions_app.core import jsjson
from sessions_app.core.filesource import BLOCK, Source, as_source
from sessions_app.core.listing import storable
from sessions_app.core.tree import content_text, parse_timestamp_ms, row_text

CURRENT_VERSION = 3

# Widths of the columns ids, types, roles and timestamps are stored in (models.Entry, Session):
# PostgreSQL refuses longer values, so they are rejected here, with their line number.
MAX_ID_CHARS = 200
MAX_SHORT_CHARS = 64


@dataclass(frozen=True, slots=True)
class Limits:
    max_line_bytes: int = 16 * 1024 * 1024  # (parsing a line takes ~13 times its size: orjson)
    max_file_bytes: int = 2 * 1024 * 1024 * 1024
    max_depth: int = 512
    # What a file may store outside its entries (repeated header and entry lines), in bytes.
    max_extra_bytes: int = 1024 * 1024
    # v1/v2 files are migrated whole, in memory (v1 compactions point at lines by their index).
    max_legacy_bytes: int = 64 * 1024 * 1024
    # An import keeps ~0.7 KB per entry (its id, place and chain hash): this bounds that memory.
    max_entries: int = 400_000


@dataclass(frozen=True, slots=True)
class Problem:
    line: int  # 1-based physical line; 0 for the file as a whole
    message: str
    too_large: bool = False  # a part over a size limit (HTTP 413)

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "message": self.message}


class FileRefused(Exception):  # (not an error of the code: a verdict on the file)
    """A problem that refuses the whole file at once, partial import or not: reading on would only
    cost time (and storing it could not be done without losing bytes)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def too_long(number: int, size: int, limits: Limits, prefix: str = "") -> Problem:
    return Problem(number, f"{prefix}line is {size} bytes, over the limit of {limits.max_line_bytes}", True)


# --- per-type field rules -------------------------------------------------------------------

# A parsed JSON value's type is exactly one of dict, list, str, int, float, bool, NoneType, so
# rules compare type(value) with a tuple (bool is not a number here, as in JavaScript).
_Types = tuple[type, ...]
STRING: _Types = (str,)
NUMBER: _Types = (int, float)
BOOLEAN: _Types = (bool,)
OBJECT: _Types = (dict,)
CONTENT: _Types = (str, list)
ARRAY: _Types = (list,)
_KIND: dict[_Types, str] = {
    STRING: "a string",
    NUMBER: "a number",
    BOOLEAN: "true or false",
    OBJECT: "an object",
    CONTENT: "a string or an array",
    ARRAY: "an array",
}
_Rules = tuple[tuple[str, _Types, bool], ...]  # (field, types, required)

FIELDS: dict[str, _Rules] = {
    "message": (("message", OBJECT, True),),
    "thinking_level_change": (("thinkingLevel", STRING, True),),
    "model_change": (("provider", STRING, True), ("modelId", STRING, True)),
    "compaction": (
        ("summary", STRING, True),
        ("firstKeptEntryId", STRING, False),
        ("tokensBefore", NUMBER, True),
        ("fromHook", BOOLEAN, False),
    ),
    "branch_summary": (("fromId", STRING, True), ("summary", STRING, True), ("fromHook", BOOLEAN, False)),
    "custom": (("customType", STRING, True),),
    "custom_message": (("customType", STRING, True), ("content", CONTENT, True), ("display", BOOLEAN, True)),
    "label": (("targetId", STRING, True), ("label", STRING, False)),
    "session_info": (("name", STRING, False),),
}
MESSAGE_FIELDS: dict[str, _Rules] = {
    "user": (("content", CONTENT, True), ("timestamp", NUMBER, False)),
    "assistant": (("content", ARRAY, True), ("timestamp", NUMBER, False)),
    "toolResult": (("content", ARRAY, True), ("timestamp", NUMBER, False)),
}
_MISSING: Any = object()


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def _check_fields(obj: Mapping[str, Any], rules: _Rules, prefix: str) -> str | None:
    for name, types, required in rules:
        value = obj.get(name, _MISSING)
        if value is _MISSING:
            if required:
                return f"field '{prefix}{name}' is missing"
        elif type(value) not in types:
            return f"field '{prefix}{name}' must be {_KIND[types]}, not {_type_name(value)}"
    return None


def validate_entry(data: Mapping[str, Any], *, utf8_checked: bool = False) -> str | None:
    """Why this entry object is malformed, or None. Unknown types only need the base fields.

    utf8_checked: its strings are known to hold no unpaired surrogate (orjson refuses them)."""
    return _validated(data, utf8_checked)[0]


def _validated(data: Mapping[str, Any], utf8_checked: bool) -> tuple[str | None, int]:
    """(validate_entry's answer, the entry's timestamp in ms when it is valid)."""
    kind = data.get("type")
    if type(kind) is not str or not kind:
        return "field 'type' must be a non-empty string", 0
    entry_id = data.get("id")
    if type(entry_id) is not str or not entry_id:
        return "field 'id' must be a non-empty string", 0
    parent = data.get("parentId", _MISSING)
    if parent is _MISSING:
        return "field 'parentId' is missing", 0
    if parent is not None and type(parent) is not str:
        return f"field 'parentId' must be a string or null, not {_type_name(parent)}", 0
    if not utf8_checked:
        for name, value in (("type", kind), ("id", entry_id), ("parentId", parent)):
            if isinstance(value, str) and not well_formed(value):
                return f"field '{name}' holds an unpaired UTF-16 surrogate", 0
    timestamp = data.get("timestamp")
    ms = parse_timestamp_ms(timestamp)
    if ms is None:
        return "field 'timestamp' must be an ISO 8601 date-time string", 0
    if len(kind) > MAX_SHORT_CHARS:
        return f"field 'type' is longer than {MAX_SHORT_CHARS} characters", 0
    problem = id_problem("id", entry_id) or (id_problem("parentId", parent) if parent is not None else None)
    if problem is not None:
        return problem, 0
    if len(timestamp) > MAX_SHORT_CHARS:  # type: ignore[arg-type]  # parse_timestamp_ms took it: a str
        return f"field 'timestamp' is longer than {MAX_SHORT_CHARS} characters", 0
    if kind != "message":
        rules = FIELDS.get(kind)
        return (_check_fields(data, rules, "") if rules is not None else None), ms
    message = data.get("message")
    if type(message) is not dict:  # FIELDS["message"]'s one rule, checked first (most lines)
        return _check_fields(data, FIELDS["message"], ""), 0
    role = message.get("role")
    if type(role) is not str:
        return "field 'message.role' must be a string", 0
    if not utf8_checked and not well_formed(role):
        return "field 'message.role' holds an unpaired UTF-16 surrogate", 0
    if len(role) > MAX_SHORT_CHARS:
        return f"field 'message.role' is longer than {MAX_SHORT_CHARS} characters", 0
    role_rules = MESSAGE_FIELDS.get(role)
    return (_check_fields(message, role_rules, "message.") if role_rules else None), ms


def id_problem(field: str, value: str) -> str | None:
    """Why an entry id (`field`: id, parentId, targetId...) cannot be stored, or None: longer than
    its column, or holding a NUL, valid JSON ("\\u0000") that no PostgreSQL text column stores.
    (Unpaired surrogates: well_formed.)"""
    if len(value) > MAX_ID_CHARS:
        return f"field '{field}' is longer than {MAX_ID_CHARS} characters"
    if "\0" in value:
        return f"field '{field}' holds a NUL character, which no database stores in an id"
    return None


def well_formed(text: str) -> bool:
    """False if text holds an unpaired UTF-16 surrogate: valid JSON ("\\ud800"), but no
    database column can store it, so it must not reach one that is a key."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# --- migrations (pi's migrateSessionEntries) ------------------------------------------------


def migration_id(session_id: str, ordinal: int, taken: set[str]) -> str:
    """A v1 entry's new id. pi draws random ones; deterministic ones make re-imports idempotent."""
    attempt = 0
    while True:
        digest = hashlib.sha256(f"{session_id}:{ordinal}:{attempt}".encode()).hexdigest()[:8]
        if digest not in taken:
            taken.add(digest)
            return digest
        attempt += 1


def migrate(objects: list[dict[str, Any]], version: int, session_id: str) -> None:
    """Bring parsed lines (header first, file order) to v3 in place, key order as pi leaves it."""
    if version < 2:
        taken: set[str] = set()
        previous: str | None = None
        for ordinal, obj in enumerate(objects):
            if obj.get("type") == "session":
                obj["version"] = 2
                continue
            obj["id"] = migration_id(session_id, ordinal, taken)
            obj["parentId"] = previous
            previous = obj["id"]
            if obj.get("type") == "compaction":
                # pi: only a number is looked up (and then deleted); a later line has no id yet,
                # so a forward index leaves the compaction without firstKeptEntryId.
                index = obj.get("firstKeptEntryIndex")
                if isinstance(index, int | float) and not isinstance(index, bool):
                    i = int(index) if index == int(index) else -1
                    if 0 <= i < len(objects) and objects[i].get("type") != "session":
                        target = objects[i].get("id")
                        if target is not None:
                            obj["firstKeptEntryId"] = target
                    obj.pop("firstKeptEntryIndex", None)
    if version < 3:
        for obj in objects:
            if obj.get("type") == "session":
                obj["version"] = 3
            elif obj.get("type") == "message":
                message = obj.get("message")
                if isinstance(message, dict) and message.get("role") == "hookMessage":
                    message["role"] = "custom"


# --- the header, one line, slim objects ------------------------------------------------------


def _shallow_bytes(max_depth: int) -> int:
    """The longest JSON text that cannot nest deeper than max_depth: each level takes an opening
    and a closing bracket."""
    return 2 * max_depth + 1


def _too_deep(value: Any, data: bytes, start: int, end: int, max_depth: int) -> bool:
    """True if value, parsed from data[start:end], nests deeper than max_depth. Only a text longer
    than _shallow_bytes with more opening brackets than max_depth (those in strings counted too:
    a bound) is walked."""
    return (
        end - start > _shallow_bytes(max_depth)
        and data.count(b"{", start, end) + data.count(b"[", start, end) > max_depth
        and jsjson.depth_exceeds(value, max_depth)
    )


def _parse_line(chunk: bytes, number: int, limits: Limits) -> tuple[Any, Problem | None]:
    """The object on one line, or the problem with it; a blank line gives (None, None).

    Nothing is decoded here: orjson checks UTF-8 on the bytes itself, and stored lines are
    decoded once, when they are written."""
    if len(chunk) > limits.max_line_bytes:
        return None, too_long(number, len(chunk), limits)
    if not chunk.strip():
        return None, None
    try:
        value = jsjson.loads(chunk)
    except jsjson.JSONDepthError:
        return None, Problem(number, f"JSON nests deeper than {limits.max_depth} levels")
    except ValueError as exc:
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError as bad:
            return None, Problem(number, f"not valid UTF-8 (byte {bad.start})")
        return None, Problem(number, f"invalid JSON: {exc}")
    if _too_deep(value, chunk, 0, len(chunk), limits.max_depth):
        return None, Problem(number, f"JSON nests deeper than {limits.max_depth} levels")
    if not isinstance(value, dict):
        return None, Problem(number, f"expected a JSON object, got {_type_name(value)}")
    return value, None


def _lines(data: bytes, start: int = 0, number: int = 0) -> Iterator[tuple[int, int, int]]:
    """(1-based number, start, end) of each line from offset start (after line number), without
    building a list of them all."""
    size = len(data)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        number += 1
        yield number, start, end
        start = end + 1


_SLIM_MESSAGE_KEYS = ("role", "provider", "model", "timestamp")


def slim(data: dict[str, Any]) -> dict[str, Any]:
    """The fields storing an entry needs (tree, path state, listing), without bulky content."""
    kind = data.get("type")
    if kind == "message":
        message = data["message"]
        kept = {k: message[k] for k in _SLIM_MESSAGE_KEYS if k in message}
        if message.get("role") == "user":
            kept["content"] = content_text(message.get("content"), " ")  # what the listing reads
        return {"type": kind, "id": data["id"], "parentId": data["parentId"], "timestamp": data["timestamp"],
                "message": kept}  # fmt: skip
    drop = {"custom": ("data",), "custom_message": ("content", "details")}.get(str(kind), ("details",))
    return {k: v for k, v in data.items() if k not in drop}


@dataclass(frozen=True, slots=True)
class Header:
    obj: dict[str, Any]
    raw: str  # the line's exact text
    number: int  # its 1-based line number (blank lines may come first)
    end: int  # offset just past the line and its newline
    version: int


def read_header(data: bytes | Source, limits: Limits) -> tuple[Header | None, Problem | None]:
    """The session header (the first non-blank line), or the problem that makes the file unusable.
    A line is never read past the line limit."""
    source = as_source(data)
    number = start = 0
    while start < source.size:
        end = line_end(source, start, limits.max_line_bytes)
        number += 1
        if end - start > limits.max_line_bytes:
            return None, too_long(number, end - start, limits, "broken header: ")
        chunk = source.block(start, end)
        value, problem = _parse_line(chunk, number, limits)
        if problem is not None:
            return None, Problem(problem.line, f"broken header: {problem.message}")
        if value is not None:
            problem = _header_problem(value, number)
            if problem is not None:
                return None, problem
            version = int(value.get("version", 1))
            if version > CURRENT_VERSION:
                return None, Problem(number, f"unsupported session format version {version}")
            return Header(value, chunk.decode(), number, end + 1, version), None
        start = end + 1
    return None, Problem(0, "the file is empty: no session header")


def line_end(source: Source, start: int, limit: int) -> int:
    """Where the line from start ends (its newline, or the file's end). Past limit bytes it is
    only known to be longer: the offset returned is then start + limit + 1, or more, found
    a block at a time, releasing what was read, so that a 2 GB line is never held."""
    end = source.find(b"\n", start, min(source.size, start + limit + 1))
    if end >= 0:
        return end
    if start + limit + 1 >= source.size:
        return source.size
    at = start + limit + 1
    while at < source.size:
        end = source.find(b"\n", at, min(source.size, at + BLOCK))
        source.read(min(source.size, at + BLOCK) - at)
        if end >= 0:
            return end
        at += BLOCK
    return source.size


def _header_problem(header: dict[str, Any], number: int) -> Problem | None:
    if header.get("type") != "session" or not isinstance(header.get("id"), str) or not header["id"]:
        return Problem(number, 'missing session header: the first line must be {"type":"session","id":...}')
    unstorable = [k for k in ("id", "cwd", "timestamp") if isinstance(v := header.get(k), str) and not well_formed(v)]
    if unstorable:
        return Problem(number, f"field '{unstorable[0]}' holds an unpaired UTF-16 surrogate")
    if "/" in header["id"] or header["id"] in (".", "..") or not header["id"].isprintable():
        # The id names the session in URLs (a path segment: not one a browser resolves away);
        # pi's own ids are UUIDs.
        return Problem(number, "field 'id' must not be '.' or '..', nor contain '/' or control characters")
    for key, limit in (("id", MAX_ID_CHARS), ("timestamp", MAX_SHORT_CHARS)):
        if len(str(header.get(key, ""))) > limit:  # str(): as Session.created stores it
            return Problem(number, f"field '{key}' is longer than {limit} characters")
    version = header.get("version", 1)
    if type(version) not in NUMBER or version != int(version) or version < 1:
        return Problem(number, f"field 'version' must be 1, 2 or 3, not {version!r}")
    return None


# --- reading a file, line by line ------------------------------------------------------------


class Line(NamedTuple):
    """A valid entry line: its object, and where its exact text is. (A named tuple: one is made
    per line read, with tuple.__new__ on the hot path.)"""

    line: int  # 1-based physical line number
    # Holds the line's exact UTF-8 text at [start:end]: the block of the file it was read in, or a
    # migrated or appended line. Empty once an intake holds the line for later (its text is then
    # read again from the file, at offset).
    source: bytes
    start: int
    end: int
    data: dict[str, Any]
    preview: str  # tree.row_text of the whole entry, storable
    ts_ms: int  # the entry's timestamp (Date.parse)
    offset: int = -1  # where the line starts in the file; -1: not a line of the file as it is

    @property
    def raw(self) -> str:
        # Decoded on demand: 100k lines held as str would take 2-4 bytes a character.
        return self.source[self.start : self.end].decode()

    @property
    def id(self) -> str:
        return self.data["id"]  # type: ignore[no-any-return]

    @property
    def parent_id(self) -> str | None:
        return self.data["parentId"]  # type: ignore[no-any-return]

    @property
    def type(self) -> str:
        return self.data["type"]  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class Extra:
    """A line that is not an entry of its own but stays in the file (a repeated session header,
    which pi's lazy flush writes): kept for a byte-identical export."""

    line: int
    raw: str


Item = Line | Extra | Problem


def entry_line(source: bytes, start: int, end: int, data: dict[str, Any], *, number: int = 0) -> Line | Problem:
    """A Line for an entry object whose exact text is source[start:end], or why it is invalid."""
    problem, ts_ms = _validated(data, False)
    if problem is not None:
        return Problem(number, problem)
    return Line(number, source, start, end, data, storable(row_text(data)), ts_ms, -1)


def migrated_header(header: Header) -> dict[str, Any]:
    """The header as migrate() leaves it (a v3 header is as it was)."""
    if header.version == CURRENT_VERSION:
        return header.obj
    obj = dict(header.obj)
    obj["version"] = CURRENT_VERSION  # a v1 header gets the key at its end, as migrate() adds it
    return obj


PROGRESS_EVERY = 1 << 20  # bytes
_new = tuple.__new__


def read_entries(
    data: bytes | Source,
    header: Header,
    limits: Limits,
    *,
    progress: Callable[[int], None] | None = None,
    last_line: Callable[[int], None] | None = None,
) -> Iterator[Item]:
    """Every line after the header, in file order: a valid entry, an extra line, or a problem.

    v3 files are read a block of whole lines at a time (filesource.BLOCK; a longer line is read
    alone, one over the line limit not at all); older ones are migrated as pi does, which needs
    every line at once (v1 compactions point at lines by their index), up to max_legacy_bytes.
    progress gets the bytes read; last_line, once all are read, the number of the last line (the
    header's when none follows it; numbers go on from header.number)."""
    source = as_source(data)
    if header.version < CURRENT_VERSION:
        number = yield from _migrated(source, header, limits, progress)
        if last_line is not None:
            last_line(number)
        return
    start, number, size = header.end, header.number, source.size
    while start < size:
        stop = min(size, start + BLOCK)
        if stop < size:
            last = source.buffer.rfind(b"\n", start, stop)
            if last < 0:  # a line longer than a block
                end = line_end(source, start, limits.max_line_bytes)
                if end - start > limits.max_line_bytes:
                    number += 1
                    yield too_long(number, end - start, limits)
                    if progress is not None:
                        progress(min(size, end + 1) - start)
                    start = end + 1
                    continue
                last = end
            stop = min(size, last + 1)
        number = yield from _read_block(*source.window(start, stop), number, limits, progress)
        source.read(stop - start)
        start = stop
    if last_line is not None:
        last_line(number)


def _read_block(
    data: bytes,
    begin: int,
    size: int,
    base: int,
    number: int,
    limits: Limits,
    progress: Callable[[int], None] | None,
) -> Generator[Item, None, int]:
    """The whole lines of data[begin:size] (data[0] is at offset base of the file); returns the
    number of the last one."""
    view = memoryview(data)
    reported = start = begin
    max_line, max_depth = limits.max_line_bytes, limits.max_depth
    shallow = _shallow_bytes(max_depth)  # (lines this short skip the call)
    while start < size:  # (the lines found here, not by a helper: this loop is the import's hot path)
        end = data.find(b"\n", start, size)
        if end < 0:
            end = size
        number += 1
        # The common line, read here: an object orjson parses, of a valid entry. Anything else
        # (a problem to name, a blank or repeated header line) goes through _read_line.
        value = None
        if end - start <= max_line and data[start] == 123:  # "{"
            try:  # noqa: SIM105  (a context manager per line costs more than the try)
                value = orjson.loads(view[start:end])  # in place: no copy of the line
            except orjson.JSONDecodeError:
                pass
        if (
            type(value) is dict
            and (end - start <= shallow or not _too_deep(value, data, start, end, max_depth))
            and value.get("type") != "session"
            and (checked := _validated(value, True))[0] is None
        ):
            yield _new(Line, (number, data, start, end, value, row_text(value), checked[1], base + start))
        else:
            item = _read_line(data, view, number, start, end, limits, base)
            if item is not None:
                yield item
        start = end + 1
        if progress is not None and start - reported >= PROGRESS_EVERY:
            progress(min(start, size) - reported)
            reported = start
    if progress is not None and min(start, size) > reported:
        progress(min(start, size) - reported)
    view.release()
    return number


def _read_line(
    data: bytes, view: memoryview, number: int, start: int, end: int, limits: Limits, base: int = -1
) -> Item | None:
    """One line after the header: None if it is blank. base: the file offset of data (-1: none)."""
    if end - start > limits.max_line_bytes:
        return too_long(number, end - start, limits)
    strict = False  # parsed by orjson, which refuses unpaired surrogates
    if data[start : start + 1] == b"{":
        try:
            value = orjson.loads(view[start:end])  # read in place: no copy of the line
            strict = True
        except orjson.JSONDecodeError:
            pass
    if not strict:
        value, problem = _parse_line(data[start:end], number, limits)
        if problem is not None:
            return problem
        if value is None:
            return None
    elif _too_deep(value, data, start, end, limits.max_depth):
        return Problem(number, f"JSON nests deeper than {limits.max_depth} levels")
    elif type(value) is not dict:
        return Problem(number, f"expected a JSON object, got {_type_name(value)}")
    if value.get("type") == "session":
        return Extra(number, data[start:end].decode())
    problem_text, ts_ms = _validated(value, strict)
    if problem_text is not None:
        return Problem(number, problem_text)
    preview = row_text(value)
    offset = base + start if base >= 0 else -1
    return Line(number, data, start, end, value, preview if strict else storable(preview), ts_ms, offset)


def _migrated(
    source: Source, header: Header, limits: Limits, progress: Callable[[int], None] | None
) -> Generator[Item, None, int]:
    if source.size - header.end > limits.max_legacy_bytes:
        raise FileRefused(
            Problem(
                0,
                f"a version {header.version} file is migrated whole, in memory: it may hold at most"
                f" {limits.max_legacy_bytes} bytes of entries, and this one holds {source.size - header.end}",
                True,
            )
        )
    data = source.block(0, source.size)
    parsed: list[tuple[int, dict[str, Any]]] = []
    pending, number = 0, header.number
    for number, start, end in _lines(data, header.end, header.number):
        value, problem = (None, too_long(number, end - start, limits)) if end - start > limits.max_line_bytes else (
            _parse_line(data[start:end], number, limits))  # fmt: skip
        if problem is not None:
            yield problem
        elif value is not None:
            parsed.append((number, value))
        pending += end - start + 1
        if progress is not None and pending >= PROGRESS_EVERY:
            progress(pending)
            pending = 0
    if progress is not None and pending:
        progress(pending)
    del data
    migrate([dict(header.obj), *(obj for _, obj in parsed)], header.version, header.obj["id"])
    for line, obj in parsed:
        text = jsjson.dumps(obj).encode()
        if obj.get("type") == "session":
            yield Extra(line, text.decode())
            continue
        yield entry_line(text, 0, len(text), obj, number=line)
    return number
