"""Thousands of records, then rewrites by raw SQL (past the triggers): verify_audit names exactly
the first bad record every time. Each tampering is undone (savepoint) before the next."""

from __future__ import annotations

import random

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction

from sessions_app.access.audit import audit_verify
from tests.access.audit_records import bad_seq, forged_hash, last_seq, write_records

pytestmark = pytest.mark.django_db

TABLE = "sessions_app_auditrecord"
RECORDS = 3000
ROUNDS = 30  # per kind of tampering


def _shift(cursor, from_seq: int, by: int) -> None:
    """seq += by for seq >= from_seq, in two steps so the unique index never sees a clash."""
    cursor.execute(f"UPDATE {TABLE} SET seq = -(seq + %s) WHERE seq >= %s", [by, from_seq])
    cursor.execute(f"UPDATE {TABLE} SET seq = -seq WHERE seq < 0")


def _change(cursor, rng: random.Random, n: int) -> int:
    k = rng.randint(1, n)
    column, value = rng.choice(
        [
            ("action", "session.delete"),
            ("actor_username", "mallory"),
            ("obj_id", "other"),
            ("ip", "6.6.6.6"),
            ("request_id", "forged"),
            ("before", '{"n": -1}'),
            ("after", '"x"'),
            ("hash", forged_hash("x")),
            ("prev_hash", forged_hash("y")),
        ]
    )
    cursor.execute(f"UPDATE {TABLE} SET {column} = %s WHERE seq = %s", [value, k])
    return k


def _change_time(cursor, rng: random.Random, n: int) -> int:
    k = rng.randint(2, n)
    cursor.execute(f"UPDATE {TABLE} SET at = (SELECT at FROM {TABLE} WHERE seq = 1) WHERE seq = %s", [k])
    return k


def _delete(cursor, rng: random.Random, n: int) -> int:
    k = rng.choice([rng.randint(1, n), n, 1])
    cursor.execute(f"DELETE FROM {TABLE} WHERE seq = %s", [k])
    return k


def _delete_and_renumber(cursor, rng: random.Random, n: int) -> int:
    k = rng.randint(1, n - 1)
    cursor.execute(f"DELETE FROM {TABLE} WHERE seq = %s", [k])
    _shift(cursor, k + 1, -1)
    return k


def _swap(cursor, rng: random.Random, n: int) -> int:
    i, j = sorted(rng.sample(range(1, n + 1), 2))
    cursor.execute(f"UPDATE {TABLE} SET seq = -1 WHERE seq = %s", [i])
    cursor.execute(f"UPDATE {TABLE} SET seq = %s WHERE seq = %s", [i, j])
    cursor.execute(f"UPDATE {TABLE} SET seq = %s WHERE seq = -1", [j])
    return i


COLUMNS = (
    "at, actor_id, actor_username, action, obj_type, obj_id, session_id, ip, request_id,"
    " before, after, extra, prev_hash"
)


def _insert(cursor, rng: random.Random, n: int) -> int:
    """A new record at k (the others moved up), linked to k-1 but hashed without the key, or a
    replay of an existing record's content at a new place."""
    k = rng.randint(1, n + 1)
    source = rng.randint(1, n)
    _shift(cursor, k, 1)
    params = [k, forged_hash(str(k)), source if source < k else source + 1]
    replay = rng.random() < 0.3
    hashed = "hash" if replay else "%s"
    sql = f"INSERT INTO {TABLE} (seq, {COLUMNS}, hash) SELECT %s, {COLUMNS}, {hashed} FROM {TABLE} WHERE seq = %s"
    if replay:
        params.pop(1)
    cursor.execute(sql, params)
    if not replay and k > 1:  # link it properly to its predecessor: only the hash gives it away
        link = f"UPDATE {TABLE} SET prev_hash = (SELECT hash FROM {TABLE} WHERE seq = %s) WHERE seq = %s"
        cursor.execute(link, [k - 1, k])
    return k


@pytest.mark.parametrize(
    "tamper",
    [_change, _change_time, _delete, _delete_and_renumber, _swap, _insert],
    ids=lambda f: f.__name__.strip("_"),
)
def test_verify_names_the_first_bad_record(bypass_guards, tamper):
    write_records(RECORDS)
    assert audit_verify().finding is None
    rng = random.Random(tamper.__name__)
    for _ in range(ROUNDS):
        point = transaction.savepoint()
        with bypass_guards.cursor() as cursor:
            expected = tamper(cursor, rng, RECORDS)
        finding = audit_verify().finding
        transaction.savepoint_rollback(point)
        assert finding is not None, tamper.__name__
        assert finding.seq == expected, (tamper.__name__, finding)
    assert audit_verify().finding is None


def test_several_tamperings_report_the_earliest(bypass_guards):
    write_records(500)
    with bypass_guards.cursor() as cursor:
        cursor.execute(f"UPDATE {TABLE} SET action = 'x' WHERE seq IN (400, 123, 321)")
        cursor.execute(f"DELETE FROM {TABLE} WHERE seq = 200")
    assert bad_seq() == 123


def test_removing_the_newest_records_is_noticed_through_the_head(bypass_guards):
    write_records(100)
    with bypass_guards.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE seq > 90")
    assert bad_seq() == 91
    assert last_seq() == 90


def test_command_exits_non_zero_naming_the_record(bypass_guards, capsys):
    write_records(50)
    with bypass_guards.cursor() as cursor:
        cursor.execute(f"UPDATE {TABLE} SET actor_username = 'mallory' WHERE seq = 17")
    with pytest.raises(CommandError, match="record #17"):
        call_command("verify_audit")
    assert "record #17: record #17 was changed" in capsys.readouterr().out
