"""Compaction and branch-summary core, checked against pi's rules (spec sections 7.6, 15, 16).

Golden values for the large fixture (cut point, tokensBefore, serialized text and file lists) were
computed with pi's own JavaScript (coding-agent 0.73.1 dist) on the same file.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from typing import Any

import pytest

from sessions_app.core import compaction as c
from sessions_app.core import compaction_prompts as prompts
from sessions_app.core import intake
from sessions_app.core.tree import Node, index, node_from_entry
from tests.paths import LARGE_SESSION

# --- builders ----------------------------------------------------------------------------------


class Log:
    """A linear path of entries with ids e0, e1, ... (or explicit parents for trees)."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []

    def add(self, type_: str, parent: str | bool | None = True, **fields) -> Node:
        parent_id = (self.nodes[-1].id if self.nodes else None) if parent is True else parent
        entry = {"type": type_, "id": f"e{len(self.nodes)}", "parentId": parent_id}
        entry["timestamp"] = "2025-01-01T00:00:00.000Z"
        entry.update(fields)
        node = node_from_entry(entry)
        self.nodes.append(node)
        return node

    def msg(self, message: dict[str, Any], parent: str | bool | None = True) -> Node:
        return self.add("message", parent, message=message)

    def user(self, text: str, **kw) -> Node:
        return self.msg({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}, **kw)

    def assistant(
        self, text: str = "", calls: tuple[tuple[str, dict[str, Any]], ...] = (), stop: str = "stop", usage=None, **kw
    ):
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += [{"type": "toolCall", "id": f"c{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)]
        message = {"role": "assistant", "content": content, "stopReason": stop, "timestamp": 2}
        if usage is not None:
            message["usage"] = usage
        return self.msg(message, **kw)

    def tool(self, text: str) -> Node:
        return self.msg(
            {
                "role": "toolResult",
                "toolCallId": "c0",
                "toolName": "bash",
                "content": [{"type": "text", "text": text}],
                "isError": False,
                "timestamp": 3,
            }
        )


def chars(n: int) -> str:
    return "x" * n


def usage(total: int | None = None, **parts: int) -> dict[str, Any]:
    u = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, **parts}
    if total is not None:
        u["totalTokens"] = total
    return u


# --- token estimates ---------------------------------------------------------------------------


def test_it_estimates_user_tokens_as_ceil_chars_over_four():
    assert c.estimate_tokens({"role": "user", "content": "abcde"}) == 2
    blocks = [
        {"type": "text", "text": "abc"},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "text", "text": "de"},
    ]
    assert c.estimate_tokens({"role": "user", "content": blocks}) == 2  # user images are not counted


def test_it_counts_utf16_units_for_non_ascii_and_emoji():
    assert c.js_len("é") == 1
    assert c.js_len("😀") == 2  # a surrogate pair in JavaScript
    assert c.estimate_tokens({"role": "user", "content": "😀😀😀"}) == 2  # 6 units
    assert c.estimate_tokens({"role": "user", "content": "日本語"}) == 1  # 3 units, not 9 bytes


def test_it_counts_images_as_4800_chars_in_tool_results_and_custom_messages():
    image = {"type": "image", "data": "A" * 100000, "mimeType": "image/png"}
    tool = {"role": "toolResult", "content": [image, {"type": "text", "text": "abcd"}]}
    assert c.estimate_tokens(tool) == math.ceil(4804 / 4)
    assert c.estimate_tokens({"role": "custom", "content": [image, image]}) == 2400
    assert c.estimate_tokens({"role": "custom", "content": "abcdefgh"}) == 2


def test_it_counts_assistant_text_thinking_and_compact_js_json_of_tool_arguments():
    args = {"path": "ä.txt", "n": 1.0, "x": 0.000009, "nested": [True, None]}
    # JSON.stringify: {"path":"ä.txt","n":1,"x":0.000009,"nested":[true,null]} -> 52 units
    stringified = '{"path":"ä.txt","n":1,"x":0.000009,"nested":[true,null]}'
    message = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "text", "text": "ok"},
            {"type": "toolCall", "id": "t", "name": "read", "arguments": args},
        ],
    }
    expected = math.ceil((3 + 2 + 4 + len(stringified)) / 4)
    assert c.estimate_tokens(message) == expected


