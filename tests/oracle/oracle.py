"""Running the real pi (the oracle) and comparing its answers with piweb's.

tests/oracle/pi/pi_batch.mjs answers many questions about a session file in one node process;
tests/oracle/pi/check.mjs tells whether files are ones pi itself could have written. Both run from
copies inside the folder where the npm package is installed (tests/oracle/install.py).
"""

from __future__ import annotations

import json
import random
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from sessions_app.core import context, jsjson
from sessions_app.core.tree import Node, node_from_entry
from sessions_app.models import Session
from sessions_app.store import selectors
from sessions_app.web.schemas import SessionOut
from tests.oracle.install import placed
from tests.paths import HANDMADE, LARGE_SESSION, PI_PACKAGE


class PiOracle:
    def __init__(self, folder: Path) -> None:
        self.folder = folder  # where the package is installed
        self.script = placed(PI_PACKAGE / "pi_batch.mjs", folder)
        self.checker = placed(PI_PACKAGE / "check.mjs", folder)

    def batch(self, jobs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """One node process answering every job (see pi_batch.mjs for the fields)."""
        proc = subprocess.run(
            ["node", str(self.script)],
            input=json.dumps({"jobs": list(jobs)}).encode(),
            capture_output=True,
            cwd=self.folder,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-4000:]
        results: list[dict[str, Any]] = json.loads(proc.stdout)
        assert len(results) == len(jobs)
        return results

    def batch_parallel(self, jobs: Sequence[Mapping[str, Any]], processes: int = 2) -> list[dict[str, Any]]:
        """batch() with the jobs dealt out to a few node processes running side by side."""
        shares = [list(range(i, len(jobs), processes)) for i in range(processes)]
        shares = [share for share in shares if share]
        with ThreadPoolExecutor(len(shares)) as pool:
            answers = list(pool.map(lambda share: self.batch([jobs[i] for i in share]), shares))
        results: list[dict[str, Any]] = [{} for _ in jobs]
        for share, answer in zip(shares, answers, strict=True):
            for i, result in zip(share, answer, strict=True):
                results[i] = result
        return results

    def check(self, files: Sequence[Path]) -> tuple[int, list[dict[str, Any]]]:
        """check.mjs over the files: (exit code, one report per file)."""
        proc = subprocess.run(
            ["node", str(self.checker), *map(str, files)],
            capture_output=True,
            cwd=self.folder,
            check=False,
        )
        reports = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]
        assert len(reports) == len(files), proc.stderr.decode(errors="replace")[-4000:]
        return proc.returncode, reports

    def batch_and_check(
        self, jobs: Sequence[Mapping[str, Any]], files: Sequence[Path]
    ) -> tuple[list[dict[str, Any]], tuple[int, list[dict[str, Any]]]]:
        """Both at once (two node processes side by side)."""
        with ThreadPoolExecutor(2) as pool:
            batched = pool.submit(self.batch, jobs)
            checked = pool.submit(self.check, files)
            return batched.result(), checked.result()


# --- reading files ---------------------------------------------------------------------------


def read_lines(data: bytes) -> list[dict[str, Any]]:
    return [jsjson.loads(line) for line in data.decode().split("\n") if line.strip()]


def entry_objects(data: bytes) -> list[dict[str, Any]]:
    """The entries of a v3 file (every non-header line), file order, as pi's getEntries()."""
    return [obj for obj in read_lines(data) if obj.get("type") != "session"]


def export_bytes(session: Session) -> bytes:
    return "".join(selectors.export_lines(session=session)).encode()


def nodes_of(data: bytes) -> list[Node]:
    """The entries as piweb holds them: a line repeated by pi's re-flush quirk counts once."""
    unique: dict[str, dict[str, Any]] = {}
    for obj in entry_objects(data):
        unique.setdefault(obj["id"], obj)
    return [node_from_entry(obj) for obj in unique.values()]


