"""Reading pi session files (JSONL v1, v2, v3): parse, migrate as pi does, validate. Pure.

pi silently drops lines it cannot read; piweb reports every problem with its line number and, by
default, refuses the whole file (the caller decides; see :class:`ParsedFile.problems`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sessions_app.core import jsjson
from sessions_app.core.tree import check_acyclic, message_text, parse_timestamp_ms, row_text

CURRENT_VERSION = 3

# Widths of the columns ids, types, roles and timestamps are stored in (models.Entry, Session):
# PostgreSQL refuses longer values, so they are rejected here, with their line number.
MAX_ID_CHARS = 200
MAX_SHORT_CHARS = 64


@dataclass(frozen=True, slots=True)
class Limits:
    max_line_bytes: int = 32 * 1024 * 1024
    max_file_bytes: int = 2 * 1024 * 1024 * 1024
    max_depth: int = 512


@dataclass(frozen=True, slots=True)
class Problem:
    line: int  # 1-based physical line; 0 for the file as a whole
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "message": self.message}


@dataclass(slots=True)
class Line:
    line: int
    source: bytes  # holds the line's exact UTF-8 text at [start:end] (the file, or a migrated line)
    start: int
    end: int
    data: dict[str, Any]
    preview: str = ""  # tree.row_text of the full entry

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


@dataclass(slots=True)
class ParsedFile:
    header: dict[str, Any] | None = None
    header_raw: str = ""
    version: int = CURRENT_VERSION  # as found in the file, before migration
    entries: list[Line] = field(default_factory=list)  # valid entries not yet stored, file order
    # Lines that are not entries of their own (repeated headers, repeated identical entry lines):
    # (entries before it, raw), kept for a byte-identical export.
    extra_headers: list[tuple[int, str]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    fatal: bool = False  # the file as a whole is unusable (no header, too big, ...)
    leaf_id: str | None = None  # the last entry line of the file: pi's leaf on load
    known: int = 0  # entries already stored (re-import)
    lines: int = 0

    @property
    def session_id(self) -> str | None:
        return None if self.header is None else self.header.get("id")


class FileRejected(ValueError):
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        first = problems[0] if problems else Problem(0, "unknown problem")
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        where = f"line {first.line}: " if first.line else ""
        super().__init__(f"{where}{first.message}{more}")


# --- per-type field rules -------------------------------------------------------------------

_Check = Callable[[Any], bool]


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_obj(v: Any) -> bool:
    return isinstance(v, dict)


def _is_content(v: Any) -> bool:
    return isinstance(v, str | list)


def _is_list(v: Any) -> bool:
    return isinstance(v, list)


_KIND: dict[_Check, str] = {
    _is_str: "a string",
    _is_num: "a number",
    _is_bool: "true or false",
    _is_obj: "an object",
    _is_content: "a string or an array",
    _is_list: "an array",
}

# field -> (check, required)
FIELDS: dict[str, dict[str, tuple[_Check, bool]]] = {
    "message": {"message": (_is_obj, True)},
    "thinking_level_change": {"thinkingLevel": (_is_str, True)},
    "model_change": {"provider": (_is_str, True), "modelId": (_is_str, True)},
    "compaction": {
        "summary": (_is_str, True),
        "firstKeptEntryId": (_is_str, False),
        "tokensBefore": (_is_num, True),
        "fromHook": (_is_bool, False),
    },
    "branch_summary": {"fromId": (_is_str, True), "summary": (_is_str, True), "fromHook": (_is_bool, False)},
    "custom": {"customType": (_is_str, True)},
    "custom_message": {
        "customType": (_is_str, True),
        "content": (_is_content, True),
        "display": (_is_bool, True),
    },
    "label": {"targetId": (_is_str, True), "label": (_is_str, False)},
    "session_info": {"name": (_is_str, False)},
}
MESSAGE_FIELDS: dict[str, dict[str, tuple[_Check, bool]]] = {
    "user": {"content": (_is_content, True), "timestamp": (_is_num, False)},
    "assistant": {"content": (_is_list, True), "timestamp": (_is_num, False)},
    "toolResult": {"content": (_is_list, True), "timestamp": (_is_num, False)},
}


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


def _check_fields(obj: Mapping[str, Any], rules: Mapping[str, tuple[_Check, bool]], prefix: str) -> str | None:
    for name, (check, required) in rules.items():
        if name not in obj:
            if required:
                return f"field '{prefix}{name}' is missing"
            continue
        if not check(obj[name]):
            return f"field '{prefix}{name}' must be {_KIND[check]}, not {_type_name(obj[name])}"
    return None


def validate_entry(data: Mapping[str, Any]) -> str | None:
    """Why this entry object is malformed, or None. Unknown types only need the base fields."""
    kind = data.get("type")
    if not isinstance(kind, str) or not kind:
        return "field 'type' must be a non-empty string"
    entry_id = data.get("id")
    if not isinstance(entry_id, str) or not entry_id:
        return "field 'id' must be a non-empty string"
    if "parentId" not in data:
        return "field 'parentId' is missing"
    parent = data["parentId"]
    if parent is not None and not isinstance(parent, str):
        return f"field 'parentId' must be a string or null, not {_type_name(parent)}"
    for name, value in (("type", kind), ("id", entry_id), ("parentId", parent)):
        if isinstance(value, str) and not well_formed(value):
            return f"field '{name}' holds an unpaired UTF-16 surrogate"
    if parse_timestamp_ms(data.get("timestamp")) is None:
        return "field 'timestamp' must be an ISO 8601 date-time string"
    for name, value, limit in (
        ("type", kind, MAX_SHORT_CHARS),
        ("id", entry_id, MAX_ID_CHARS),
        ("parentId", parent, MAX_ID_CHARS),
        ("timestamp", data["timestamp"], MAX_SHORT_CHARS),
    ):
        if isinstance(value, str) and len(value) > limit:
            return f"field '{name}' is longer than {limit} characters"
    rules = FIELDS.get(kind)
    if rules is None:
        return None
    problem = _check_fields(data, rules, "")
    if problem or kind != "message":
        return problem
    message = data["message"]
    role = message.get("role")
    if not isinstance(role, str):
        return "field 'message.role' must be a string"
    if not well_formed(role):
        return "field 'message.role' holds an unpaired UTF-16 surrogate"
    if len(role) > MAX_SHORT_CHARS:
        return f"field 'message.role' is longer than {MAX_SHORT_CHARS} characters"
    role_rules = MESSAGE_FIELDS.get(role)
    return _check_fields(message, role_rules, "message.") if role_rules else None


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


# --- the whole file -------------------------------------------------------------------------


def _parse_line(chunk: bytes, number: int, limits: Limits) -> tuple[Any, Problem | None]:
    """The object on one line, or the problem with it; a blank line gives (None, None).

    Nothing is decoded here: orjson checks UTF-8 on the bytes itself, and stored lines are
    decoded once, when they are written."""
    if len(chunk) > limits.max_line_bytes:
        return None, Problem(number, f"line is {len(chunk)} bytes, over the limit of {limits.max_line_bytes}")
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
    # Counting brackets bounds the depth cheaply; walk only when it might be exceeded.
    if chunk.count(b"{") + chunk.count(b"[") > limits.max_depth and jsjson.depth_exceeds(value, limits.max_depth):
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
            kept["content"] = message_text(message)
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


def read_header(data: bytes, limits: Limits) -> tuple[Header | None, Problem | None]:
    """The session header (the first non-blank line), or the problem that makes the file unusable."""
    for number, start, end in _lines(data):
        value, problem = _parse_line(data[start:end], number, limits)
        if problem is not None:
            return None, Problem(problem.line, f"broken header: {problem.message}")
        if value is not None:
            problem = _header_problem(value, number)
            if problem is not None:
                return None, problem
            version = int(value.get("version", 1))
            if version > CURRENT_VERSION:
                return None, Problem(number, f"unsupported session format version {version}")
            return Header(value, data[start:end].decode(), number, end + 1, version), None
    return None, Problem(0, "the file is empty: no session header")


def _header_problem(header: dict[str, Any], number: int) -> Problem | None:
    if header.get("type") != "session" or not isinstance(header.get("id"), str) or not header["id"]:
        return Problem(number, 'missing session header: the first line must be {"type":"session","id":...}')
    unstorable = [k for k in ("id", "cwd", "timestamp") if isinstance(v := header.get(k), str) and not well_formed(v)]
    if unstorable:
        return Problem(number, f"field '{unstorable[0]}' holds an unpaired UTF-16 surrogate")
    if "/" in header["id"] or not header["id"].isprintable():
        # The id names the session in URLs; pi's own ids are UUIDs.
        return Problem(number, "field 'id' must not contain '/' or control characters")
    for key, limit in (("id", MAX_ID_CHARS), ("timestamp", MAX_SHORT_CHARS)):
        if len(str(header.get(key, ""))) > limit:  # str(): as Session.created stores it
            return Problem(number, f"field '{key}' is longer than {limit} characters")
    version = header.get("version", 1)
    if not _is_num(version) or version != int(version) or version < 1:
        return Problem(number, f"field 'version' must be 1, 2 or 3, not {version!r}")
    return None


def parse(
    data: bytes,
    *,
    limits: Limits = Limits(),
    known: Mapping[str, str] | None = None,
    slim_data: bool = False,
    progress: Callable[[int], None] | None = None,
    on_line: Callable[[Line, ParsedFile], None] | None = None,
) -> ParsedFile:
    """Parse, migrate and validate a pi session file.

    known maps the ids of entries already stored for this session to their stored lines: an equal
    line is skipped (re-import), a different one is a conflict. slim_data keeps only what storing
    needs in Line.data (see slim), so a large import holds little more than its lines' text.
    on_line sees each valid entry line as soon as it is read (the tree checks come at the end).
    """
    known = known or {}
    result = ParsedFile()
    if len(data) > limits.max_file_bytes:
        result.problems.append(Problem(0, f"file is {len(data)} bytes, over the limit of {limits.max_file_bytes}"))
        result.fatal = True
        return result

    header_info, problem = read_header(data, limits)
    if problem is not None:
        result.problems.append(problem)
        result.fatal = True
        return result
    assert header_info is not None
    header, header_raw = header_info.obj, header_info.raw
    result.lines = header_info.number
    lines_iter = _lines(data, header_info.end, header_info.number)
    version = header_info.version
    result.version = version
    lines: list[Line] = []

    def accept(number: int, source: bytes, start: int, end: int, obj: dict[str, Any]) -> None:
        if obj.get("type") == "session":
            result.extra_headers.append((len(lines), source[start:end].decode()))
            return
        problem_text = validate_entry(obj)
        if problem_text:
            result.problems.append(Problem(number, problem_text))
            return
        lines.append(Line(number, source, start, end, slim(obj) if slim_data else obj, row_text(obj)))
        if on_line is not None:
            on_line(lines[-1], result)

    rest = _read_rest(data, lines_iter, limits, result, progress)
    if result.version < CURRENT_VERSION:
        # Migration needs every line at once (v1 compactions point at lines by index).
        parsed = list(rest)
        migrate([header, *(obj for *_, obj in parsed)], result.version, header["id"])
        header_raw = jsjson.dumps(header)
        rest = _migrated(parsed)
    result.header = header
    result.header_raw = header_raw
    for number, source, start, end, obj in rest:  # v3: one line at a time, full objects never pile up
        accept(number, source, start, end, obj)
    _check_tree(lines, known, result)
    return result


_Read = tuple[int, bytes, int, int, dict[str, Any]]  # line number, buffer, start, end, object


def _migrated(parsed: list[_Read]) -> Iterator[_Read]:
    for number, _, _, _, obj in parsed:
        text = jsjson.dumps(obj).encode()
        yield number, text, 0, len(text), obj


def _read_rest(
    data: bytes,
    lines_iter: Iterator[tuple[int, int, int]],
    limits: Limits,
    result: ParsedFile,
    progress: Callable[[int], None] | None = None,
) -> Iterator[_Read]:
    pending = 0  # bytes read since the last progress report
    for number, start, end in lines_iter:
        result.lines = number
        value, problem = _parse_line(data[start:end], number, limits)
        if problem is not None:
            result.problems.append(problem)
        elif value is not None:
            yield number, data, start, end, value
        if progress is not None:
            pending += end - start + 1
            if pending >= 1 << 20:
                progress(pending)
                pending = 0
    if progress is not None and pending:
        progress(pending)


def _check_tree(lines: list[Line], known: Mapping[str, str], result: ParsedFile) -> None:
    first_line: dict[str, int] = {}
    first: dict[str, Line] = {}
    fresh: list[Line] = []
    order: list[str] = []  # ids of usable lines in file order, for the leaf
    for ln in lines:
        entry_id = ln.id
        if entry_id in first_line:
            if first[entry_id].raw == ln.raw:
                # The same line again: pi's lazy flush re-writes header and entries after a repeated
                # header (spec 2.3); like pi's byId map, it is the same entry, not a second one.
                # Kept as an extra line so the export stays byte-identical.
                order.append(entry_id)
                result.extra_headers.append((len(fresh), ln.raw))
                continue
            result.problems.append(
                Problem(ln.line, f"duplicate id {entry_id!r} (first used on line {first_line[entry_id]})")
            )
            continue
        first_line[entry_id] = ln.line
        first[entry_id] = ln
        if entry_id in known:
            if known[entry_id] != ln.raw:
                result.problems.append(
                    Problem(ln.line, f"entry {entry_id!r} differs from the stored entry with that id")
                )
                continue
            result.known += 1
            order.append(entry_id)
            continue
        fresh.append(ln)
        order.append(entry_id)

    # Drop entries whose parent (or label target) is missing, repeatedly: a dropped entry
    # orphans its children.
    available = set(known) | {ln.id for ln in fresh}
    parents = {ln.id: ln.parent_id for ln in fresh}
    for entry_id in check_acyclic(parents):
        available.discard(entry_id)
        result.problems.append(
            Problem(first_line[entry_id], f"entry {entry_id!r} is its own ancestor (parentId cycle)")
        )
    kept = [ln for ln in fresh if ln.id in available]
    changed = True
    while changed:
        changed = False
        still: list[Line] = []
        for ln in kept:
            problem = None
            if ln.parent_id is not None and ln.parent_id not in available:
                problem = f"parentId {ln.parent_id!r} does not match any entry"
            elif ln.type == "label" and ln.data["targetId"] not in available:
                problem = f"label targets unknown entry {ln.data['targetId']!r}"
            if problem:
                result.problems.append(Problem(ln.line, problem))
                available.discard(ln.id)
                changed = True
            else:
                still.append(ln)
        kept = still
    result.entries = kept
    result.leaf_id = next((i for i in reversed(order) if i in available), None)
    result.problems.sort(key=lambda p: p.line)