def test_it_estimates_bash_summaries_and_unknown_roles():
    assert c.estimate_tokens({"role": "bashExecution", "command": "ls", "output": "a\nb"}) == 2
    assert c.estimate_tokens({"role": "branchSummary", "summary": chars(9)}) == 3
    assert c.estimate_tokens({"role": "compactionSummary", "summary": chars(8)}) == 2
    assert c.estimate_tokens({"role": "whatever", "content": chars(100)}) == 0


def test_it_computes_context_tokens_from_usage():
    assert c.calculate_context_tokens(usage(total=500, input=1)) == 500
    assert c.calculate_context_tokens(usage(input=1, output=2, cacheRead=3, cacheWrite=4)) == 10
    assert c.calculate_context_tokens(usage(total=0, input=5)) == 5  # 0 is falsy in JS


def test_it_finds_the_last_usable_assistant_usage():
    log = Log()
    log.assistant("a", usage=usage(total=100))
    log.assistant("b", usage=usage(total=200), stop="aborted")
    log.assistant("c", usage=usage(total=300), stop="error")
    log.user("hi")
    assert c.get_last_assistant_usage(log.nodes) == usage(total=100)
    assert c.get_last_assistant_usage(log.nodes[1:]) is None


def test_it_estimates_context_from_last_usage_plus_trailing_messages():
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": chars(400)},
        {"role": "assistant", "content": [], "stopReason": "stop", "usage": usage(total=1000)},
        {"role": "user", "content": chars(40)},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": chars(8)}],
            "stopReason": "aborted",
            "usage": usage(total=5),
        },
    ]
    est = c.estimate_context_tokens(messages)
    assert (est.tokens, est.usage_tokens, est.trailing_tokens, est.last_usage_index) == (1012, 1000, 12, 1)
    none = c.estimate_context_tokens(messages[:1])
    assert (none.tokens, none.last_usage_index) == (100, None)


def test_it_decides_when_to_compact_with_pi_defaults():
    assert c.CompactionSettings(enabled=True, reserve_tokens=16384, keep_recent_tokens=20000) == c.DEFAULT_SETTINGS
    assert not c.should_compact(tokens=200000 - 16384, window=200000)
    assert c.should_compact(tokens=200000 - 16383, window=200000)
    assert not c.should_compact(tokens=10**9, window=1, settings=c.CompactionSettings(enabled=False))


# --- cut points --------------------------------------------------------------------------------


def test_it_never_cuts_at_tool_results_or_non_message_entries():
    log = Log()
    log.add("model_change", provider="p", modelId="m")
    log.user("u")
    log.assistant("a", calls=(("bash", {"command": "ls"}),))
    log.tool("r")
    log.add("compaction", summary="s", firstKeptEntryId="e1", tokensBefore=1)
    log.add("label", targetId="e1", label="x")
    log.add("custom", customType="t")
    log.add("custom_message", customType="t", content="c", display=True)
    log.add("branch_summary", fromId="e1", summary="b")
    log.msg({"role": "bashExecution", "command": "ls", "output": "", "timestamp": 1})
    log.msg({"role": "custom", "customType": "x", "content": "legacy", "display": True, "timestamp": 1})
    assert c.find_valid_cut_points(log.nodes, 0, len(log.nodes)) == [1, 2, 7, 8, 9, 10]
    assert c.find_valid_cut_points(log.nodes, 2, 8) == [2, 7]


def test_it_keeps_everything_when_the_budget_is_not_reached():
    log = Log()
    log.user("small")
    log.assistant("reply")
    cut = c.find_cut_point(log.nodes, start=0, end=2, keep_recent_tokens=20000)
    assert cut == c.CutPoint(0, -1, False)


def test_it_returns_start_when_there_are_no_cut_points():
    log = Log()
    log.add("thinking_level_change", thinkingLevel="off")
    log.tool("orphan")
    assert c.find_cut_point(log.nodes, start=0, end=2, keep_recent_tokens=1) == c.CutPoint(0, -1, False)


