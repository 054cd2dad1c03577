"""Reading pi session files (JSONL v1, v2, v3): parse, migrate as pi does, validate. Pure.

pi silently drops lines it cannot read; piweb reports every problem with its line number and, by
default, refuses the whole file (the caller decides; see :class:`ParsedFile.problems`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sessions_app import jsjson
from sessions_app.tree import check_acyclic, parse_timestamp_ms

CURRENT_VERSION = 3


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
    raw: str  # the exact text of the line (re-serialised only when a migration changed it)
    data: dict[str, Any]

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
    extra_headers: list[tuple[int, str]] = field(default_factory=list)  # (entries before it, raw)
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
    if parse_timestamp_ms(data.get("timestamp")) is None:
        return "field 'timestamp' must be an ISO 8601 date-time string"
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
    role_rules = MESSAGE_FIELDS.get(role)
    return _check_fields(message, role_rules, "message.") if role_rules else None


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
                index = obj.get("firstKeptEntryIndex")
                if isinstance(index, int | float) and not isinstance(index, bool) and index == int(index):
                    i = int(index)
                    if 0 <= i < len(objects) and objects[i].get("type") != "session":
                        obj["firstKeptEntryId"] = objects[i]["id"]
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


def _parse_line(raw: str, number: int, limits: Limits) -> tuple[Any, Problem | None]:
    try:
        value = jsjson.loads(raw)
    except jsjson.JSONDepthError:
        return None, Problem(number, f"JSON nests deeper than {limits.max_depth} levels")
    except ValueError as exc:
        return None, Problem(number, f"invalid JSON: {exc}")
    # Counting brackets bounds the depth cheaply; walk only when it might be exceeded.
    if raw.count("{") + raw.count("[") > limits.max_depth and jsjson.depth_exceeds(value, limits.max_depth):
        return None, Problem(number, f"JSON nests deeper than {limits.max_depth} levels")
    if not isinstance(value, dict):
        return None, Problem(number, f"expected a JSON object, got {_type_name(value)}")
    return value, None


def parse(
    data: bytes,
    *,
    limits: Limits = Limits(),
    known: Mapping[str, str] | None = None,
) -> ParsedFile:
    """Parse, migrate and validate a pi session file.

    known maps the ids of entries already stored for this session to their stored lines: an equal
    line is skipped (re-import), a different one is a conflict.
    """
    known = known or {}
    result = ParsedFile()
    if len(data) > limits.max_file_bytes:
        result.problems.append(Problem(0, f"file is {len(data)} bytes, over the limit of {limits.max_file_bytes}"))
        result.fatal = True
        return result

    objects: list[dict[str, Any]] = []  # header + entries, as parsed (pi's array)
    numbers: list[int] = []
    raws: list[str] = []
    chunks = data.split(b"\n")
    if chunks and chunks[-1] == b"":
        chunks.pop()
    result.lines = len(chunks)
    for number, chunk in enumerate(chunks, start=1):
        if len(chunk) > limits.max_line_bytes:
            result.problems.append(
                Problem(number, f"line is {len(chunk)} bytes, over the limit of {limits.max_line_bytes}")
            )
            continue
        try:
            raw = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            result.problems.append(Problem(number, f"not valid UTF-8 (byte {exc.start})"))
            continue
        if not raw.strip():
            continue
        value, problem = _parse_line(raw, number, limits)
        if problem is not None:
            if not objects:  # the first line must be the header
                result.problems.append(Problem(problem.line, f"broken header: {problem.message}"))
                result.fatal = True
                return result
            result.problems.append(problem)
            continue
        objects.append(value)
        numbers.append(number)
        raws.append(raw)

    if not objects:
        result.problems.append(Problem(0, "the file is empty: no session header"))
        result.fatal = True
        return result
    header = objects[0]
    if header.get("type") != "session" or not isinstance(header.get("id"), str) or not header["id"]:
        result.problems.append(
            Problem(numbers[0], 'missing session header: the first line must be {"type":"session","id":...}')
        )
        result.fatal = True
        return result
    version = header.get("version", 1)
    if not _is_num(version) or version != int(version) or not version >= 1:
        result.problems.append(Problem(numbers[0], f"field 'version' must be 1, 2 or 3, not {version!r}"))
        result.fatal = True
        return result
    if version > CURRENT_VERSION:
        result.problems.append(Problem(numbers[0], f"unsupported session format version {version}"))
        result.fatal = True
        return result
    result.version = int(version)
    if result.version < CURRENT_VERSION:
        migrate(objects, result.version, header["id"])
        raws = [jsjson.dumps(obj) for obj in objects]
    result.header = header
    result.header_raw = raws[0]

    lines: list[Line] = []
    for i in range(1, len(objects)):
        obj, number = objects[i], numbers[i]
        if obj.get("type") == "session":
            result.extra_headers.append((len(lines), raws[i]))
            continue
        problem_text = validate_entry(obj)
        if problem_text:
            result.problems.append(Problem(number, problem_text))
            continue
        lines.append(Line(number, raws[i], obj))
    _check_tree(lines, known, result)
    return result


def _check_tree(lines: list[Line], known: Mapping[str, str], result: ParsedFile) -> None:
    first_line: dict[str, int] = {}
    fresh: list[Line] = []
    order: list[str] = []  # ids of usable lines in file order, for the leaf
    for ln in lines:
        entry_id = ln.id
        if entry_id in first_line:
            result.problems.append(
                Problem(ln.line, f"duplicate id {entry_id!r} (first used on line {first_line[entry_id]})")
            )
            continue
        first_line[entry_id] = ln.line
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