def interesting_leaves(entries: Sequence[Mapping[str, Any]], seed: int, n_random: int = 40) -> list[str]:
    """Random entries plus the ones where contexts change shape: the leaf, around each compaction
    (its parent, itself, its children, its first kept entry and that one's parent), branch points,
    branch summaries, custom messages, labels and session names."""
    ids = [e["id"] for e in entries]
    by_id = {e["id"]: e for e in entries}
    kids: dict[str | None, list[str]] = defaultdict(list)
    for e in entries:
        kids[e["parentId"]].append(e["id"])
    chosen = random.Random(seed).sample(ids, min(n_random, len(ids)))
    for e in entries:
        if e["type"] == "compaction":
            chosen += [e["parentId"], e["id"], *kids[e["id"]]]
            first_kept = e.get("firstKeptEntryId")
            if first_kept in by_id:
                chosen += [first_kept, by_id[first_kept]["parentId"]]
        elif e["type"] in ("branch_summary", "custom_message", "label", "session_info", "custom"):
            chosen.append(e["id"])
        if len(kids[e["id"]]) > 1:
            chosen.append(e["id"])
    chosen.append(ids[-1])
    return list(dict.fromkeys(i for i in chosen if isinstance(i, str)))


# --- comparing -------------------------------------------------------------------------------