def test_it_cuts_at_a_user_message_without_splitting():
    log = Log()
    log.user(chars(400))  # 100 tokens
    log.assistant(chars(400))
    log.user(chars(400))  # index 2
    log.assistant(chars(400))
    cut = c.find_cut_point(log.nodes, start=0, end=4, keep_recent_tokens=200)
    assert cut == c.CutPoint(2, -1, False)


def test_it_moves_a_cut_off_a_tool_result_to_the_next_cut_point_and_marks_a_split_turn():
    log = Log()
    log.user(chars(40))  # 0: turn start
    log.assistant("", calls=(("bash", {"command": "x"}),))  # 1
    log.tool(chars(4000))  # 2: 1000 tokens, the threshold is crossed here
    log.assistant(chars(40))  # 3: first cut point at or after 2
    log.tool(chars(40))  # 4
    cut = c.find_cut_point(log.nodes, start=0, end=5, keep_recent_tokens=1000)
    assert cut == c.CutPoint(3, 0, True)
    assert log.nodes[cut.first_kept_entry_index].role == "assistant"


def test_it_extends_the_cut_backwards_over_non_message_entries_but_not_past_a_compaction():
    log = Log()
    log.user(chars(4000))  # 0
    log.add("thinking_level_change", thinkingLevel="high")  # 1
    log.add("label", targetId="e0", label="x")  # 2
    log.user(chars(400))  # 3
    cut = c.find_cut_point(log.nodes, start=0, end=4, keep_recent_tokens=100)
    # The settings entries are pulled into the kept part; since the kept part then starts with a
    # non-user entry, pi calls it a split turn whose prefix is the user message at 0.
    assert cut == c.CutPoint(1, 0, True)

    log2 = Log()
    log2.user(chars(4000))
    log2.add("compaction", summary="s", firstKeptEntryId="e0", tokensBefore=1)  # 1
    log2.add("model_change", provider="p", modelId="m")  # 2
    log2.user(chars(400))  # 3
    cut2 = c.find_cut_point(log2.nodes, start=2, end=4, keep_recent_tokens=100)
    assert cut2.first_kept_entry_index == 2  # stops at start even though 1 is a compaction


def test_an_extended_cut_is_a_split_turn_when_a_user_message_precedes_it():
    log = Log()
    log.user(chars(40))  # 0 turn start
    log.assistant(chars(4000))  # 1
    log.add("model_change", provider="p", modelId="m")  # 2
    log.assistant(chars(400))  # 3 -> cut lands here, then extends to 2
    cut = c.find_cut_point(log.nodes, start=0, end=4, keep_recent_tokens=100)
    assert cut == c.CutPoint(2, 0, True)


def test_branch_summaries_and_custom_messages_start_turns():
    log = Log()
    log.add("branch_summary", fromId="root", summary="b")  # 0
    log.assistant(chars(4000))  # 1
    log.assistant(chars(400))  # 2
    assert c.find_cut_point(log.nodes, start=0, end=3, keep_recent_tokens=100) == c.CutPoint(2, 0, True)
    assert c.find_turn_start_index(log.nodes, 2, 1) == -1


def test_the_large_fixture_cut_matches_pi():
    nodes = _fixture_nodes()
    cut = c.find_cut_point(nodes, start=0, end=len(nodes), keep_recent_tokens=20000)
    assert cut == c.CutPoint(837, 834, True)
    assert sum(c.estimate_tokens(n.data["message"]) for n in nodes if n.type == "message") == 124661


def _fixture_nodes() -> list[Node]:
    read = intake.read_file(LARGE_SESSION.read_bytes())
    assert not read.problems
    return [node_from_entry(p.line.data) for p in read.placed]


# --- prepare_compaction ------------------------------------------------------------------------


