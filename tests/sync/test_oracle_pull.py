"""The real pi (the oracle) on what `piweb sync` and `piweb pull` did: a pulled mirror opens in pi
with the contexts piweb shows, and pi's own in-place migration of a synced v1 file replaces the
mirror (the labels reviewers made in piweb kept on the same messages)."""

from __future__ import annotations

import json

import pytest

from sessions_app.models import Session
from sessions_app.store import services
from tests.generate import generate
from tests.oracle.oracle import PiOracle, assert_contexts_match, entry_objects, nodes_of
from tests.paths import LARGE_SESSION
from tests.sync.harness import pi_file, pi_id

pytestmark = [pytest.mark.oracle, pytest.mark.django_db(transaction=True)]


def test_a_pulled_mirror_has_pis_contexts_with_and_without_labels(
    tmp_path, pi_install, server, run_cli, alice, read_token
):
    data = generate(400, seed=44, branch_prob=0.2, compactions=3, labels=5)
    pi_file(tmp_path / "s", data)
    assert run_cli("sync", str(tmp_path / "s")).returncode == 0
    session = Session.objects.get(public_id=pi_id(data))
    target = entry_objects(data)[10]["id"]
    services.label_set(session=session, target_id=target, label="reviewed", author=alice)
    plain, labelled = tmp_path / "plain.jsonl", tmp_path / "labelled.jsonl"
    assert run_cli("pull", pi_id(data), "-o", str(plain), token=read_token).returncode == 0
    assert run_cli("pull", pi_id(data), "-o", str(labelled), "--with-labels", token=read_token).returncode == 0
    assert plain.read_bytes() == data
    leaves = [e["id"] for e in entry_objects(data)]
    oracle = PiOracle(pi_install)
    answers = oracle.batch([
        {"file": str(plain), "leaves": leaves},
        {"file": str(labelled), "leaves": [None], "tree": True},
    ])  # fmt: skip
    assert_contexts_match(session, nodes_of(data), leaves, answers[0]["contexts"], "pulled mirror")
    # The labels come last: pi's leaf is the label entry, its context the file's last entry's,
    # and pi's tree shows the label on its message.
    label_id = json.loads(labelled.read_bytes().splitlines()[-1])["id"]
    assert answers[1]["leafId"] == label_id
    assert answers[1]["leafContext"] == answers[0]["contexts"][leaves.index(data_leaf(data))]
    labels = {n["id"]: n.get("label") for n in answers[1]["tree"]["nodes"]}
    assert labels[target] == "reviewed"


def data_leaf(data: bytes) -> str:
    """pi's leaf of a file: its last entry."""
    return str(entry_objects(data)[-1]["id"])


def test_pis_own_migration_of_a_synced_v1_file_replaces_the_mirror(
    tmp_path, pi_install, server, run_cli, alice, read_token
):
    source = LARGE_SESSION.read_bytes()
    path = pi_file(tmp_path / "s", source)
    assert run_cli("sync", str(tmp_path / "s")).returncode == 0
    session = Session.objects.get(public_id=pi_id(source))
    tenth = session.entries.order_by("seq")[9]
    services.label_set(session=session, target_id=tenth.entry_id, label="look", author=alice)
    pi = PiOracle(pi_install).batch([{"file": str(path), "text": True, "entries": True}])[0]
    assert pi["rewritten"]
    migrated = pi["text"].encode()
    path.write_bytes(migrated)  # as pi leaves it when it opens the file
    result = run_cli("sync", str(tmp_path / "s"))
    assert "1 replaced" in result.stdout, result.stdout + result.stderr
    mirror = Session.objects.get(public_id=pi_id(source))
    labels = [json.loads(raw) for raw in mirror.entries.filter(type="label").values_list("raw", flat=True)]
    assert [(lb["targetId"], lb["label"]) for lb in labels] == [(pi["entries"][9]["id"], "look")]
    assert run_cli("pull", pi_id(source), "-o", str(tmp_path / "p.jsonl"), token=read_token).returncode == 0
    assert (tmp_path / "p.jsonl").read_bytes() == migrated
