"""pi v3 session files made up from a seed: deterministic, and valid for the real pi.

    python3 tests/generate.py --entries 10000 --seed 1 --branch-prob 0.05 --compactions 10 \\
        --labels 50 --out session.jsonl

    from tests.generate import generate
    data = generate(10_000, seed=1, branch_prob=0.05, compactions=10, labels=50)

Stdlib only (the benchmarks run it as a script). The same options give the same bytes; the session
id depends on the seed alone, so files made with one seed are one session to piweb.

What pi writes, in pi's key order (lines are serialised as JSON.stringify writes them):

- the header: type, version 3, id, timestamp, cwd;
- turns: a user message, then assistant messages (text, some with thinking, some with tool calls),
  each tool call answered by a toolResult message, until an assistant answers without a call
  (stopReason "stop", now and then "aborted" or "error" with an errorMessage);
- between turns: model_change (the following assistants use that model), thinking_level_change,
  session_info (a name, once), custom and custom_message entries (--custom-prob each), labels
  (--labels, a few of them clearing an earlier label), compactions (--compactions, spread over the
  file: firstKeptEntryId is a user or assistant message on the path since the previous compaction);
- branches: at a turn boundary, with --branch-prob, the leaf goes back to an earlier boundary (one of
  the last 30 on the path, or with --far-jump-prob any boundary of the session), as pi's /tree does;
  with --branch-summary-prob the jump writes a branch_summary there (fromId = its parent, as pi's
  branchWithSummary writes it). Every entry is a child of the leaf, so the file has one root, and
  with --branch-prob 0 it is one chain.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

DEFAULT_CWD = "/home/dev/projects/demo"
START = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)

MODELS = (  # provider, model id, api
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
    ("anthropic", "claude-opus-4-5", "anthropic-messages"),
    ("openai", "gpt-5.1-codex", "openai-responses"),
    ("google", "gemini-2.5-pro", "google-generative-ai"),
)
PRICES = {  # dollars per million tokens: input, output, cache read, cache write
    "claude-sonnet-4-5": (3.0, 15.0, 0.3, 3.75),
    "claude-opus-4-5": (5.0, 25.0, 0.5, 6.25),
    "gpt-5.1-codex": (1.25, 10.0, 0.125, 0.0),
    "gemini-2.5-pro": (1.25, 10.0, 0.31, 0.0),
}
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
TOOLS = ("bash", "read", "edit", "write", "grep")
TOOL_WEIGHTS = (45, 20, 25, 4, 6)
FILES = (
    "src/session/tree.ts", "src/session/store.ts", "src/cli/main.ts", "src/tools/shell.ts", "README.md",
    "docs/format.md", "app/models.py", "app/views.py", "app/tests/test_tree.py", "pyproject.toml",
    "package.json", "tests/fixtures/tiny.jsonl", "web/static/app.js", "web/templates/base.html",
)  # fmt: skip
COMMANDS = (
    "npm test", "npm run lint", "git status --short", "git log --oneline -5", "ls -la src",
    "python -m pytest -q", "rg -n 'parentId' src", "wc -l src/session/*.ts", "cat package.json",
)  # fmt: skip
WORDS = (
    "the a an of to in on for with from by as is are was be it this that these those we you they "
    "session entry entries tree branch branches leaf root parent child children path context message "
    "messages summary compaction label labels model thinking tool call result output error warning "
    "file files line lines read write edit run test tests check build import export parse serialize "
    "json jsonl string number list map index cache query database row rows column commit rollback "
    "function class method return value values type types field fields key keys order first last next "
    "now then first let me look at the code again it seems the fix works but one case still fails "
    "because however so also already still just only maybe should could would must"
)
VOCABULARY = tuple(WORDS.split())
SPICE = ("é", "ü", "ß", "→", "—", "…", "✓", "±", "日本語", "🙂", "Ωμέγα", "\t", '"quoted"', "back\\slash", "<b>")
CUSTOM_TYPES = ("piweb-gen/note", "piweb-gen/reminder", "extension:todo")
LABEL_WORDS = ("checkpoint", "good", "bug", "wip", "todo", "keep", "idea")


@dataclass(frozen=True)
class Options:
    entries: int
    seed: int = 1
    branch_prob: float = 0.05
    branch_summary_prob: float = 0.3
    far_jump_prob: float = 0.15
    compactions: int = 0
    labels: int = 0
    custom_prob: float = 0.01
    cwd: str = DEFAULT_CWD


# --- serialising as JSON.stringify does ----------------------------------------------------------


def js_number(x: float) -> str:
    """A number as JavaScript prints it: 5 (not 5.0), 0.000015 (not 1.5e-05), 1e+21, 1.5e-7."""
    if isinstance(x, bool) or not math.isfinite(x):
        raise ValueError(f"not a JSON number: {x!r}")
    if isinstance(x, int) or (x.is_integer() and abs(x) < 2**53):
        return str(int(x))
    text = repr(x)  # the shortest digits that read back as x, as JavaScript picks them
    mantissa, _, exp_text = text.partition("e")
    if not exp_text:
        return text.removesuffix(".0")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "")
    exp = int(exp_text)
    if -7 < exp < 21:  # JavaScript writes these without an exponent
        if exp < 0:
            return f"{sign}0.{'0' * (-exp - 1)}{digits}"
        whole = digits.ljust(exp + 1, "0")
        return f"{sign}{whole[: exp + 1]}" + (f".{digits[exp + 1 :]}" if len(digits) > exp + 1 else "")
    fraction = f".{digits[1:]}" if len(digits) > 1 else ""
    return f"{sign}{digits[0]}{fraction}e{'+' if exp > 0 else '-'}{abs(exp)}"


def js_dumps(value: Any) -> str:
    """JSON.stringify(value): compact, keys in insertion order, non-ASCII as is."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{js_dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(js_dumps(v) for v in value) + "]"
    raise TypeError(f"not JSON: {type(value).__name__}")


