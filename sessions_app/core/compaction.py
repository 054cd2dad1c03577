"""Compaction and branch summaries, pure: token estimates, cut points, prompts (pi's texts in
compaction_prompts.py). No Django imports.

Follows pi coding-agent's compaction/*.ts and messages.ts as written down in
reference/pi-session-format.md sections 7.6, 15 and 16. Every length is a JavaScript string length
(UTF-16 code units), because pi's ``.length`` and ``.slice`` count those and the cut points must
land on the same entries as pi's.

The LLM calls themselves are injected (:data:`Summarize`), so this module needs no provider and is
tested without a network.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessions_app.core import jsjson
from sessions_app.core.compaction_prompts import (
    BRANCH_SUMMARY_MAX_TOKENS,
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    NO_BRANCH_CONTENT,
    NO_PRIOR_HISTORY,
    SPLIT_TURN_SEPARATOR,
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    SUMMARY_REASONING,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
)
from sessions_app.core.context import entry_message
from sessions_app.core.tree import Node, TreeIndex, common_ancestor, content_text

Message = dict[str, Any]

# --- Settings (16.1) -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000


DEFAULT_SETTINGS = CompactionSettings()
BRANCH_SUMMARY_RESERVE_TOKENS = 16384  # settings.branchSummary.reserveTokens default
DEFAULT_CONTEXT_WINDOW = 128000  # model.contextWindow fallback for branch summaries


def should_compact(*, tokens: int, window: int, settings: CompactionSettings = DEFAULT_SETTINGS) -> bool:
    return settings.enabled and tokens > window - settings.reserve_tokens


# --- JavaScript string helpers -----------------------------------------------------------------


def js_len(s: str) -> int:
    """String#length: UTF-16 code units (an emoji counts 2). surrogatepass keeps lone surrogates."""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def js_slice(s: str, end: int) -> str:
    """String#slice(0, end) in UTF-16 units; may split a surrogate pair exactly as JS does."""
    units = s.encode("utf-16-le", "surrogatepass")[: 2 * end]
    return units.decode("utf-16-le", "surrogatepass")


def js_sorted(items: Iterable[str]) -> list[str]:
    """Array#sort() default order: by UTF-16 code units, not code points."""
    return sorted(items, key=lambda s: s.encode("utf-16-be", "surrogatepass"))


