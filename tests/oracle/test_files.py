"""Session files imported into piweb read exactly as the real pi reads them.

Covers generated v3 sessions (branching, compactions, labels, session names), hand-written fixtures
for every format case (tests/fixtures/handmade: v1 migration incl. odd firstKeptEntryIndex values, v2
hookMessage, duplicated header, custom messages, root branch summary, unknown entry types, numbers,
integer-like keys) and pi's own v1 fixture (tests/fixtures/pi/large-session.jsonl).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sessions_app.core import context
from sessions_app.core.tree import TreeIndex, children, index
from sessions_app.store.importing import pipeline
from tests.oracle.oracle import (
    GENERATED,
    OWN,
    PiOracle,
    StaticFile,
    assert_contexts_match,
    assert_listing_matches,
    assert_same_json,
    assert_tree_matches,
    export_bytes,
    nodes_of,
    piweb_context,
    read_lines,
)

pytestmark = [pytest.mark.oracle, pytest.mark.django_db]

ALL = [*GENERATED, *OWN, "large-session"]
MIGRATED = [name for name in OWN if name.startswith(("v1-", "v2-"))] + ["large-session"]
_ID_FIELD = re.compile(r'"(id|parentId|firstKeptEntryId)":"([^"\\]*)"')


def _import(alice: Any, static: StaticFile) -> Any:
    result = pipeline.session_import(owner=alice, data=static.data, source_path=str(static.path))
    assert result.created
    assert result.version == static.version
    assert not result.skipped
    return result.session


def _id_map(pi_lines: list[dict[str, Any]], our_lines: list[dict[str, Any]]) -> dict[str, str]:
    """pi's ids -> piweb's, by line position (pi draws random ids when it migrates v1 files)."""
    assert len(pi_lines) == len(our_lines)
    mapping = {}
    for theirs, ours in zip(pi_lines, our_lines, strict=True):
        assert theirs["type"] == ours["type"]
        if theirs["type"] != "session":
            mapping[theirs["id"]] = ours["id"]
    return mapping


def _with_our_ids(text: str, mapping: dict[str, str]) -> str:
    return _ID_FIELD.sub(lambda m: f'"{m[1]}":"{mapping.get(m[2], m[2])}"', text)


def _tree_with_our_ids(tree: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    """pi's tree in piweb's ids. A line pi's re-flush quirk wrote twice is one entry in piweb; pi's
    getTree() lists it once per copy (and its subtree again under each), so repeats collapse."""
    return {
        "roots": list(dict.fromkeys(mapping[i] for i in tree["roots"])),
        "nodes": [
            {**n, "id": mapping[n["id"]], "children": list(dict.fromkeys(mapping[c] for c in n["children"]))}
            for n in tree["nodes"]
        ],
    }


def _repeated_messages(data: bytes) -> int:
    """Message lines that repeat an earlier line exactly (pi's re-flush quirk): pi's session list
    counts each copy, piweb stores the entry once."""
    seen: set[bytes] = set()
    repeats = 0
    for line in data.split(b"\n"):
        if line in seen and b'"type":"message"' in line[:40]:
            repeats += 1
        seen.add(line)
    return repeats


@pytest.mark.parametrize("name", ALL)
def test_import_matches_pi(name: str, alice: Any, static_files: dict[str, StaticFile]) -> None:
    """Contexts at many leaves (stored and pure), tree, listing and leaf equal pi's; the export is
    the file itself (v3) or byte for byte what pi's migration writes (v1/v2, ids mapped)."""
    static = static_files[name]
    pi = static.pi
    session = _import(alice, static)
    exported = export_bytes(session)
    nodes = nodes_of(exported)
    mapping = {n.id: n.id for n in nodes}

    if static.version == 3:
        assert exported == static.data
    else:
        assert pi["header"] == read_lines(exported)[0]
        if static.version == 1:
            mapping = _id_map(read_lines(pi["text"].encode()), read_lines(exported))
        assert _with_our_ids(pi["text"], mapping) == exported.decode()

    assert_contexts_match(session, nodes, static.leaves, pi["contexts"], name)
    by_index = [nodes[i].id for i in static.indexes]
    assert_contexts_match(session, nodes, by_index, pi["indexContexts"], name)
    # The default leaf: pi's getLeafId() (the last line) is piweb's leaf after import.
    assert_same_json(piweb_context(session), pi["leafContext"], f"{name}: context at the session leaf")
    assert_same_json(context.build_session_context(nodes), pi["leafContext"], f"{name}: pure context, no leaf")
    assert session.leaf_id == mapping[pi["leafId"]]

    tree = _tree_with_our_ids(pi["tree"], mapping)
    assert_tree_matches(session, tree, name)
    assert_pure_children_match(index(nodes), tree, name)
    info = {**pi["info"], "messageCount": pi["info"]["messageCount"] - _repeated_messages(static.data)}
    assert_listing_matches(session, {**pi, "info": info, "leafId": mapping[pi["leafId"]]}, name)


def assert_pure_children_match(idx: TreeIndex, tree: dict[str, Any], what: str) -> None:
    for node in tree["nodes"]:
        assert [n.id for n in children(idx, node["id"])] == node["children"], f"{what}: pure children of {node['id']}"
    assert [n.id for n in children(idx, None)] == tree["roots"], f"{what}: pure roots"


def test_pi_opens_piweb_exports_of_migrated_files_as_piweb_shows_them(
    alice: Any, static_files: dict[str, StaticFile], pi_oracle: PiOracle, tmp_path: Path
) -> None:
    """v1/v2 files come out of piweb as v3: pi opens them without rewriting, with piweb's leaf,
    contexts, tree and listing (one node process for all of them)."""
    jobs, checks = [], []
    for name in MIGRATED:
        static = static_files[name]
        session = _import(alice, static)
        exported = export_bytes(session)
        nodes = nodes_of(exported)
        out = tmp_path / name
        out.write_bytes(exported)
        ids = [n.id for n in nodes]
        leaves = ids if len(ids) <= 100 else [ids[i] for i in static.indexes]
        jobs.append({"file": str(out), "leaves": leaves, "tree": True, "info": True})
        checks.append((name, session, nodes, leaves))
    for (name, session, nodes, leaves), pi in zip(checks, pi_oracle.batch(jobs), strict=True):
        assert not pi["rewritten"], name
        assert pi["header"]["version"] == 3, name
        assert pi["leafId"] == session.leaf_id, name
        assert_contexts_match(session, nodes, leaves, pi["contexts"], f"{name} export")
        assert_same_json(piweb_context(session), pi["leafContext"], f"{name} export: context at the leaf")
        assert_tree_matches(session, pi["tree"], f"{name} export")
        assert_listing_matches(session, pi, f"{name} export")


def test_generated_files_are_ones_pi_could_have_written(generated_files: dict[str, Path], pi_oracle: PiOracle) -> None:
    """tests/generate.py's files pass check.mjs, and between them hold every entry type pi writes."""
    code, reports = pi_oracle.check(list(generated_files.values()))
    assert code == 0, [r for r in reports if not r["ok"]]
    types = {kind for report in reports for kind in report["counts"]}
    assert types == {
        "message:user", "message:assistant", "message:toolResult", "model_change", "thinking_level_change",
        "compaction", "branch_summary", "label", "session_info", "custom", "custom_message",
    }  # fmt: skip


def test_the_check_finds_what_pi_would_not_write(
    generated_files: dict[str, Path], pi_oracle: PiOracle, tmp_path: Path
) -> None:
    lines = generated_files["small"].read_bytes().decode().splitlines(keepends=True)
    entries = [json.loads(line) for line in lines[1:]]
    result = next(i for i, e in enumerate(entries) if e["type"] == "message" and e["message"]["role"] == "toolResult")
    compaction = next(i for i, e in enumerate(entries) if e["type"] == "compaction")
    broken = {
        "dangling": [e for i, e in enumerate(entries) if i != 5],
        "unanswered": [_with(e, message={**e["message"], "toolCallId": "toolu_nobody"}) if i == result else e
                       for i, e in enumerate(entries)],
        "kept-below": [_with(e, firstKeptEntryId=entries[-1]["id"]) if i == compaction else e
                       for i, e in enumerate(entries)],
    }  # fmt: skip
    files = []
    for name, changed in broken.items():
        files.append(tmp_path / f"{name}.jsonl")
        files[-1].write_text(lines[0] + "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in changed))
    files.append(tmp_path / "not-json.jsonl")
    files[-1].write_text("".join(lines[:3]) + "{not json\n" + "".join(lines[3:]))
    code, reports = pi_oracle.check(files)
    assert code == 1
    errors = {Path(r["file"]).stem: r["errors"] for r in reports}
    assert errors["unanswered"] == [f"{entries[result]['id']}: answers toolu_nobody, not called above"]
    assert errors["not-json"] == [f"pi kept {len(entries)} entries of {len(entries) + 1} lines"]
    # what follows from the first error is reported too
    assert errors["dangling"][0] == f"{entries[6]['id']}: parent {entries[5]['id']} is not in the file"
    assert errors["kept-below"][0] == f"{entries[compaction]['id']}: firstKeptEntryId is not above it"


def _with(entry: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**entry, **fields}