def test_prepare_compaction_on_the_large_fixture_matches_pi():
    nodes = _fixture_nodes()
    prep = c.prepare_compaction(nodes)
    assert prep is not None
    assert prep.first_kept_entry_id == nodes[837].id
    assert prep.is_split_turn
    assert prep.tokens_before == 177657
    assert prep.previous_summary is None
    assert len(prep.turn_prefix_messages) == 3
    assert len(prep.messages_to_summarize) == sum(1 for n in nodes[:834] if n.type == "message")
    text = c.serialize_conversation(c.convert_to_llm(prep.messages_to_summarize))
    assert c.js_len(text) == 337644
    assert (
        hashlib.sha256(text.encode()).hexdigest() == "864ed812bed0c5005a7eab209858687b8cf14e60ff553796be7901885fa53d8f"
    )
    suffix = c.format_file_operations(*prep.file_ops.file_lists())
    assert (
        hashlib.sha256(suffix.encode()).hexdigest()
        == "12bcc97ae6a3fd3bc031206b286e489c4bfd7768b7e6e3171981287ea3696ea5"
    )


def test_prepare_compaction_refuses_a_path_ending_in_a_compaction():
    log = Log()
    log.user("hi")
    log.add("compaction", summary="s", firstKeptEntryId="e0", tokensBefore=1)
    assert c.prepare_compaction(log.nodes) is None


def test_prepare_compaction_starts_after_the_previous_compaction_and_carries_its_summary_and_files():
    log = Log()
    log.user(chars(4000))  # 0 kept by the previous compaction, never re-summarized
    log.assistant("", calls=(("read", {"path": "old.py"}),))  # 1
    log.add(
        "compaction",
        summary=chars(400),
        firstKeptEntryId="e0",
        tokensBefore=9,
        details={"readFiles": ["prev-read.md"], "modifiedFiles": ["prev-mod.py"]},
    )  # 2
    log.user(chars(4000))  # 3
    log.assistant(
        "",
        calls=(
            ("edit", {"path": "a.py"}),
            ("write", {"path": "b.py"}),
            ("read", {"path": "a.py"}),
        ),
    )  # 4
    log.tool("ok")  # 5
    log.user(chars(400))  # 6
    log.assistant(chars(400), usage=usage(total=777))  # 7
    log.user(chars(40))  # 8
    prep = c.prepare_compaction(log.nodes, c.CompactionSettings(keep_recent_tokens=150))
    assert prep is not None
    assert prep.first_kept_entry_id == "e6"
    assert not prep.is_split_turn
    assert prep.previous_summary == chars(400)
    assert [m["role"] for m in prep.messages_to_summarize] == ["user", "assistant", "toolResult"]
    assert prep.turn_prefix_messages == []
    # usage 777 of entry 7 + trailing user (10 tokens)
    assert prep.tokens_before == 787
    assert prep.file_ops.file_lists() == (["prev-read.md"], ["a.py", "b.py", "prev-mod.py"])


def test_prepare_compaction_counts_the_previous_summary_in_tokens_before_without_usage():
    log = Log()
    log.add("compaction", summary=chars(400), firstKeptEntryId="missing", tokensBefore=1)
    log.user(chars(40))
    prep = c.prepare_compaction(log.nodes)
    assert prep is not None
    assert prep.tokens_before == 100 + 10
    assert prep.first_kept_entry_id == "e1"
    assert prep.messages_to_summarize == []


def test_prepare_compaction_ignores_hook_made_details():
    log = Log()
    log.add(
        "compaction", summary="s", firstKeptEntryId="e0", tokensBefore=1, fromHook=True, details={"readFiles": ["x"]}
    )
    log.user("u")
    prep = c.prepare_compaction(log.nodes)
    assert prep is not None
    assert prep.file_ops.file_lists() == ([], [])


def test_prepare_compaction_splits_a_turn_and_takes_file_ops_from_the_prefix():
    log = Log()
    log.user(chars(40))  # 0
    log.assistant(chars(40))  # 1
    log.user(chars(40))  # 2 turn start
    log.assistant("", calls=(("read", {"path": "p.md"}),))  # 3
    log.tool(chars(4000))  # 4
    log.assistant(chars(400))  # 5
    prep = c.prepare_compaction(log.nodes, c.CompactionSettings(keep_recent_tokens=1000))
    assert prep is not None
    assert (prep.first_kept_entry_id, prep.is_split_turn) == ("e5", True)
    assert [m["role"] for m in prep.messages_to_summarize] == ["user", "assistant"]
    assert [m["role"] for m in prep.turn_prefix_messages] == ["user", "assistant", "toolResult"]
    assert prep.file_ops.read == {"p.md"}


