"""A corpus of XSS payloads, put everywhere session text appears (views and browser tests)."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from tests.builders import header, jsonl

PAYLOADS = [
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=2">',
    '"><svg onload=window.__xss=3>',
    '\'><iframe srcdoc="<script>parent.__xss=4</script>"></iframe>',
    "</textarea><script>window.__xss=5</script>",
    "<details open ontoggle=window.__xss=6>",
    "[click me](javascript:window.__xss=7)",
    '<a href="javascript:window.__xss=8">link</a>',
    "`<b onmouseover=window.__xss=9>x</b>`",
    "</script><script>window.__xss=10</script>",
]
ALL = " ".join(PAYLOADS)


def hostile_payloads(ts: int = 1_767_600_000_000) -> list[dict[str, Any]]:
    """Entries whose every text field carries the corpus (append them in order)."""
    return [
        {"type": "session_info", "name": "name " + ALL},
        {"type": "model_change", "provider": "p<script>x</script>", "modelId": ALL},
        {"type": "thinking_level_change", "thinkingLevel": "high"},
        {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "user " + ALL}],
                                        "timestamp": ts}},
        {"type": "message", "message": {
            "role": "assistant", "provider": "anthropic", "model": ALL, "api": "anthropic-messages",
            "stopReason": "toolUse", "timestamp": ts + 1,
            "content": [
                {"type": "thinking", "thinking": "think " + ALL},
                {"type": "text", "text": "answer " + ALL},
                {"type": "toolCall", "id": "call-1", "name": "bash" + PAYLOADS[0],
                 "arguments": {"command": ALL, "x": ALL}},
                # pi's built-in tools, drawn as diffs, files and paths (render/tools.py)
                {"type": "toolCall", "id": "call-2", "name": "edit",
                 "arguments": {"path": ALL + ".py", "oldText": ALL, "newText": "new " + ALL}},
                {"type": "toolCall", "id": "call-3", "name": "edit",
                 "arguments": {"path": ALL, "edits": [{"oldText": ALL, "newText": ALL + "\n" + ALL}]}},
                {"type": "toolCall", "id": "call-4", "name": "write",
                 "arguments": {"path": ALL + ".html", "content": ALL}},
                {"type": "toolCall", "id": "call-5", "name": "read", "arguments": {"path": ALL + ".js", "offset": 1}},
            ],
        }},
        {"type": "message", "message": {"role": "toolResult", "toolCallId": "call-1", "toolName": ALL,
                                        "content": [{"type": "text", "text": "out " + ALL}], "isError": False,
                                        "timestamp": ts + 2}},
        {"type": "custom_message", "customType": "ext" + PAYLOADS[1], "content": "custom " + ALL, "display": True},
        {"type": "message", "message": {
            "role": "assistant", "provider": "anthropic", "model": "m", "api": "anthropic-messages",
            "stopReason": "error", "errorMessage": ALL, "timestamp": ts + 3, "content": [],
        }},
        {"type": "branch_summary", "fromId": "root", "summary": "summary " + ALL},
    ]  # fmt: skip


class _Audit(HTMLParser):
    """Collects markup the payloads could have injected: handlers, javascript: URLs, scripts, frames."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.in_script = self.in_data = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("iframe", "svg", "object", "embed"):
            self.problems.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"{tag} {name}={value}")
            if name in ("href", "src", "action", "formaction") and (value or "").strip().lower().startswith(
                "javascript:"
            ):
                self.problems.append(f"{tag} {name}={value}")
        self.in_script = tag == "script"
        self.in_data = self.in_script and dict(attrs).get("type") == "application/json"

    def handle_endtag(self, tag: str) -> None:
        self.in_script = self.in_data = False

    def handle_data(self, data: str) -> None:
        # A JSON data block (the HTML export's entries) is never run; what matters is that no text
        # in it can end the element: it holds no "<" at all.
        if self.in_data:
            if "<" in data:
                self.problems.append("'<' in a JSON script block")
        elif self.in_script and "__xss" in data:
            self.problems.append("script with payload")


def assert_no_live_payload(html: str) -> None:
    audit = _Audit()
    audit.feed(html)
    assert not audit.problems, f"live payload markup in the page: {audit.problems[:5]}"


def session_file(header_id: str, payloads: list[dict[str, Any]]) -> bytes:
    """A linear session file of these payloads (ids e0000, e0001, ...)."""
    lines: list[dict[str, Any]] = []
    for k, payload in enumerate(payloads):
        stamp = f"2026-01-05T09:{k // 60:02d}:{k % 60:02d}.000Z"
        lines.append({**payload, "id": f"e{k:04d}", "parentId": lines[-1]["id"] if lines else None, "timestamp": stamp})
    return jsonl(header(header_id, timestamp="2026-01-05T09:00:00.000Z", cwd="/x"), *lines)
