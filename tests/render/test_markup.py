"""Markdown (raw HTML off), nh3 sanitising, pygments, and entry-to-block conversion."""

from __future__ import annotations

from sessions_app.render import markup
from tests.builders import entry, raw
from tests.xss import ALL, assert_no_live_payload


def test_markdown_renders_and_raw_html_stays_text():
    html = markup.markdown("**bold** <b>raw</b>\n\n```python\nx = 1\n```")
    assert "<strong>bold</strong>" in html
    assert "&lt;b&gt;raw&lt;/b&gt;" in html
    assert 'class="hl"' in html and "<span" in html


def test_no_payload_survives_markdown():
    assert_no_live_payload(markup.markdown(ALL))
    html = markup.markdown("[x](javascript:alert(1)) [y](https://ok.example)")
    assert 'href="javascript:' not in html and 'href="https://ok.example"' in html


def test_sanitize_drops_handlers_and_scripts():
    html = markup.sanitize('<p onclick="x()">a<script>alert(1)</script><a href="javascript:x">b</a></p>')
    assert "onclick" not in html and "<script" not in html and "javascript:" not in html


def test_unknown_languages_and_plain_code_are_escaped():
    assert "&lt;x&gt;" in markup.code("<x>", "no-such-language")
    assert "&lt;x&gt;" in markup.markdown("```no-such-language\n<x>\n```")


def test_long_output_is_truncated_unless_full():
    text = "\n".join(f"line {k}" for k in range(100))
    short = markup.output_block(text)
    assert short.truncated and "line 39" in short.text and "line 40" not in short.text
    assert not markup.output_block(text, full=True).truncated
    assert markup.output_block("x" * 5000).text == "x" * markup.TRUNCATE_CHARS


def test_entries_become_blocks():
    content = [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "text", "text": "hi"},
        {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.py"}},
    ]
    message = {"role": "assistant", "provider": "anthropic", "model": "m", "stopReason": "toolUse", "content": content}
    assistant = raw(entry("e1", None, "message", message=message))
    shown = markup.shown_entry(assistant, "e1")
    assert shown.kind == "assistant" and shown.meta == "anthropic/m"
    assert [b.kind for b in shown.blocks] == ["thinking", "text", "tool_call"]
    assert shown.blocks[2].text == "a.py"
    result = markup.shown_entry(
        raw(
            entry(
                "e1",
                None,
                "message",
                message={"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": "body"},
            )
        ),
        "e2",
    )
    joined = markup.attach_results([shown, result])
    assert len(joined) == 1 and shown.blocks[2].result is not None and shown.blocks[2].result.text == "body"
    assert markup.shown_entry(raw(entry("e1", None, "compaction", summary="s", tokensBefore=12345)), "c").title == (
        "Compacted from 12,345 tokens"
    )
    assert markup.shown_entry(raw(entry("e1", None, "model_change", provider="p", modelId="m")), "m").kind == "marker"
    assert (
        markup.shown_entry(
            raw(entry("e1", None, "custom_message", customType="t", content="x", display=False)), "x"
        ).kind
        == "hidden"
    )
    error = raw(
        entry(
            "e1",
            None,
            "message",
            message={"role": "assistant", "stopReason": "error", "errorMessage": "boom", "content": []},
        )
    )
    assert markup.shown_entry(error, "e").note == "Error: boom"


def test_only_safe_raster_images_are_served():
    png = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
    svg = {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zz4="}
    images = raw(entry("e1", None, "message", message={"role": "user", "content": [png, svg]}))
    assert markup.image_block(images, 0) == ("image/png", "iVBORw0KGgo=")
    assert markup.image_block(images, 1) is None
    assert markup.image_block(images, 5) is None


def test_task_lists_render_as_disabled_checkboxes():
    html = markup.markdown("- [x] spaced the timestamps\n- [ ] add `-id`\n- plain item\n\n1. [X] numbered")
    assert html.count('type="checkbox"') == 3 and html.count('disabled="disabled"') == 3
    assert html.count("checked") == 2
    assert "[x]" not in html and "[ ]" not in html and "[X]" not in html
    assert "spaced the timestamps" in html and "<code>-id</code>" in html
    assert '<li class="task">' in html and "<li>plain item</li>" in html


def test_brackets_outside_list_items_stay_text():
    html = markup.markdown("[x] not a list\n\n- text [x] inside\n\n```\n- [ ] code\n```")
    assert "checkbox" not in html and "[x] not a list" in html and "- [ ] code" in html


def test_inputs_never_come_from_session_text():
    """Raw HTML is text; and the sanitiser forces any input it keeps to a disabled checkbox."""
    assert "<input" not in markup.markdown('<input type="text" autofocus onfocus="x()"> - [x] no')
    html = markup.sanitize('<input type="text" name="q" autofocus onfocus="window.__xss=1" value="v">')
    assert "onfocus" not in html and "autofocus" not in html and "text" not in html and "value" not in html
    assert 'type="checkbox"' in html and "disabled" in html