def test_file_lists_dedupe_sort_in_utf16_order_and_format_exactly():
    ops = c.FileOps(read={"b", "a", "m"}, written={"m"}, edited={"\U0001f600.txt", "\uff5e.txt"})
    read, modified = ops.file_lists()
    assert read == ["a", "b"]
    assert modified == ["m", "\U0001f600.txt", "\uff5e.txt"]  # surrogates (D8xx) sort before FFxx
    assert c.format_file_operations(read, modified) == (
        "\n\n<read-files>\na\nb\n</read-files>\n\n<modified-files>\nm\n\U0001f600.txt\n\uff5e.txt\n</modified-files>"
    )
    assert c.format_file_operations([], ["x"]) == "\n\n<modified-files>\nx\n</modified-files>"
    assert c.format_file_operations([], []) == ""


def test_file_ops_only_take_string_paths_of_read_write_edit():
    ops = c.FileOps()
    ops.add_message(
        {
            "role": "assistant",
            "content": [
                {"type": "toolCall", "name": "read", "arguments": {"path": "r"}},
                {"type": "toolCall", "name": "read", "arguments": {"path": ""}},
                {"type": "toolCall", "name": "edit", "arguments": {"path": 5}},
                {"type": "toolCall", "name": "bash", "arguments": {"path": "nope"}},
                {"type": "toolCall", "name": "write", "arguments": {"file_path": "nope"}},
            ],
        }
    )
    ops.add_message({"role": "user", "content": [{"type": "toolCall", "name": "read", "arguments": {"path": "u"}}]})
    assert (ops.read, ops.written, ops.edited) == ({"r"}, set(), set())


# --- convert_to_llm and serialization ----------------------------------------------------------


def test_convert_to_llm_renders_bash_executions_like_pi():
    def text(**m: Any) -> str | None:
        out = c.convert_to_llm([{"role": "bashExecution", "timestamp": 5, **m}])
        return out[0]["content"][0]["text"] if out else None

    assert text(command="ls", output="a\nb", exitCode=0, cancelled=False, truncated=False) == "Ran `ls`\n```\na\nb\n```"
    assert text(command="x", output="", exitCode=2, cancelled=False, truncated=False) == (
        "Ran `x`\n(no output)\n\nCommand exited with code 2"
    )
    assert text(command="x", output="o", exitCode=1, cancelled=True, truncated=True, fullOutputPath="/t/f") == (
        "Ran `x`\n```\no\n```\n\n(command cancelled)\n\n[Output truncated. Full output: /t/f]"
    )
    assert text(command="x", output="o", cancelled=False, truncated=True) == "Ran `x`\n```\no\n```"
    assert text(command="x", output="o", excludeFromContext=True) is None
    out = c.convert_to_llm([{"role": "bashExecution", "command": "c", "output": "", "timestamp": 5}])
    assert out == [{"role": "user", "content": [{"type": "text", "text": "Ran `c`\n(no output)"}], "timestamp": 5}]


def test_convert_to_llm_wraps_summaries_and_custom_messages_exactly():
    out = c.convert_to_llm(
        [
            {"role": "branchSummary", "summary": "B", "fromId": "x", "timestamp": 1},
            {"role": "compactionSummary", "summary": "C", "tokensBefore": 3, "timestamp": 2},
            {"role": "custom", "customType": "t", "content": "S", "display": False, "timestamp": 3},
            {
                "role": "custom",
                "customType": "t",
                "content": [{"type": "image", "data": "d", "mimeType": "image/png"}],
                "display": True,
                "timestamp": 4,
            },
            {"role": "mystery", "timestamp": 5},
            {"role": "toolResult", "toolCallId": "1", "toolName": "t", "content": [], "isError": False, "timestamp": 6},
        ]
    )
    assert out[0]["content"][0]["text"] == (
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nB</summary>"
    )
    assert out[1]["content"][0]["text"] == (
        "The conversation history before this point was compacted into the following summary:\n\n"
        "<summary>\nC\n</summary>"
    )
    assert out[2] == {"role": "user", "content": [{"type": "text", "text": "S"}], "timestamp": 3}
    assert out[3]["content"] == [{"type": "image", "data": "d", "mimeType": "image/png"}]
    assert [m["role"] for m in out] == ["user", "user", "user", "user", "toolResult"]


