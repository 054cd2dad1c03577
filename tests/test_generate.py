"""tests/generate.py: deterministic, what was asked for, pi's shapes (the oracle tests check the files
in the real pi: tests/oracle/test_files.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.generate import generate, js_dumps, js_number
from tests.paths import ROOT


def _entries(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode().splitlines()[1:]]


def test_the_same_options_give_the_same_bytes_and_the_seed_alone_gives_the_session_id():
    a = generate(300, seed=5, labels=4, compactions=1)
    assert generate(300, seed=5, labels=4, compactions=1) == a
    assert generate(300, seed=6, labels=4, compactions=1) != a
    header = json.loads(a.split(b"\n", 1)[0])
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header["version"] == 3
    assert json.loads(generate(40, seed=5, branch_prob=0.5).split(b"\n", 1)[0])["id"] == header["id"]
    assert json.loads(generate(40, seed=6).split(b"\n", 1)[0])["id"] != header["id"]


@pytest.mark.parametrize(("entries", "labels", "compactions"), [(10, 2, 0), (120, 3, 2), (2000, 20, 10)])
def test_what_was_asked_for_is_there(entries, labels, compactions):
    found = _entries(generate(entries, seed=3, labels=labels, compactions=compactions, branch_prob=0.1))
    assert len(found) == entries
    types = Counter(e["type"] for e in found)
    assert (types["label"], types["compaction"]) == (labels, compactions)
    assert len({e["id"] for e in found}) == entries
    assert [e["parentId"] for e in found].count(None) == 1


def test_without_branches_the_file_is_one_chain():
    found = _entries(generate(1500, seed=4, branch_prob=0.0, compactions=3, labels=10))
    assert [e["parentId"] for e in found] == [None] + [e["id"] for e in found[:-1]]


def test_entries_are_every_type_pi_writes_in_pis_key_order():
    found = _entries(generate(3000, seed=2, branch_prob=0.2, compactions=5, labels=20, custom_prob=0.1))
    by_type = {e["type"]: e for e in found}
    roles = {e["message"]["role"] for e in found if e["type"] == "message"}
    assert roles == {"user", "assistant", "toolResult"}
    base = ["type", "id", "parentId", "timestamp"]
    assert list(by_type["message"]) == [*base, "message"]
    assert list(by_type["compaction"]) == [*base, "summary", "firstKeptEntryId", "tokensBefore", "details", "fromHook"]
    assert list(by_type["branch_summary"]) == [*base, "fromId", "summary", "details", "fromHook"]
    assert list(by_type["model_change"]) == [*base, "provider", "modelId"]
    assert list(by_type["thinking_level_change"]) == [*base, "thinkingLevel"]
    assert list(by_type["session_info"]) == [*base, "name"]
    assert list(by_type["custom"]) == ["type", "customType", "data", "id", "parentId", "timestamp"]
    assert list(by_type["custom_message"])[:4] == ["type", "customType", "content", "display"]
    assert list(by_type["custom_message"])[-3:] == ["id", "parentId", "timestamp"]
    assert {tuple(e) for e in found if e["type"] == "label"} == {(*base, "targetId", "label"), (*base, "targetId")}
    blocks = {b["type"] for e in found if e["type"] == "message" for b in e["message"]["content"] if type(b) is dict}
    assert blocks == {"text", "thinking", "toolCall"}
    for e in found:
        if e["type"] == "branch_summary":
            assert e["fromId"] == e["parentId"]  # as pi's branchWithSummary writes it


def test_numbers_are_written_as_javascript_writes_them():
    cases = {
        5.0: "5",
        0.000015: "0.000015",
        1e21: "1e+21",
        1.5e-7: "1.5e-7",
        123456789012345680000.0: "123456789012345680000",
        -0.0: "0",
        0.1 + 0.2: "0.30000000000000004",
        2.5e-300: "2.5e-300",
        7: "7",
    }
    assert {x: js_number(x) for x in cases} == cases
    assert js_dumps({"a": [1.0, 'é\n"', None, True], "2": {}}) == '{"a":[1,"é\\n\\"",null,true],"2":{}}'


def test_the_script_writes_what_the_module_makes(tmp_path: Path):
    out = tmp_path / "s.jsonl"
    options = "--entries 200 --seed 9 --branch-prob 0.2 --compactions 2 --labels 5 --branch-summary-prob 0.5"
    args = [*options.split(), "--far-jump-prob", "0.4", "--custom-prob", "0.05", "--cwd", "/x y"]
    subprocess.run([sys.executable, str(ROOT / "tests" / "generate.py"), *args, "--out", str(out)], check=True)
    expected = generate(
        200,
        seed=9,
        branch_prob=0.2,
        compactions=2,
        labels=5,
        branch_summary_prob=0.5,
        far_jump_prob=0.4,
        custom_prob=0.05,
        cwd="/x y",
    )
    assert out.read_bytes() == expected