def iso(t: datetime) -> str:
    """new Date(t).toISOString()"""
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def epoch_ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


# --- text ------------------------------------------------------------------------------------------


def _corpus() -> str:
    """~300 kB of words, paths, commands, newlines and awkward characters, the same on every run."""
    rng = random.Random(20260105)
    parts: list[str] = []
    size = 0
    while size < 300_000:
        roll = rng.random()
        if roll < 0.82:
            word = rng.choice(VOCABULARY)
        elif roll < 0.88:
            word = rng.choice(FILES)
        elif roll < 0.90:
            word = "`" + rng.choice(COMMANDS) + "`"
        elif roll < 0.95:
            word = rng.choice(("\n", "\n\n", ".\n", ":\n- "))
        else:
            word = rng.choice(SPICE)
        parts.append(word)
        size += len(word) + 1
    return " ".join(parts)


_CORPUS: list[str] = []


class Generator:
    """Writes one session: call run(), read lines and stats."""

    def __init__(self, options: Options) -> None:
        if options.entries < 1:
            raise ValueError("--entries must be at least 1")
        self.o = options
        self.rng = random.Random(options.seed)
        if not _CORPUS:
            _CORPUS.append(_corpus())
        self.corpus = _CORPUS[0]
        self.clock = START
        self.lines: list[str] = []
        self.parent: dict[str, str | None] = {}
        self.kind: dict[str, str] = {}  # id -> entry type, or the role of a message
        self.order: list[str] = []  # ids in file order
        self.boundaries: list[str] = []  # entries a new user turn may follow
        self.is_boundary: set[str] = set()
        self.leaf: str | None = None
        self.model = MODELS[0]
        self.labelled: list[str] = []
        self.kept_by: dict[str, str] = {}  # compaction id -> its firstKeptEntryId
        self.stats: dict[str, int] = {}
        self.compact_at: list[int] = []  # entry counts from which each compaction is due
        self.label_at: list[int] = []  # and each label
        self.named = False

    # primitives

    def draw_id(self) -> str:
        while True:
            entry_id = f"{self.rng.getrandbits(32):08x}"
            if entry_id not in self.parent:
                return entry_id

    def tick(self, low: float = 0.5, high: float = 60.0) -> datetime:
        self.clock += timedelta(milliseconds=int(self.rng.uniform(low, high) * 1000))
        return self.clock

    def text(self, length: int) -> str:
        length = max(1, length)
        corpus = self.corpus
        if length >= len(corpus):
            return (corpus * (length // len(corpus) + 1))[:length]
        start = self.rng.randrange(len(corpus) - length)
        return corpus[start : start + length].strip() or "ok"

    def size(self, median: float, sigma: float, low: int, high: int) -> int:
        return int(min(high, max(low, self.rng.lognormvariate(math.log(median), sigma))))

    def append(self, entry_type: str, body: Callable[[datetime], dict[str, Any]], kind: str = "") -> str:
        """An entry under the leaf (pi's key order: type, id, parentId, timestamp, then the body)."""
        entry_id = self.draw_id()
        t = self.tick()
        entry = {"type": entry_type, "id": entry_id, "parentId": self.leaf, "timestamp": iso(t), **body(t)}
        self.write(entry, entry_id, kind or entry_type)
        return entry_id

    def append_custom(self, entry_type: str, body: dict[str, Any]) -> str:
        """custom and custom_message entries: pi writes their own fields before id, parentId, timestamp."""
        entry_id = self.draw_id()
        t = self.tick()
        entry = {"type": entry_type, **body, "id": entry_id, "parentId": self.leaf, "timestamp": iso(t)}
        self.write(entry, entry_id, entry_type)
        return entry_id

    def write(self, entry: dict[str, Any], entry_id: str, kind: str) -> None:
        self.lines.append(js_dumps(entry))
        self.parent[entry_id] = self.leaf
        self.kind[entry_id] = kind
        self.order.append(entry_id)
        self.leaf = entry_id
        self.stats[kind] = self.stats.get(kind, 0) + 1

    def boundary(self) -> None:
        assert self.leaf is not None
        self.boundaries.append(self.leaf)
        self.is_boundary.add(self.leaf)

    def path(self) -> list[str]:
        ids, at = [], self.leaf
        while at is not None:
            ids.append(at)
            at = self.parent[at]
        return ids[::-1]

    # messages

    def user(self) -> str:
        long = self.rng.random() < 0.04
        text = self.text(self.rng.randint(600, 3000) if long else self.rng.randint(20, 500))
        content: Any = text if self.rng.random() < 0.05 else [{"type": "text", "text": text}]
        written = self.rng.randint(5, 900)
        return self.append(
            "message",
            lambda t: {"message": {"role": "user", "content": content, "timestamp": epoch_ms(t) - written}},
            "user",
        )

    def assistant(self, calls: int) -> list[tuple[str, str]]:
        provider, model, api = self.model
        content: list[dict[str, Any]] = []
        if self.rng.random() < 0.2:
            signature = base64.b64encode(self.rng.randbytes(self.rng.randint(48, 300))).decode()
            thinking = self.text(self.size(300, 0.8, 40, 5000))
            content.append({"type": "thinking", "thinking": thinking, "thinkingSignature": signature})
        if calls == 0 or self.rng.random() < 0.6:
            n = self.size(400, 0.9, 10, 8000) if calls == 0 else self.size(80, 0.6, 10, 600)
            content.append({"type": "text", "text": self.text(n)})
        answered: list[tuple[str, str]] = []
        for _ in range(calls):
            name = self.rng.choices(TOOLS, TOOL_WEIGHTS)[0]
            call_id = "toolu_" + base64.b32encode(self.rng.randbytes(10)).decode().lower()
            content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": self.arguments(name)})
            answered.append((call_id, name))
        stop = "toolUse" if calls else "stop"
        roll = self.rng.random()
        if not calls and roll < 0.015:
            stop = "aborted"
        elif not calls and roll < 0.025:
            stop = "error"
        tokens = [self.rng.randint(1, 60), self.rng.randint(10, 4000)]
        tokens += [self.rng.randint(0, 160_000), self.rng.randint(0, 25_000)]
        prices = PRICES[model]
        costs = [round(n * p / 1e6, 9) for n, p in zip(tokens, prices, strict=True)]
        usage = {
            "input": tokens[0], "output": tokens[1], "cacheRead": tokens[2], "cacheWrite": tokens[3],
            "totalTokens": sum(tokens),
            "cost": {"input": costs[0], "output": costs[1], "cacheRead": costs[2], "cacheWrite": costs[3],
                     "total": sum(costs)},
        }  # fmt: skip
        took = self.rng.randint(400, 40_000)

        def body(t: datetime) -> dict[str, Any]:
            message: dict[str, Any] = {"role": "assistant", "content": content, "api": api, "provider": provider}
            message.update({"model": model, "usage": usage, "stopReason": stop})
            if stop == "aborted":
                message["errorMessage"] = "Request was aborted"
            elif stop == "error":
                message["errorMessage"] = "529 overloaded_error: Overloaded"
            message["timestamp"] = epoch_ms(t) - took
            return {"message": message}

        self.append("message", body, "assistant")
        return answered

    def arguments(self, tool: str) -> dict[str, Any]:
        if tool == "bash":
            command = self.rng.choice(COMMANDS) if self.rng.random() < 0.7 else self.text(self.rng.randint(10, 160))
            return {"command": command}
        if tool == "read":
            return {"path": self.rng.choice(FILES)}
        if tool == "edit":
            old, new = self.text(self.size(100, 0.9, 5, 5000)), self.text(self.size(130, 0.9, 5, 5000))
            return {"path": self.rng.choice(FILES), "oldText": old, "newText": new}
        if tool == "write":
            return {"path": self.rng.choice(FILES), "content": self.text(self.size(800, 0.8, 50, 12_000))}
        return {"pattern": self.rng.choice(VOCABULARY), "path": "src"}

    def tool_result(self, call_id: str, tool: str) -> None:
        text = self.text(self.size(400, 1.1, 2, 40_000))
        failed = self.rng.random() < 0.05
        diff = self.text(self.size(200, 0.8, 10, 6000)) if tool == "edit" and not failed else None

        def body(t: datetime) -> dict[str, Any]:
            message: dict[str, Any] = {"role": "toolResult", "toolCallId": call_id, "toolName": tool}
            message["content"] = [{"type": "text", "text": text}]
            if diff is not None:
                message["details"] = {"diff": diff, "firstChangedLine": self.rng.randint(1, 400)}
            message["isError"] = failed
            message["timestamp"] = epoch_ms(t)
            return {"message": message}

        self.append("message", body, "toolResult")

    # entries between turns

    def jump(self) -> None:
        """The leaf back to an earlier turn boundary; maybe a branch_summary there."""
        if self.rng.random() < self.o.far_jump_prob:
            choices = [b for b in self.boundaries if b != self.leaf]
        else:
            choices, at, steps = [], self.parent[self.leaf] if self.leaf else None, 0
            while at is not None and len(choices) < 30 and steps < 5000:
                if at in self.is_boundary:
                    choices.append(at)
                at, steps = self.parent[at], steps + 1
        if not choices:
            return
        target = self.rng.choice(choices)
        self.leaf = target
        self.stats["jumps"] = self.stats.get("jumps", 0) + 1
        if self.rng.random() < self.o.branch_summary_prob:
            read, changed = self.rng.sample(FILES, 2), self.rng.sample(FILES, 1)
            summary = "The user went back to try another way.\n\n" + self.text(self.size(700, 0.6, 80, 5000))
            details = {"readFiles": read, "modifiedFiles": changed}
            self.append(
                "branch_summary",
                lambda t: {"fromId": target, "summary": summary, "details": details, "fromHook": False},
            )
            self.boundary()

    def compaction(self) -> bool:
        """A compaction at the leaf, keeping the newer part of what the previous one kept."""
        region, at = [], self.leaf
        while at is not None and self.kind[at] != "compaction":  # the path since the last compaction
            region.append(at)
            at = self.parent[at]
        region.reverse()
        if len(region) < 8:
            return False
        candidates = [e for e in region[len(region) * 3 // 5 :] if self.kind[e] in ("user", "assistant")]
        if not candidates:
            return False
        kept = self.rng.choice(candidates)
        read, changed = self.rng.sample(FILES, 4), self.rng.sample(FILES, 2)
        summary = (
            "## Goal\n" + self.text(self.size(2500, 0.4, 400, 10_000)) + "\n\n## Progress\n"
            + self.text(self.size(800, 0.5, 100, 4000))
            + "\n\n<read-files>\n" + "\n".join(read) + "\n</read-files>\n\n<modified-files>\n"
            + "\n".join(changed) + "\n</modified-files>"
        )  # fmt: skip
        tokens = self.rng.randint(100_000, 195_000)
        details = {"readFiles": read, "modifiedFiles": changed}
        compaction = self.append(
            "compaction",
            lambda t: {"summary": summary, "firstKeptEntryId": kept, "tokensBefore": tokens, "details": details,
                       "fromHook": False},
        )  # fmt: skip
        self.kept_by[compaction] = kept
        return True

    def label(self) -> None:
        if self.labelled and self.rng.random() < 0.12:
            target = self.labelled.pop(self.rng.randrange(len(self.labelled)))
            self.append("label", lambda t: {"targetId": target})  # no label: cleared
            return
        target = self.rng.choice(self.order)
        name = f"{self.rng.choice(LABEL_WORDS)}-{self.rng.randint(1, 999)}"
        self.labelled.append(target)
        self.append("label", lambda t: {"targetId": target, "label": name})

    def custom(self) -> None:
        data = {"step": len(self.order), "tags": self.rng.sample(LABEL_WORDS, 2), "ok": self.rng.random() < 0.9}
        self.append_custom("custom", {"customType": self.rng.choice(CUSTOM_TYPES), "data": data})

    def custom_message(self) -> None:
        text = self.text(self.rng.randint(20, 600))
        content: Any = text if self.rng.random() < 0.5 else [{"type": "text", "text": text}]
        body: dict[str, Any] = {"customType": self.rng.choice(CUSTOM_TYPES), "content": content}
        body["display"] = self.rng.random() < 0.7
        if self.rng.random() < 0.5:
            body["details"] = {"source": "generator", "n": len(self.order)}
        self.append_custom("custom_message", body)

    def between_turns(self) -> bool:
        """One entry, or a jump, at a turn boundary; False when it is time for a user message."""
        done = len(self.order)
        rng, compact_at, label_at = self.rng, self.compact_at, self.label_at
        if done and self.o.branch_prob and rng.random() < self.o.branch_prob and len(self.boundaries) > 1:
            self.jump()
            return False  # a user message follows the jump (or its summary)
        if compact_at and done >= compact_at[0]:
            if self.compaction() or self.o.entries - done < 20:
                compact_at.pop(0)  # written, or no room left for it
            else:
                return False  # not enough on the path yet: one more turn first
        elif label_at and done >= label_at[0]:
            label_at.pop(0)
            self.label()
        elif done >= 3 and not self.named:
            self.named = True
            self.append("session_info", lambda t: {"name": f"Generated session {self.o.seed}"})
        elif rng.random() < 0.03:
            self.model = rng.choice(MODELS)
            self.append("model_change", lambda t: {"provider": self.model[0], "modelId": self.model[1]})
        elif rng.random() < 0.04:
            level = rng.choice(THINKING_LEVELS)
            self.append("thinking_level_change", lambda t: {"thinkingLevel": level})
        elif rng.random() < self.o.custom_prob:
            self.custom()
        elif rng.random() < self.o.custom_prob:
            self.custom_message()
        else:
            return False
        if done < len(self.order):
            self.boundary()
        return True

    def turn(self) -> None:
        """A user message, then assistant messages and the results of their tool calls, until an
        assistant answers without a call (or the file has its entries)."""
        n = self.o.entries
        if len(self.order) >= n:
            return
        self.user()
        calls: list[tuple[str, str]] = []
        while len(self.order) < n:
            if self.label_at and n - len(self.order) <= len(self.label_at):
                self.label_at.pop(0)  # the file ends soon: the labels asked for go in now
                self.label()
                continue
            if calls:
                self.tool_result(*calls.pop(0))
                continue
            roll = self.rng.random()
            calls = self.assistant(0 if roll < 0.35 else 1 if roll < 0.75 else self.rng.randint(2, 4))
            if not calls:
                self.boundary()
                return

    def spread(self, count: int, low: int) -> list[int]:
        """count entry numbers spread over [low, entries - 10], in order."""
        high = max(low + 1, self.o.entries - 10)
        if count <= 0:
            return []
        step = (high - low) / count
        return [int(low + step * (i + self.rng.uniform(0.2, 0.8))) for i in range(count)]

    def run(self) -> list[str]:
        n = self.o.entries
        id_rng = random.Random(f"session-{self.o.seed}")  # the session id depends on the seed alone
        session_id = str(_uuid4(id_rng))
        header = {"type": "session", "version": 3, "id": session_id, "timestamp": iso(START), "cwd": self.o.cwd}
        self.lines.append(js_dumps(header))
        self.compact_at = self.spread(self.o.compactions, min(50, n // 2))
        self.label_at = sorted(self.rng.randint(2, max(3, n - 5)) for _ in range(self.o.labels))

        # pi starts a session with the model and the thinking level.
        self.append("model_change", lambda t: {"provider": self.model[0], "modelId": self.model[1]})
        self.boundary()
        if len(self.order) < n:
            level = self.rng.choice(THINKING_LEVELS)
            self.append("thinking_level_change", lambda t: {"thinkingLevel": level})
            self.boundary()
        self.turn()  # then the first turn: pi writes a file once it has an assistant message
        while len(self.order) < n:
            if not self.between_turns():
                self.turn()
        self.stats["entries"] = len(self.order)
        self.stats["leaf path"] = len(self.path())
        return self.lines


def _uuid4(rng: random.Random) -> str:
    bits = rng.getrandbits(128)
    bits = (bits & ~(0xF << 76)) | (4 << 76)  # version 4
    bits = (bits & ~(0x3 << 62)) | (0x2 << 62)  # RFC 4122 variant
    h = f"{bits:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def generate(entries: int, seed: int = 1, **options: Any) -> bytes:
    """The file's bytes (header and entries, each line ending in a newline)."""
    lines = Generator(Options(entries=entries, seed=seed, **options)).run()
    return ("\n".join(lines) + "\n").encode()


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = Options(entries=1)
    ap.add_argument("--entries", type=int, required=True, help="entries after the header line")
    ap.add_argument("--seed", type=int, default=defaults.seed)
    ap.add_argument(
        "--branch-prob",
        type=float,
        default=defaults.branch_prob,
        help="at each turn boundary, the chance that the leaf goes back (0: one chain)",
    )
    ap.add_argument(
        "--branch-summary-prob",
        type=float,
        default=defaults.branch_summary_prob,
        help="the chance that a jump writes a branch_summary",
    )
    ap.add_argument(
        "--far-jump-prob",
        type=float,
        default=defaults.far_jump_prob,
        help="the share of jumps to any earlier boundary (the others: one of the last 30 on the path)",
    )
    ap.add_argument("--compactions", type=int, default=defaults.compactions)
    ap.add_argument("--labels", type=int, default=defaults.labels, help="label entries (about 1 in 8 clears one)")
    ap.add_argument(
        "--custom-prob",
        type=float,
        default=defaults.custom_prob,
        help="at each turn boundary, the chance of a custom entry, and that of a custom_message",
    )
    ap.add_argument("--cwd", default=defaults.cwd)
    ap.add_argument("--out", type=Path, required=True)
    args = vars(ap.parse_args(argv))
    out = args.pop("out")
    generator = Generator(Options(**{f.name: args[f.name] for f in fields(Options)}))
    lines = generator.run()
    out.write_bytes(("\n".join(lines) + "\n").encode())
    print(json.dumps({"out": str(out), **asdict(generator.o), **generator.stats}), file=sys.stderr)


if __name__ == "__main__":
    main()