def test_serialize_conversation_formats_roles_and_tool_calls():
    text = c.serialize_conversation(
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}],
            },
            {"role": "user", "content": ""},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "t1"},
                    {"type": "text", "text": "x"},
                    {"type": "thinking", "thinking": "t2"},
                    {"type": "text", "text": "y"},
                    {"type": "toolCall", "name": "read", "arguments": {"path": "ü", "n": 1.5e-7}},
                    {"type": "toolCall", "name": "ls", "arguments": {}},
                ],
            },
            {"role": "toolResult", "content": [{"type": "text", "text": "r1"}, {"type": "text", "text": "r2"}]},
            {"role": "toolResult", "content": [{"type": "image"}]},
        ]
    )
    assert text == (
        "[User]: ab\n\n[Assistant thinking]: t1\nt2\n\n[Assistant]: x\ny\n\n"
        '[Assistant tool calls]: read(path="ü", n=1.5e-7); ls()\n\n[Tool result]: r1r2'
    )


def test_serialize_conversation_truncates_tool_results_in_utf16_units():
    emoji_text = "😀" * 1500  # 3000 units
    text = c.serialize_conversation([{"role": "toolResult", "content": [{"type": "text", "text": emoji_text}]}])
    assert text == "[Tool result]: " + "😀" * 1000 + "\n\n[... 1000 more characters truncated]"
    exact = c.serialize_conversation([{"role": "toolResult", "content": [{"type": "text", "text": chars(2000)}]}])
    assert exact == "[Tool result]: " + chars(2000)
    # A cut in the middle of a surrogate pair leaves a lone surrogate, as String#slice does.
    assert c.truncate_for_summary("a" + "😀" * 2, 2) == "a\ud83d\n\n[... 3 more characters truncated]"


# --- prompts -----------------------------------------------------------------------------------

PROMPT_SHA256 = {  # computed from pi's own constants (coding-agent dist)
    "SUMMARIZATION_SYSTEM_PROMPT": "78c24210d5ba3e2fbcb8b13289c2488d52f3d5317fe5bfc4055dfc126e4b8570",
    "SUMMARIZATION_PROMPT": "9b00aa68df1a64279bc36e9093367f638701d48ec82e3d08436f65092a515f9b",
    "UPDATE_SUMMARIZATION_PROMPT": "240c52982209146eae47d73c7172f6ba1dab60f44520bcb6a6ec1a883fef2ec7",
    "TURN_PREFIX_SUMMARIZATION_PROMPT": "9aeeb36ea731a8497d38abb03c2da351d81bcade4b2ae389bb6ae74300cf6ba5",
    "BRANCH_SUMMARY_PROMPT": "76cf34f4204cc5465282460c9a3099301d9c8c0a672eda0e9d48ee7af422cec1",
    "BRANCH_SUMMARY_PREAMBLE": "8cec318a8d7b328ea984295f5a59325e2f8736059661b70a1b9e957e69788e16",
}


@pytest.mark.parametrize("name", sorted(PROMPT_SHA256))
def test_prompts_are_byte_exact(name):
    assert hashlib.sha256(getattr(prompts, name).encode()).hexdigest() == PROMPT_SHA256[name]


def test_prompts_have_the_fixed_sections():
    for heading in (
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ):
        assert f"\n{heading}\n" in prompts.SUMMARIZATION_PROMPT
        assert f"\n{heading}\n" in prompts.UPDATE_SUMMARIZATION_PROMPT
    for heading in ("## Original Request", "## Early Progress", "## Context for Suffix"):
        assert f"\n{heading}\n" in prompts.TURN_PREFIX_SUMMARIZATION_PROMPT
    assert prompts.BRANCH_SUMMARY_PREAMBLE == (
        "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"
    )


