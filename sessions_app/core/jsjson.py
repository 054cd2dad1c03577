"""JSON exactly as JavaScript's JSON.parse / JSON.stringify see it.

pi writes its files with JSON.stringify: compact separators, keys in insertion order, raw UTF-8,
and numbers in JavaScript's Number#toString form (``0.000009``, ``1.5e-7``, ``1e+21``, ``5`` for
5.0). Python's float repr differs (``9e-06``), so lines piweb writes go through :func:`dumps`.
Pure: no Django imports.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

MAX_SAFE_INTEGER = 2**53 - 1

_ESCAPE = re.compile(r'[\x00-\x1f\\"\ud800-\udfff]')
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


class JSONDepthError(ValueError):
    """The value nests deeper than the allowed limit."""


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group(0)
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def dump_str(s: str) -> str:
    # JSON.stringify escapes ", \, control characters and (well-formed stringify) lone surrogates.
    return '"' + _ESCAPE.sub(_escape_char, s) + '"'


def format_number(x: float | int) -> str:
    """JavaScript's Number#toString for a finite double (what JSON.stringify writes)."""
    if isinstance(x, int) and abs(x) <= MAX_SAFE_INTEGER:
        return str(x)
    x = float(x)
    if not math.isfinite(x):
        return "null"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    digits, exp = _shortest_digits(abs(x))
    k = len(digits)
    n = exp + k  # value = 0.DIGITS * 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body


def _shortest_digits(x: float) -> tuple[str, int]:
    """(digits, exponent) with x == int(digits) * 10**exponent, digits shortest round-trip."""
    r = repr(x)
    mantissa, _, e = r.partition("e")
    exp = int(e) if e else 0
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    exp -= len(frac)
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    return stripped or "0", exp


def dumps(value: Any, *, max_depth: int = 10_000) -> str:
    """Serialise like JSON.stringify(value). Dict keys keep their insertion order."""
    parts: list[str] = []
    _dump(value, parts, max_depth)
    return "".join(parts)


def _dump(value: Any, out: list[str], depth: int) -> None:
    if depth < 0:
        raise JSONDepthError("value nests too deeply")
    if isinstance(value, str):
        out.append(dump_str(value))
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif value is None:
        out.append("null")
    elif isinstance(value, int | float):
        out.append(format_number(value))
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for key, item in _js_items(value):
            if not first:
                out.append(",")
            first = False
            out.append(dump_str(str(key)))
            out.append(":")
            _dump(item, out, depth - 1)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _dump(item, out, depth - 1)
        out.append("]")
    else:
        raise TypeError(f"cannot serialise {type(value).__name__} as JSON")


_DIGITS = frozenset("0123456789")
_MAX_ARRAY_INDEX = 2**32 - 2


def _is_array_index(key: Any) -> bool:
    s = key if isinstance(key, str) else str(key)
    return (
        s[:1] in _DIGITS and s.isascii() and s.isdigit() and (len(s) == 1 or s[0] != "0") and int(s) <= _MAX_ARRAY_INDEX
    )


def _js_items(obj: dict[Any, Any]) -> Any:
    """obj's items in JavaScript's property order, which JSON.stringify writes: array-index keys
    ("0" … "4294967294" in canonical form) first, ascending; then the others in insertion order."""
    indexes = [k for k in obj if _is_array_index(k)]
    if not indexes:
        return obj.items()
    indexes.sort(key=lambda k: int(str(k)))
    first = set(indexes)
    return [(k, obj[k]) for k in indexes] + [(k, v) for k, v in obj.items() if k not in first]


def loads(text: str | bytes) -> Any:
    """Parse one JSON value. Raises ValueError (never RecursionError) on bad or too-deep input."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        first_error = str(exc)
    # orjson refuses integers beyond 64 bits and nesting beyond 1024 levels; the stdlib parser
    # takes the former, and its recursion limit turns the latter into a clear error.
    try:
        return json.loads(text)
    except RecursionError:
        raise JSONDepthError("JSON nests too deeply") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ValueError(first_error) from None


def depth_exceeds(value: Any, limit: int) -> bool:
    """True if value nests more than limit levels of arrays/objects (iterative, no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, d = stack.pop()
        if isinstance(item, dict):
            if d > limit:
                return True
            stack.extend((v, d + 1) for v in item.values())
        elif isinstance(item, list):
            if d > limit:
                return True
            stack.extend((v, d + 1) for v in item)
    return False
