"""pi's built-in tool calls drawn for a reviewer: edit as a diff, write as the file, read as the
path and its excerpt, bash as the command with its output and failure; others stay generic."""

from __future__ import annotations

import re
from typing import Any

from sessions_app.render import markup, tools
from tests.builders import assistant, tool_result
from tests.xss import ALL, PAYLOADS, assert_no_live_payload


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": args}


def drawn(c: dict[str, Any], result: str | None = None, *, error: bool = False) -> markup.Block:
    """The call's block as the conversation draws it, with its result attached (by toolCallId)."""
    shown = [markup.shown_data(assistant("", call=c), "a1")]
    if result is not None:
        shown.append(markup.shown_data(tool_result(c["id"], result, 1, tool=c["name"], isError=error), "r1"))
    out = markup.attach_results(shown)
    assert len(out) == 1
    block = out[0].blocks[-1]
    assert block.kind == "tool_call"
    return block


def text_of(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def test_edit_is_a_highlighted_diff_with_the_path_and_counts():
    b = drawn(
        call("c1", "edit", path="src/app.py", oldText="def f():\n    return 1\n", newText="def f():\n    return 2\n")
    )
    html = str(b.html)
    assert 'class="tool-path mono">src/app.py<' in html
    assert (
        '<span class="dl del"><span class="sg">-</span>' in html
        and '<span class="dl add"><span class="sg">+</span>' in html
    )
    assert '<span class="k">return</span>' in html  # python highlighting
    assert b.text == "src/app.py +1 -1" and not b.truncated


def test_a_multi_edit_draws_each_replacement_apart():
    b = drawn(
        call("c1", "edit", path="a.ts", edits=[{"oldText": "a", "newText": "b"}, {"oldText": "c", "newText": "d"}])
    )
    assert str(b.html).count('class="dl gap"') == 1 and b.text == "a.ts +2 -2"


def test_a_long_diff_is_cut_and_drawn_whole_when_asked():
    old = "\n".join(f"x{i}" for i in range(200))
    c = call("c1", "edit", path="big.txt", oldText=old, newText=old.upper())
    b = drawn(c)
    assert b.truncated and str(b.html).count('class="dl') == tools.DIFF_LINES
    full = markup.tool_call_block(c, 0, full=True)
    assert not full.truncated and str(full.html).count('class="dl') == 400


def test_write_is_the_highlighted_file_with_line_numbers_cut_when_long():
    b = drawn(call("c1", "write", path="w.js", content="const a = 1;\nlet b = 2;\n"))
    html = str(b.html)
    assert '<span class="ln">2</span>' in html and '<span class="kd">const</span>' in html
    assert b.text == "w.js (2 lines)"
    long = drawn(call("c2", "write", path="w.txt", content="\n".join("l" for _ in range(100))))
    assert long.truncated and str(long.html).count('class="ln"') == tools.FILE_LINES


def test_read_is_the_path_with_its_range_and_the_highlighted_excerpt():
    b = drawn(call("c1", "read", path="m.py", offset=10, limit=3), "import os\nx = 1\n")
    assert "m.py:10-12" in str(b.html) and b.text == "m.py:10-12"
    assert b.result is not None and b.result.html is not None
    assert '<span class="kn">import</span>' in str(b.result.html)
    failed = drawn(call("c2", "read", path="nope.py"), "ENOENT", error=True)
    assert failed.result is not None and failed.result.html is None and failed.result.is_error


def test_bash_is_the_command_with_its_output_and_whether_it_failed():
    b = drawn(call("c1", "bash", command="ls -la /tmp", timeout=30), "boom", error=True)
    html = str(b.html)
    assert 'class="hl tool-command"' in html and "timeout 30s" in html and text_of(html).startswith("$ ls -la /tmp")
    assert b.result is not None and b.result.is_error and b.result.text == "boom"


def test_unknown_tools_and_odd_arguments_keep_the_generic_json_view():
    for c in (call("c1", "grep", pattern="x"), call("c2", "edit", path="a", oldText=1)):
        b = drawn(c)
        assert 'class="hl"' in str(b.html) and "tool-path" not in str(b.html)


def test_hostile_text_stays_text_in_every_tool():
    calls = [
        call("c1", "edit", path=ALL, oldText=ALL, newText=ALL + "\n" + ALL),
        call("c2", "edit", path=ALL + ".html", edits=[{"oldText": ALL, "newText": "x"}]),
        call("c3", "write", path=ALL + ".js", content=ALL),
        call("c4", "read", path=ALL + ".md", offset=1, limit=2),
        call("c5", "bash", command=ALL),
    ]
    for c in calls:
        b = drawn(c, ALL)
        html = str(b.html) + str(b.result.html if b.result and b.result.html else "")
        assert_no_live_payload(html)
        assert "<script" not in html and "<img" not in html and "<svg" not in html
        assert PAYLOADS[0] in text_of(html)  # shown, as text


def test_lexers_come_from_file_names():
    assert tools.lexer_for("a/b/c.py") is not None and tools.lexer_for("Makefile") is not None
    assert tools.lexer_for("notes.unknown-ext") is None