def test_summary_prompt_layout():
    msgs = [{"role": "user", "content": "hi", "timestamp": 1}]
    assert c.summary_prompt(msgs) == "<conversation>\n[User]: hi\n</conversation>\n\n" + prompts.SUMMARIZATION_PROMPT
    assert c.summary_prompt(msgs, previous_summary="P", custom_instructions="focus") == (
        "<conversation>\n[User]: hi\n</conversation>\n\n<previous-summary>\nP\n</previous-summary>\n\n"
        + prompts.UPDATE_SUMMARIZATION_PROMPT
        + "\n\nAdditional focus: focus"
    )
    assert c.turn_prefix_prompt(msgs).endswith("</conversation>\n\n" + prompts.TURN_PREFIX_SUMMARIZATION_PROMPT)
    assert c.branch_summary_prompt(msgs, custom_instructions="only this", replace_instructions=True).endswith(
        "</conversation>\n\nonly this"
    )
    assert c.branch_summary_prompt(msgs, custom_instructions="c").endswith(
        prompts.BRANCH_SUMMARY_PROMPT + "\n\nAdditional focus: c"
    )


# --- compact() ---------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.requests: list[c.SummaryRequest] = []

    async def __call__(self, request: c.SummaryRequest) -> str:
        self.requests.append(request)
        return "PREFIX" if "PREFIX of a turn" in request.prompt else "HISTORY"


def test_compact_merges_history_and_turn_prefix_and_appends_file_lists():
    log = Log()
    log.user(chars(40))
    log.assistant("", calls=(("write", {"path": "w.py"}),))
    log.user(chars(40))
    log.assistant("", calls=(("read", {"path": "r.md"}),))
    log.tool(chars(4000))
    log.assistant(chars(400))
    prep = c.prepare_compaction(log.nodes, c.CompactionSettings(keep_recent_tokens=1000, reserve_tokens=1000))
    assert prep is not None and prep.is_split_turn
    summarize = Recorder()
    result = asyncio.run(c.compact(prep, summarize=summarize))
    assert result.summary == (
        "HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX"
        "\n\n<read-files>\nr.md\n</read-files>\n\n<modified-files>\nw.py\n</modified-files>"
    )
    assert result.first_kept_entry_id == "e5"
    assert result.details == {"readFiles": ["r.md"], "modifiedFiles": ["w.py"]}
    assert sorted(r.max_tokens for r in summarize.requests) == [500, 800]
    assert all(r.system == prompts.SUMMARIZATION_SYSTEM_PROMPT and r.reasoning == "high" for r in summarize.requests)


def test_compact_uses_no_prior_history_when_the_split_turn_is_all_there_is():
    log = Log()
    log.user(chars(40))
    log.assistant(chars(4000))
    log.assistant(chars(400))
    prep = c.prepare_compaction(log.nodes, c.CompactionSettings(keep_recent_tokens=100))
    assert prep is not None and prep.is_split_turn and prep.messages_to_summarize == []
    summarize = Recorder()
    result = asyncio.run(c.compact(prep, summarize=summarize))
    assert result.summary == "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX"
    assert len(summarize.requests) == 1


def test_compact_single_call_uses_the_update_prompt_with_a_previous_summary():
    log = Log()
    log.add("compaction", summary="OLD", firstKeptEntryId="x", tokensBefore=1)
    log.user(chars(4000))
    log.user(chars(400))
    prep = c.prepare_compaction(log.nodes, c.CompactionSettings(keep_recent_tokens=100))
    assert prep is not None and not prep.is_split_turn
    summarize = Recorder()
    result = asyncio.run(c.compact(prep, summarize=summarize, custom_instructions="tests"))
    assert result.summary == "HISTORY"
    (request,) = summarize.requests
    assert "<previous-summary>\nOLD\n</previous-summary>" in request.prompt
    assert request.prompt.endswith(prompts.UPDATE_SUMMARIZATION_PROMPT + "\n\nAdditional focus: tests")
    assert request.max_tokens == math.floor(0.8 * 16384)


# --- branch summaries --------------------------------------------------------------------------