def first_difference(ours: Any, theirs: Any, path: str = "$") -> str | None:
    """Where two parsed JSON values differ (numbers compare by value: JS has only one kind)."""
    if isinstance(ours, bool) or isinstance(theirs, bool):
        return None if ours is theirs else f"{path}: {ours!r} != {theirs!r}"
    if isinstance(ours, int | float) and isinstance(theirs, int | float):
        # JavaScript numbers are doubles: 123456789012345680000 is the double nearest to it.
        return None if float(ours) == float(theirs) else f"{path}: {ours!r} != {theirs!r}"
    if type(ours) is not type(theirs):
        return f"{path}: {_short(ours)} != {_short(theirs)}"
    if isinstance(ours, dict):
        # Key order is checked on the serialised form (JSON.stringify lists integer-like keys first).
        if set(ours) != set(theirs):
            return f"{path}: keys {list(ours)} != {list(theirs)}"
        for key in ours:
            found = first_difference(ours[key], theirs[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(ours, list):
        for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        return None if len(ours) == len(theirs) else f"{path}: length {len(ours)} != {len(theirs)}"
    return None if ours == theirs else f"{path}: {_short(ours)} != {_short(theirs)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 200 else text[:200] + "…"


def assert_same_json(ours: Any, theirs: Any, what: str) -> None:
    """Equal as parsed JSON, and serialised alike: jsjson.dumps writes what JSON.stringify would,
    so equal strings mean equal key order (and numbers) as pi prints them."""
    try:
        if orjson.dumps(ours) == orjson.dumps(theirs):
            return  # the same values, types and key order: nothing more to check
    except orjson.JSONEncodeError:
        pass  # lone surrogates or integers beyond 64 bits: compare the slow way
    difference = first_difference(ours, theirs)
    assert difference is None, f"{what}: piweb differs from pi at {difference}"
    assert jsjson.dumps(ours) == jsjson.dumps(theirs), what


def piweb_context(session: Session, leaf_id: str | None = None) -> dict[str, Any]:
    """selectors.session_context without its leafId (pi's context has none)."""
    built = selectors.session_context(session=session, leaf_id=leaf_id)
    assert built.pop("leafId") == (leaf_id if leaf_id is not None else session.leaf_id)
    return built


MISSING = "no-such-entry"  # pi (and the pure builder) fall back to the last entry


def assert_contexts_match(
    session: Session, nodes: Sequence[Node], leaves: Sequence[str], pi_contexts: Sequence[Any], what: str
) -> None:
    """At every leaf, piweb's stored-session context and its pure builder both equal pi's."""
    assert len(leaves) == len(pi_contexts)
    known = {n.id for n in nodes}
    for leaf, theirs in zip(leaves, pi_contexts, strict=True):
        if leaf in known:
            assert_same_json(piweb_context(session, leaf), theirs, f"{what}: session_context at {leaf}")
        assert_same_json(context.build_session_context(nodes, leaf), theirs, f"{what}: build_session_context at {leaf}")


def assert_tree_matches(session: Session, pi_tree: Mapping[str, Any], what: str) -> None:
    """tree_flat (types, roles, resolved labels) and children() order equal pi's getTree()."""
    flat = selectors.tree_flat(session=session)["nodes"]
    ours = {n["id"]: n for n in flat}
    theirs = {n["id"]: n for n in pi_tree["nodes"]}
    assert set(ours) == set(theirs), f"{what}: tree nodes differ"
    by_parent: dict[str | None, set[str]] = defaultdict(set)
    for n in flat:
        by_parent[n["parentId"]].add(n["id"])
    for entry_id, pi_node in theirs.items():
        node = ours[entry_id]
        assert node["type"] == pi_node["type"], f"{what}: type of {entry_id}"
        assert node.get("role") == pi_node.get("role"), f"{what}: role of {entry_id}"
        assert node.get("label") == pi_node.get("label"), f"{what}: label of {entry_id}"
        assert by_parent[entry_id] == set(pi_node["children"]), f"{what}: children of {entry_id}"
    # Order: every node with more than one child, and the roots.
    for entry_id, pi_node in theirs.items():
        if len(pi_node["children"]) > 1:
            got = list(selectors.children(session=session, entry_id=entry_id).values_list("entry_id", flat=True))
            assert got == pi_node["children"], f"{what}: order of the children of {entry_id}"
    roots = list(selectors.children(session=session, entry_id=None).values_list("entry_id", flat=True))
    assert roots == pi_tree["roots"], f"{what}: roots"


def storable(text: str) -> str:
    """What a UTF-8 database column can hold: piweb's listing fields keep an unpaired UTF-16
    surrogate (valid in JSON and JS strings) as U+FFFD. The entry lines themselves keep it."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def assert_listing_matches(session: Session, pi: Mapping[str, Any], what: str) -> None:
    info = pi["info"]
    out = SessionOut.of(session)
    assert out.id == info["id"], what
    assert out.name == storable(info["name"] or ""), f"{what}: name"
    assert out.messageCount == info["messageCount"], f"{what}: messageCount"
    assert out.firstMessage == storable(info["firstMessage"]), f"{what}: firstMessage"
    assert out.cwd == storable(info["cwd"]), f"{what}: cwd"
    assert session.leaf_id == pi["leafId"], f"{what}: leaf after import"


def jobs_for(files: Iterable[tuple[Path, Sequence[str | None]]], **flags: bool) -> list[dict[str, Any]]:
    return [{"file": str(path), "leaves": list(leaves), **flags} for path, leaves in files]


GENERATED: dict[str, dict[str, Any]] = {  # name -> tests/generate.py's options
    "branchy": {"entries": 1500, "branch_prob": 0.3, "compactions": 4, "labels": 40, "seed": 11},
    "compacted": {"entries": 2000, "branch_prob": 0.05, "compactions": 10, "labels": 20, "seed": 12},
    "linear": {"entries": 1200, "branch_prob": 0.0, "compactions": 3, "labels": 15, "seed": 13},
    "summaries": {"entries": 800, "branch_prob": 0.15, "compactions": 6, "labels": 25, "seed": 14,
                  "branch_summary_prob": 0.7, "far_jump_prob": 0.5},
    "small": {"entries": 200, "branch_prob": 0.1, "compactions": 3, "labels": 10, "seed": 15,
              "cwd": "/home/dev/é space"},
    "customs": {"entries": 600, "branch_prob": 0.1, "compactions": 2, "labels": 10, "seed": 16,
                "custom_prob": 0.25},
}  # fmt: skip
OWN = sorted(p.name for p in HANDMADE.glob("*.jsonl"))
LARGE = LARGE_SESSION
LARGE_INDEXES = [0, 1, 2, 3, 10, 100, 250, 500, 833, 836, 837, 1000, 1016, 1017]


@dataclass
class StaticFile:
    """A session file and what pi makes of it."""

    path: Path
    data: bytes
    version: int
    leaves: list[str]  # asked by id (v2/v3 files)
    indexes: list[int]  # asked by position in getEntries() (v1 files: pi draws the ids)
    pi: dict[str, Any]