def _blocks(content: object) -> list[Mapping[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _text(block: Mapping[str, Any], key: str) -> str:
    value = block.get(key)
    return value if isinstance(value, str) else ""


# --- Token estimation (16.2) -------------------------------------------------------------------

IMAGE_CHARS = 4800  # pi counts an image block as 4800 chars (1200 tokens)


def estimate_tokens(message: Mapping[str, Any]) -> int:
    """pi's estimateTokens: ceil(chars / 4), chars counted per role."""
    role = message.get("role")
    content = message.get("content")
    chars = 0
    if role == "user":
        chars = js_len(content_text(content, ""))
    elif role == "assistant":
        for block in _blocks(content):
            kind = block.get("type")
            if kind == "text":
                chars += js_len(_text(block, "text"))
            elif kind == "thinking":
                chars += js_len(_text(block, "thinking"))
            elif kind == "toolCall":
                # JSON.stringify(arguments): compact, raw UTF-8, JS number format.
                args = jsjson.dumps(block["arguments"]) if "arguments" in block else ""
                chars += js_len(_text(block, "name")) + js_len(args)
    elif role in ("custom", "toolResult"):
        if isinstance(content, str):
            chars = js_len(content)
        else:
            for block in _blocks(content):
                if block.get("type") == "text":
                    chars += js_len(_text(block, "text"))
                if block.get("type") == "image":
                    chars += IMAGE_CHARS
    elif role == "bashExecution":
        chars = js_len(_text(message, "command")) + js_len(_text(message, "output"))
    elif role in ("branchSummary", "compactionSummary"):
        chars = js_len(_text(message, "summary"))
    else:
        return 0
    return math.ceil(chars / 4)


_NUMBERS = frozenset((int, float))  # (not bool: JSON's true is no count)
MAX_COUNT = 2**53  # JavaScript's safe integers: a count beyond (or NaN, Infinity) is no count


def number(value: object) -> int | float:
    """A JSON number as a count, anything else 0 (the usage fields of old or odd files; a hostile
    1e30 would overflow the sums the database keeps)."""
    if type(value) in _NUMBERS and -MAX_COUNT <= value <= MAX_COUNT:  # type: ignore[operator]
        return value  # type: ignore[return-value]
    return 0


def calculate_context_tokens(usage: Mapping[str, Any]) -> int | float:
    """usage.totalTokens || input + output + cacheRead + cacheWrite (old files lack totalTokens)."""
    total = number(usage.get("totalTokens"))
    if total:
        return total
    return (
        number(usage.get("input"))
        + number(usage.get("output"))
        + number(usage.get("cacheRead"))
        + number(usage.get("cacheWrite"))
    )


def _assistant_usage(message: object) -> Mapping[str, Any] | None:
    # Aborted and errored replies carry no trustworthy usage.
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    if message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    return usage if isinstance(usage, dict) and usage else None


def get_last_assistant_usage(nodes: Sequence[Node]) -> Mapping[str, Any] | None:
    for node in reversed(nodes):
        if node.type == "message":
            usage = _assistant_usage(node.data.get("message"))
            if usage is not None:
                return usage
    return None


@dataclass(frozen=True, slots=True)
class ContextEstimate:
    tokens: int | float
    usage_tokens: int | float
    trailing_tokens: int
    last_usage_index: int | None


def estimate_context_tokens(messages: Sequence[Mapping[str, Any]]) -> ContextEstimate:
    """Last valid assistant usage plus estimates of the messages after it; else all estimates."""
    for i in range(len(messages) - 1, -1, -1):
        usage = _assistant_usage(messages[i])
        if usage is not None:
            usage_tokens = calculate_context_tokens(usage)
            trailing = sum(estimate_tokens(m) for m in messages[i + 1 :])
            return ContextEstimate(usage_tokens + trailing, usage_tokens, trailing, i)
    estimated = sum(estimate_tokens(m) for m in messages)
    return ContextEstimate(estimated, 0, estimated, None)


# --- Cut points (16.3, 16.4) -------------------------------------------------------------------

_CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
_TURN_START_ROLES = frozenset({"user", "bashExecution"})


def find_valid_cut_points(nodes: Sequence[Node], start: int, end: int) -> list[int]:
    """Indices where kept history may begin. Never a tool result: it must follow its tool call."""
    points: list[int] = []
    for i in range(start, end):
        node = nodes[i]
        if (node.type == "message" and node.role in _CUT_ROLES) or node.type in ("branch_summary", "custom_message"):
            points.append(i)
    return points


def find_turn_start_index(nodes: Sequence[Node], entry_index: int, start: int) -> int:
    """The user-like entry that opened the turn containing entry_index, or -1."""
    for i in range(entry_index, start - 1, -1):
        node = nodes[i]
        if node.type in ("branch_summary", "custom_message"):
            return i
        if node.type == "message" and node.role in _TURN_START_ROLES:
            return i
    return -1


@dataclass(frozen=True, slots=True)
class CutPoint:
    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool


def find_cut_point(nodes: Sequence[Node], *, start: int, end: int, keep_recent_tokens: int) -> CutPoint:
    """Keep roughly keep_recent_tokens of the newest messages in [start, end)."""
    points = find_valid_cut_points(nodes, start, end)
    if not points:
        return CutPoint(start, -1, False)
    accumulated = 0
    cut = points[0]  # nothing big enough: keep everything
    for i in range(end - 1, start - 1, -1):
        node = nodes[i]
        if node.type != "message":
            continue
        message = node.data.get("message")
        accumulated += estimate_tokens(message if isinstance(message, dict) else {})
        if accumulated >= keep_recent_tokens:
            cut = next((p for p in points if p >= i), cut)
            break
    # Pull settings/label/custom entries just before the cut into the kept part.
    while cut > start and nodes[cut - 1].type not in ("message", "compaction"):
        cut -= 1
    if nodes[cut].type == "message" and nodes[cut].role == "user":
        return CutPoint(cut, -1, False)
    turn_start = find_turn_start_index(nodes, cut, start)
    return CutPoint(cut, turn_start, turn_start != -1)


# --- File operations ---------------------------------------------------------------------------


@dataclass(slots=True)
class FileOps:
    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    edited: set[str] = field(default_factory=set)

    def add_details(self, details: object) -> None:
        """A pi-made summary's details: readFiles count as read, modifiedFiles as edited."""
        if not isinstance(details, dict):
            return
        for key, target in (("readFiles", self.read), ("modifiedFiles", self.edited)):
            files = details.get(key)
            if isinstance(files, list):
                target.update(f for f in files if isinstance(f, str))

    def add_message(self, message: Mapping[str, Any]) -> None:
        """read/write/edit tool calls with a string path in an assistant message."""
        if message.get("role") != "assistant":
            return
        targets = {"read": self.read, "write": self.written, "edit": self.edited}
        for block in _blocks(message.get("content")):
            if block.get("type") != "toolCall" or "name" not in block:
                continue
            args = block.get("arguments")
            path = args.get("path") if isinstance(args, dict) else None
            target = targets.get(block["name"]) if isinstance(block["name"], str) else None
            if isinstance(path, str) and path and target is not None:
                target.add(path)

    def file_lists(self) -> tuple[list[str], list[str]]:
        """(readFiles, modifiedFiles): modified = edited | written; read-only = read minus modified."""
        modified = self.edited | self.written
        return js_sorted(f for f in self.read if f not in modified), js_sorted(modified)


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    sections: list[str] = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""


# --- prepareCompaction (16.5) ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompactionPreparation:
    first_kept_entry_id: str
    messages_to_summarize: list[Message]
    turn_prefix_messages: list[Message]
    is_split_turn: bool
    tokens_before: int | float
    previous_summary: str | None
    file_ops: FileOps
    settings: CompactionSettings
    cut: CutPoint


def prepare_compaction(
    path: Sequence[Node], settings: CompactionSettings = DEFAULT_SETTINGS
) -> CompactionPreparation | None:
    """What a compaction of the path (root first, leaf last) would summarize and keep.

    None when the leaf already is a compaction ("Already compacted") or nothing can be kept.
    """
    if path and path[-1].type == "compaction":
        return None
    prev = next((i for i in range(len(path) - 1, -1, -1) if path[i].type == "compaction"), -1)
    start = prev + 1
    # The previous summary counts toward the current context size.
    context = [m for n in path[max(prev, 0) :] if (m := entry_message(n)) is not None]
    tokens_before = estimate_context_tokens(context).tokens
    cut = find_cut_point(path, start=start, end=len(path), keep_recent_tokens=settings.keep_recent_tokens)
    if cut.first_kept_entry_index >= len(path) or not path[cut.first_kept_entry_index].id:
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index

    def messages(lo: int, hi: int) -> list[Message]:
        return [m for n in path[lo:hi] if (m := entry_message(n)) is not None]

    to_summarize = messages(start, history_end)
    prefix = messages(cut.turn_start_index, cut.first_kept_entry_index) if cut.is_split_turn else []
    file_ops = FileOps()
    previous_summary: str | None = None
    if prev >= 0:
        previous = path[prev].data
        summary = previous.get("summary")
        previous_summary = summary if isinstance(summary, str) else None
        if not previous.get("fromHook"):
            file_ops.add_details(previous.get("details"))
    for message in (*to_summarize, *prefix):
        file_ops.add_message(message)
    return CompactionPreparation(
        first_kept_entry_id=path[cut.first_kept_entry_index].id,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        file_ops=file_ops,
        settings=settings,
        cut=cut,
    )


# --- convertToLlm (7.6) ------------------------------------------------------------------------

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"


def bash_execution_text(message: Mapping[str, Any]) -> str:
    text = f"Ran `{_text(message, 'command')}`\n"
    output = _text(message, "output")
    text += f"```\n{output}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0:
        text += f"\n\nCommand exited with code {jsjson.dumps(exit_code)}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _user(text: str, timestamp: Any) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp}


def convert_to_llm(messages: Iterable[Mapping[str, Any]]) -> list[Message]:
    """pi's convertToLlm: app-only roles become user messages; unknown roles are dropped."""
    out: list[Message] = []
    for m in messages:
        role, ts = m.get("role"), m.get("timestamp")
        if role == "bashExecution":
            if not m.get("excludeFromContext"):
                out.append(_user(bash_execution_text(m), ts))
        elif role == "custom":
            content = m.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            out.append({"role": "user", "content": blocks, "timestamp": ts})
        elif role == "branchSummary":
            out.append(_user(BRANCH_SUMMARY_PREFIX + _text(m, "summary") + BRANCH_SUMMARY_SUFFIX, ts))
        elif role == "compactionSummary":
            out.append(_user(COMPACTION_SUMMARY_PREFIX + _text(m, "summary") + COMPACTION_SUMMARY_SUFFIX, ts))
        elif role in ("user", "assistant", "toolResult"):
            out.append(dict(m))
    return out


# --- serializeConversation (16.6) --------------------------------------------------------------

TOOL_RESULT_MAX_CHARS = 2000


def truncate_for_summary(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    length = js_len(text)
    if length <= max_chars:
        return text
    return f"{js_slice(text, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def serialize_conversation(messages: Iterable[Mapping[str, Any]]) -> str:
    """Flatten LLM messages to text so the summarizer reads them instead of continuing them."""
    parts: list[str] = []
    for m in messages:
        role = m.get("role")
        if role == "user":
            text = content_text(m.get("content"), "")
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            texts: list[str] = []
            thinking: list[str] = []
            calls: list[str] = []
            for block in _blocks(m.get("content")):
                kind = block.get("type")
                if kind == "text":
                    texts.append(_text(block, "text"))
                elif kind == "thinking":
                    thinking.append(_text(block, "thinking"))
                elif kind == "toolCall":
                    args = block.get("arguments")
                    items = args.items() if isinstance(args, dict) else ()
                    rendered = ", ".join(f"{k}={jsjson.dumps(v)}" for k, v in items)
                    calls.append(f"{block.get('name')}({rendered})")
            if thinking:
                parts.append("[Assistant thinking]: " + "\n".join(thinking))
            if texts:
                parts.append("[Assistant]: " + "\n".join(texts))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif role == "toolResult":
            text = content_text(m.get("content"), "")
            if text:
                parts.append(f"[Tool result]: {truncate_for_summary(text)}")
    return "\n\n".join(parts)


def _conversation(messages: Iterable[Mapping[str, Any]]) -> str:
    return f"<conversation>\n{serialize_conversation(convert_to_llm(messages))}\n</conversation>\n\n"


def summary_prompt(
    messages: Iterable[Mapping[str, Any]],
    *,
    previous_summary: str | None = None,
    custom_instructions: str | None = None,
) -> str:
    base = UPDATE_SUMMARIZATION_PROMPT if previous_summary else SUMMARIZATION_PROMPT
    if custom_instructions:
        base = f"{base}\n\nAdditional focus: {custom_instructions}"
    text = _conversation(messages)
    if previous_summary:
        text += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    return text + base


def turn_prefix_prompt(messages: Iterable[Mapping[str, Any]]) -> str:
    return _conversation(messages) + TURN_PREFIX_SUMMARIZATION_PROMPT


def branch_summary_prompt(
    messages: Iterable[Mapping[str, Any]], *, custom_instructions: str | None = None, replace_instructions: bool = False
) -> str:
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = f"{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {custom_instructions}"
    else:
        instructions = BRANCH_SUMMARY_PROMPT
    return _conversation(messages) + instructions


# --- compact() with an injected LLM call (16.6) ------------------------------------------------


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """One summarization call: system prompt, one user text, a token cap, an optional reasoning level."""

    system: str
    prompt: str
    max_tokens: int
    reasoning: str | None


# Returns the reply's text blocks joined with "\n"; raises on a reply with stopReason "error".
Summarize = Callable[[SummaryRequest], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class CompactionResult:
    summary: str
    first_kept_entry_id: str
    tokens_before: int | float
    details: dict[str, list[str]]


async def compact(
    preparation: CompactionPreparation, *, summarize: Summarize, custom_instructions: str | None = None
) -> CompactionResult:
    """Summaries for a prepared compaction; a split turn summarizes history and prefix in parallel."""
    reserve = preparation.settings.reserve_tokens
    history = SummaryRequest(
        system=SUMMARIZATION_SYSTEM_PROMPT,
        prompt=summary_prompt(
            preparation.messages_to_summarize,
            previous_summary=preparation.previous_summary,
            custom_instructions=custom_instructions,
        ),
        max_tokens=math.floor(0.8 * reserve),
        reasoning=SUMMARY_REASONING,
    )
    if preparation.is_split_turn and preparation.turn_prefix_messages:
        prefix = SummaryRequest(
            system=SUMMARIZATION_SYSTEM_PROMPT,
            prompt=turn_prefix_prompt(preparation.turn_prefix_messages),
            max_tokens=math.floor(0.5 * reserve),
            reasoning=SUMMARY_REASONING,
        )

        async def history_text() -> str:
            return await summarize(history) if preparation.messages_to_summarize else NO_PRIOR_HISTORY

        history_summary, prefix_summary = await asyncio.gather(history_text(), summarize(prefix))
        summary = history_summary + SPLIT_TURN_SEPARATOR + prefix_summary
    else:
        summary = await summarize(history)
    read_files, modified_files = preparation.file_ops.file_lists()
    return CompactionResult(
        summary=summary + format_file_operations(read_files, modified_files),
        first_kept_entry_id=preparation.first_kept_entry_id,
        tokens_before=preparation.tokens_before,
        details={"readFiles": read_files, "modifiedFiles": modified_files},
    )


# --- Branch summaries (15.2, 15.3) -------------------------------------------------------------


def collect_entries_for_branch_summary(
    idx: TreeIndex, *, old_leaf_id: str | None, target_id: str
) -> tuple[list[Node], str | None]:
    """Entries from the old leaf up to (not including) the common ancestor with target, oldest first.

    Compaction entries are included, as pi's code does (tree.md says otherwise).
    """
    if not old_leaf_id:
        return [], None
    ancestor = common_ancestor(idx, old_leaf_id, target_id)
    entries: list[Node] = []
    seen: set[str] = set()
    current: str | None = old_leaf_id
    while current and current != ancestor and current not in seen:
        node = idx.by_id.get(current)
        if node is None:
            break
        seen.add(current)
        entries.append(node)
        current = node.parent_id
    entries.reverse()
    return entries, ancestor


def _branch_message(node: Node) -> Message | None:
    # Tool results are skipped: the assistant's tool call already says what happened.
    if node.type == "message" and node.role == "toolResult":
        return None
    return entry_message(node)


@dataclass(frozen=True, slots=True)
class BranchPreparation:
    messages: list[Message]
    file_ops: FileOps
    total_tokens: int


def branch_token_budget(*, context_window: int | None, reserve_tokens: int = BRANCH_SUMMARY_RESERVE_TOKENS) -> int:
    return (context_window or DEFAULT_CONTEXT_WINDOW) - reserve_tokens


def prepare_branch_entries(entries: Sequence[Node], *, token_budget: int = 0) -> BranchPreparation:
    """Newest-first fill up to token_budget (0 = unlimited); file ops come from every entry."""
    file_ops = FileOps()
    for node in entries:
        if node.type == "branch_summary" and not node.data.get("fromHook"):
            file_ops.add_details(node.data.get("details"))
    messages: list[Message] = []
    total = 0
    for node in reversed(entries):
        message = _branch_message(node)
        if message is None:
            continue
        file_ops.add_message(message)
        tokens = estimate_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            # A summary is dense context: squeeze it in while under 90% of the budget.
            if node.type in ("compaction", "branch_summary") and total < token_budget * 0.9:
                messages.insert(0, message)
                total += tokens
            break
        messages.insert(0, message)
        total += tokens
    return BranchPreparation(messages, file_ops, total)


@dataclass(frozen=True, slots=True)
class BranchSummary:
    summary: str
    details: dict[str, list[str]]


async def generate_branch_summary(
    entries: Sequence[Node],
    *,
    summarize: Summarize,
    context_window: int | None = None,
    reserve_tokens: int = BRANCH_SUMMARY_RESERVE_TOKENS,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
) -> BranchSummary:
    """pi's generateBranchSummary; an empty branch gives "No content to summarize" without a call."""
    prepared = prepare_branch_entries(
        entries, token_budget=branch_token_budget(context_window=context_window, reserve_tokens=reserve_tokens)
    )
    if not prepared.messages:
        return BranchSummary(NO_BRANCH_CONTENT, {"readFiles": [], "modifiedFiles": []})
    request = SummaryRequest(
        system=SUMMARIZATION_SYSTEM_PROMPT,
        prompt=branch_summary_prompt(
            prepared.messages, custom_instructions=custom_instructions, replace_instructions=replace_instructions
        ),
        max_tokens=BRANCH_SUMMARY_MAX_TOKENS,
        reasoning=None,
    )
    text = await summarize(request)
    read_files, modified_files = prepared.file_ops.file_lists()
    summary = BRANCH_SUMMARY_PREAMBLE + text + format_file_operations(read_files, modified_files)
    return BranchSummary(summary, {"readFiles": read_files, "modifiedFiles": modified_files})