def _branchy() -> Log:
    # A -> B -> C -> D -> E -> F, and G a child of C (spec 15.2 example)
    log = Log()
    log.user("A", parent=None)
    log.assistant("B")
    log.user("C")
    log.assistant("D", calls=(("edit", {"path": "d.py"}),))
    log.add("compaction", summary="E-summary", firstKeptEntryId="e2", tokensBefore=5)
    log.user("F")
    log.user("G", parent="e2")
    return log


def test_collect_entries_walks_from_the_old_leaf_to_the_common_ancestor():
    log = _branchy()
    idx = index(log.nodes)
    entries, ancestor = c.collect_entries_for_branch_summary(idx, old_leaf_id="e5", target_id="e6")
    assert ancestor == "e2"
    assert [n.id for n in entries] == ["e3", "e4", "e5"]  # the compaction is included
    assert c.collect_entries_for_branch_summary(idx, old_leaf_id=None, target_id="e6") == ([], None)
    entries, ancestor = c.collect_entries_for_branch_summary(idx, old_leaf_id="e5", target_id="e1")
    assert (ancestor, [n.id for n in entries]) == ("e1", ["e2", "e3", "e4", "e5"])


def test_prepare_branch_entries_skips_tool_results_and_converts_summaries():
    log = _branchy()
    log.tool("result")  # e7, child of G
    log.add("branch_summary", fromId="e2", summary="BS", details={"readFiles": ["r"], "modifiedFiles": ["m"]})
    log.add("branch_summary", fromId="e2", summary="hook", fromHook=True, details={"readFiles": ["no"]})
    log.add("label", targetId="e0", label="l")
    entries = [log.nodes[i] for i in (3, 4, 7, 8, 9, 10)]
    prep = c.prepare_branch_entries(entries)
    assert [m["role"] for m in prep.messages] == ["assistant", "compactionSummary", "branchSummary", "branchSummary"]
    assert prep.file_ops.file_lists() == (["r"], ["d.py", "m"])
    assert prep.total_tokens == sum(c.estimate_tokens(m) for m in prep.messages)


def test_prepare_branch_entries_respects_the_budget_but_squeezes_in_a_summary():
    log = Log()
    log.add("branch_summary", fromId="x", summary=chars(400))  # 100 tokens
    log.user(chars(400))  # 100
    log.user(chars(400))  # 100
    log.user(chars(400))  # 100
    prep = c.prepare_branch_entries(log.nodes, token_budget=250)
    assert [m["role"] for m in prep.messages] == ["user", "user"]
    assert prep.total_tokens == 200
    prep = c.prepare_branch_entries(log.nodes[:1] + log.nodes[2:], token_budget=250)
    # total 200 < 225 (90%): the summary still goes in, then the walk stops
    assert [m["role"] for m in prep.messages] == ["branchSummary", "user", "user"]
    assert prep.total_tokens == 300
    assert len(c.prepare_branch_entries(log.nodes, token_budget=0).messages) == 4


def test_generate_branch_summary_adds_preamble_and_file_lists():
    log = _branchy()
    idx = index(log.nodes)
    entries, _ = c.collect_entries_for_branch_summary(idx, old_leaf_id="e5", target_id="e6")
    summarize = Recorder()
    result = asyncio.run(c.generate_branch_summary(entries, summarize=summarize, context_window=200000))
    assert result.summary == prompts.BRANCH_SUMMARY_PREAMBLE + "HISTORY\n\n<modified-files>\nd.py\n</modified-files>"
    assert result.details == {"readFiles": [], "modifiedFiles": ["d.py"]}
    (request,) = summarize.requests
    assert request.max_tokens == 2048 and request.reasoning is None
    assert c.branch_token_budget(context_window=None) == 128000 - 16384


def test_generate_branch_summary_without_content_makes_no_call():
    log = Log()
    log.add("label", targetId="x", label="l")
    summarize = Recorder()
    result = asyncio.run(c.generate_branch_summary(log.nodes, summarize=summarize))
    assert result == c.BranchSummary("No content to summarize", {"readFiles": [], "modifiedFiles": []})
    assert summarize.requests == []
