"""Bad input: a clear error naming every problem and its line, and nothing stored. With
partial=True the sound part goes in and the rest is reported. What pi itself writes imports."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app.core.intake import MAX_PROBLEMS
from sessions_app.errors import ImportRejected, SessionsError
from sessions_app.models import Session
from sessions_app.store import selectors, services
from sessions_app.store.importing import pipeline
from tests.builders import assistant, chain, entry, header, jsonl, user
from tests.builders import line as json_line
from tests.store.helpers import assert_tree, counts, export_bytes, problems

pytestmark = pytest.mark.django_db


@pytest.fixture
def existing(alice):
    """Another session already stored, so 'nothing stored' is checked against a non-empty DB."""
    return pipeline.session_import(owner=alice, data=jsonl(header("already-here"), *chain(2))).session


def rejected(owner: User, data: bytes, status: int = 400, **kwargs: Any) -> list[tuple[int, str]]:
    """Import must fail with ImportRejected (status: 413 for a part over a size limit) and leave
    the database as it was."""
    before = counts()
    with pytest.raises(ImportRejected) as exc_info:
        pipeline.session_import(owner=owner, data=data, **kwargs)
    assert counts() == before
    assert exc_info.value.status == status
    assert exc_info.value.message
    assert exc_info.value.as_dict()["extra"]["errors"] == exc_info.value.extra["errors"]
    return problems(exc_info)


def only(found: list[tuple[int, str]], line: int, *words: str) -> None:
    """Exactly one problem, on this line, whose message holds all the words."""
    assert len(found) == 1, found
    assert found[0][0] == line, found
    for word in words:
        assert word in found[0][1], found


# --- one problem at a time ----------------------------------------------------------------


def test_a_malformed_json_line(alice, existing):
    data = jsonl(header(), *chain(2)) + b'{"type":"message","id":\n' + jsonl(*chain(1, start=3, parent="e0000002"))
    only(rejected(alice, data), 4, "invalid JSON")


def test_a_line_that_is_not_an_object(alice, existing):
    only(rejected(alice, jsonl(header(), *chain(1), [1, 2])), 3, "expected a JSON object", "array")
    only(rejected(alice, jsonl(header(), *chain(1), 42)), 3, "expected a JSON object", "number")


def test_a_missing_header(alice, existing):
    only(rejected(alice, jsonl(*chain(3))), 1, "missing session header")


def test_a_header_without_id(alice, existing):
    only(rejected(alice, jsonl({"type": "session", "version": 3}, *chain(1))), 1, "session header")


def test_a_broken_header(alice, existing):
    only(rejected(alice, b'{"type":"session","id":"x"\n' + jsonl(*chain(2))), 1, "broken header")


def test_the_header_line_number_counts_leading_blank_lines(alice, existing):
    only(rejected(alice, b"\n\n" + jsonl(*chain(1))), 3, "missing session header")


@pytest.mark.parametrize("data", [b"", b"\n\n  \n"])
def test_an_empty_file(alice, existing, data):
    only(rejected(alice, data), 0, "empty")


@pytest.mark.parametrize("version", [4, 99])
def test_an_unsupported_version(alice, existing, version):
    only(rejected(alice, jsonl(header(version=version), *chain(2))), 1, f"version {version}")


@pytest.mark.parametrize("version", ["3", 0, 2.5, None, True])
def test_a_malformed_version(alice, existing, version):
    obj = header()
    obj["version"] = version
    only(rejected(alice, jsonl(obj, *chain(1))), 1, "version")


def test_a_dangling_parent_id(alice, existing):
    lines = chain(3)
    lines[1]["parentId"] = "nowhere0"
    found = rejected(alice, jsonl(header(), *lines))
    # e2 points nowhere; e3 hangs off e2 and goes with it.
    assert [line for line, _ in found] == [3, 4]
    assert "'nowhere0' does not match any entry" in found[0][1]
    assert "'e0000002' does not match any entry" in found[1][1]


def test_a_label_targeting_an_unknown_entry(alice, existing):
    data = jsonl(header(), *chain(2), entry("l1", "e0000002", "label", targetId="ghost", label="x"))
    only(rejected(alice, data), 4, "label targets unknown entry 'ghost'")


def test_cyclic_parent_ids(alice, existing):
    data = jsonl(
        header(),
        entry("r", None),
        entry("a", "b"),
        entry("b", "a"),
        entry("child", "b"),
    )
    found = rejected(alice, data)
    assert [line for line, _ in found] == [3, 4, 5]
    assert all("cycle" in message for _, message in found[:2])
    assert "'b' does not match any entry" in found[2][1]


def test_a_self_parent(alice, existing):
    data = jsonl(header(), entry("r", None), entry("s", "s"), entry("t", "r"))
    only(rejected(alice, data), 3, "'s' is its own ancestor")


def test_a_long_cycle_is_found_without_recursion(alice, existing):
    n = 5000
    lines = [entry(f"c{i}", f"c{(i + 1) % n}") for i in range(n)]
    found = rejected(alice, jsonl(header(), *lines))
    # The first intake.MAX_PROBLEMS problems are listed, the others counted.
    assert [line for line, _ in found] == [*range(2, MAX_PROBLEMS + 2), 0]
    assert found[-1][1] == f"and {n - MAX_PROBLEMS} more problem(s), not listed"


def test_duplicate_ids(alice, existing):
    data = jsonl(header(), *chain(3), entry("e0000002", "e0000003", message=user("different")["message"]))
    only(rejected(alice, data), 5, "duplicate id 'e0000002'", "line 3")


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        (entry("x", "e0000001", message={"role": 5, "content": "hi"}), ["message.role"]),
        (entry("x", "e0000001", message="hello"), ["'message' must be an object", "string"]),
        (entry("x", "e0000001", message={"role": "user", "content": 7}), ["message.content"]),
        (entry("x", "e0000001", message={"role": "assistant", "content": "text"}), ["message.content", "array"]),
        (entry("x", "e0000001", "compaction", summary="s", tokensBefore="12"), ["tokensBefore", "number", "string"]),
        (entry("x", "e0000001", "compaction", summary="s", tokensBefore=1, firstKeptEntryId=3), ["firstKeptEntryId"]),
        (entry("x", "e0000001", "compaction", tokensBefore=1), ["'summary' is missing"]),
        (entry("x", "e0000001", "label", label="no target"), ["'targetId' is missing"]),
        (entry("x", "e0000001", "label", targetId="e0000001", label=5), ["'label' must be a string"]),
        (entry("x", "e0000001", "branch_summary", summary="s"), ["fromId"]),
        (entry("x", "e0000001", "model_change", provider="p", modelId=None), ["modelId", "null"]),
        (entry("x", "e0000001", "thinking_level_change"), ["thinkingLevel"]),
        (entry("x", "e0000001", "custom_message", customType="c", content="x", display="yes"), ["display"]),
        (entry("x", "e0000001", "custom", customType=1), ["customType"]),
        (entry("x", "e0000001", "session_info", name=["n"]), ["name"]),
        ({**entry("x", "e0000001"), "id": 12}, ["'id'"]),
        ({**entry("x", "e0000001"), "id": ""}, ["'id'"]),
        ({**entry("x", "e0000001"), "parentId": 3}, ["parentId", "number"]),
        ({k: v for k, v in entry("x", "e0000001").items() if k != "parentId"}, ["'parentId' is missing"]),
        ({**entry("x", "e0000001"), "timestamp": 1765000000}, ["timestamp"]),
        ({**entry("x", "e0000001"), "timestamp": "last tuesday"}, ["timestamp"]),
        ({**entry("x", "e0000001"), "type": None}, ["'type'"]),
    ],
)
def test_wrong_field_types(alice, existing, bad, words):
    only(rejected(alice, jsonl(header(), *chain(1), bad, *chain(1, start=5, parent="e0000001"))), 3, *words)


@pytest.mark.parametrize(
    "deep",
    [
        b"[" * 100_000,  # unterminated
        b"[" * 100_000 + b"]" * 100_000,  # well formed but absurd
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        b'{"type":"custom","id":"d","parentId":"e0000001","timestamp":"2025-12-08T23:23:00.000Z","customType":"x","data":'
        + b"[" * 20_000
        + b"]" * 20_000
        + b"}",
    ],
    ids=["open-brackets", "closed-brackets", "objects", "inside-an-entry"],
)
def test_absurdly_deep_nesting_is_a_line_error_not_a_crash(alice, existing, deep):
    found = rejected(alice, jsonl(header(), *chain(1)) + deep + b"\n" + jsonl(*chain(1, start=2, parent="e0000001")))
    assert found[0][0] == 3
    assert "JSON" in found[0][1]
    assert len(found) == 1


def test_nesting_up_to_the_limit_imports(alice):
    data = '{"type":"custom","id":"d","parentId":null,"timestamp":"2025-12-08T23:23:00.000Z","customType":"x","data":'
    data += "[" * 500 + "]" * 500 + "}"  # 501 levels with the entry object; the default limit is 512
    session = pipeline.session_import(owner=alice, data=jsonl(header(), data.encode())).session
    assert_tree(session, expected=1)
    assert export_bytes(session) == jsonl(header(), data.encode())


def test_deep_nesting_over_the_setting(alice, existing, settings):
    settings.PIWEB_IMPORT_MAX_DEPTH = 10
    bad = entry("x", "e0000001", "custom", customType="x", data=[[[[[[[[[[[[1]]]]]]]]]]]])
    only(rejected(alice, jsonl(header(), *chain(1), bad)), 3, "deeper than 10")


def test_a_deep_header_is_a_broken_header(alice, existing):
    only(rejected(alice, b"[" * 100_000 + b"\n" + jsonl(*chain(1))), 1, "broken header")


def test_an_oversized_line(alice, existing, settings):
    settings.PIWEB_IMPORT_MAX_LINE_BYTES = 400
    big = entry("big", "e0000001", message=user("x" * 500)["message"])
    size = len(json.dumps(big, separators=(",", ":")))
    only(rejected(alice, jsonl(header(), *chain(1), big), 413), 3, f"line is {size} bytes", "limit of 400")


def test_an_oversized_header_line(alice, existing, settings):
    settings.PIWEB_IMPORT_MAX_LINE_BYTES = 100
    only(rejected(alice, jsonl(header(cwd="/" + "d" * 200)), 413), 1, "broken header", "limit of 100")


def test_an_oversized_file(alice, existing, settings):
    data = jsonl(header(), *chain(10))
    settings.PIWEB_IMPORT_MAX_FILE_BYTES = len(data) - 1
    only(rejected(alice, data, 413), 0, f"file is {len(data)} bytes", f"limit of {len(data) - 1}")
    only(rejected(alice, data, 413, partial=True), 0, "over the limit")
    settings.PIWEB_IMPORT_MAX_FILE_BYTES = len(data)
    assert pipeline.session_import(owner=alice, data=data).added == 10


def test_invalid_utf8(alice, existing):
    bad = jsonl(entry("u", "e0000001")).replace(b"text of u", b"text \xff\xfe of u")
    only(rejected(alice, jsonl(header(), *chain(1)) + bad), 3, "UTF-8")


LONE = [
    # JSON.stringify writes an unpaired surrogate as an escape ("\\ud83d"); JSON.parse reads it back.
    json_line(entry("s1", None, message={"role": "user", "content": "cut \ud83d", "timestamp": 1})),
    json_line(entry("s2", "s1", message={"role": "toolResult", "toolCallId": "c", "toolName": "bash",
                                     "content": [{"type": "text", "text": "a\udc00b"}], "isError": False})),
    json_line(entry("s3", "s2", "session_info", name="n\ud800")),
    json_line(entry("s4", "s3", "custom", customType="\udfff")),
]  # fmt: skip


def test_unpaired_surrogates_in_text_are_stored_verbatim(alice):
    data = jsonl(header(), *LONE)
    assert b"\\ud83d" in data
    result = pipeline.session_import(owner=alice, data=data)
    assert result.added == 4
    assert export_bytes(result.session) == data  # the lines keep their escapes
    session = Session.objects.get(pk=result.session.pk)
    assert session.first_message == "cut \ufffd"  # listing columns hold a replacement character
    assert session.name == "n\ufffd"
    context = selectors.session_context(session=session)
    assert context["messages"][0]["content"] == "cut \ud83d"  # the context is the line's own text
    appended = services.entry_append(session=session, payload=user("typed \udc00"))
    assert "typed \\udc00" in appended.raw


@pytest.mark.parametrize("field", ["id", "parentId", "type"])
def test_an_unpaired_surrogate_in_an_entry_key_is_a_line_error(alice, existing, field):
    bad = entry("x", "e0000001")
    bad[field] = "\ud800"
    found = rejected(alice, jsonl(header(), *chain(1), bad))
    assert found == [(3, f"field '{field}' holds an unpaired UTF-16 surrogate")]


def test_an_unpaired_surrogate_in_a_role_is_a_line_error(alice, existing):
    bad = entry("x", "e0000001", message={"role": "us\udc00er", "content": "x"})
    only(rejected(alice, jsonl(header(), *chain(1), bad)), 3, "message.role", "surrogate")


@pytest.mark.parametrize("field", ["id", "cwd", "timestamp"])
def test_an_unpaired_surrogate_in_the_header(alice, existing, field):
    obj = header()
    obj[field] = "\udfff" + obj[field]
    only(rejected(alice, jsonl(obj, *chain(1))), 1, f"'{field}'", "surrogate")


# --- many problems at once ----------------------------------------------------------------


def test_every_problem_is_listed_in_line_order(alice, existing, settings):
    settings.PIWEB_IMPORT_MAX_LINE_BYTES = 1000
    data = b"".join(
        [
            jsonl(header()),  # 1
            jsonl(*chain(2)),  # 2, 3
            b"not json\n",  # 4
            b"\n",  # 5 (blank: fine)
            jsonl(entry("e0000002", "e0000001")),  # 6 duplicate
            jsonl(entry("o1", "missing")),  # 7 dangling
            jsonl(entry("o2", "o1")),  # 8 child of the dangling one
            b"\xc3\x28\n",  # 9 bad UTF-8
            jsonl(entry("big", "e0000002", message=user("y" * 2000)["message"])),  # 10 too long
            jsonl(entry("t", "e0000002", "compaction", summary="s", tokensBefore="1")),  # 11 wrong type
            jsonl(entry("ok", "e0000002")),  # 12 fine
            jsonl(entry("self", "self")),  # 13 cycle
        ]
    )
    found = rejected(alice, data, 413)  # (line 10 is too long)
    assert [line for line, _ in found] == [4, 6, 7, 8, 9, 10, 11, 13]
    assert "ImportRejected" not in str(found)


def test_the_error_message_counts_the_problems(alice, existing):
    with pytest.raises(ImportRejected, match="3 problem"):
        pipeline.session_import(owner=alice, data=jsonl(header(), *chain(1)) + b"x\ny\nz\n")


# --- partial imports ----------------------------------------------------------------------


def test_partial_imports_the_sound_part_and_reports_the_rest(alice, existing):
    data = b"".join(
        [
            jsonl(header()),  # 1
            jsonl(*chain(3)),  # 2-4
            b"{broken\n",  # 5
            jsonl(entry("o1", "missing")),  # 6 dangling
            jsonl(entry("o2", "o1")),  # 7 child of a skipped entry
            jsonl(entry("o3", "o2")),  # 8 grandchild
            jsonl(entry("l1", "e0000003", "label", targetId="o2", label="x")),  # 9 label on a skipped entry
            jsonl(entry("ok", "e0000003")),  # 10
            jsonl(entry("bad", "ok", "compaction", summary=1, tokensBefore=1)),  # 11
        ]
    )
    result = pipeline.session_import(owner=alice, data=data, partial=True)
    assert result.created
    assert result.added == 4
    assert [p.line for p in result.skipped] == [5, 6, 7, 8, 9, 11]
    session = Session.objects.get(pk=result.session.pk)
    assert session.import_report == [p.as_dict() for p in result.skipped]
    assert [e.entry_id for e in assert_tree(session, expected=4)] == ["e0000001", "e0000002", "e0000003", "ok"]
    assert session.leaf_id == "ok"  # the last line that could be stored


def test_partial_leaf_skips_back_over_skipped_lines(alice):
    data = jsonl(header(), *chain(3), entry("z", "missing"))
    result = pipeline.session_import(owner=alice, data=data, partial=True)
    assert result.session.leaf_id == "e0000003"


def test_partial_still_refuses_an_unusable_file(alice, existing):
    only(rejected(alice, jsonl(*chain(2)), partial=True), 1, "missing session header")
    only(rejected(alice, jsonl(header(version=4)), partial=True), 1, "version 4")


def test_partial_reimport_of_the_fixed_file_adds_the_rest(alice):
    broken = jsonl(header(), *chain(2)) + b"oops\n" + jsonl(*chain(2, start=3, parent="e0000002"))
    first = pipeline.session_import(owner=alice, data=broken, partial=True)
    assert first.added == 4  # only the 'oops' line was skipped
    assert [p.line for p in first.skipped] == [4]
    fixed = jsonl(header(), *chain(5))
    again = pipeline.session_import(owner=alice, data=fixed)
    assert again.added == 1
    assert_tree(first.session, expected=5)
    assert export_bytes(again.session) == fixed


# --- what pi itself writes ----------------------------------------------------------------


def test_a_v1_compaction_whose_index_pointed_at_the_header(alice):
    # pi's v1->v2 migration leaves no firstKeptEntryId when the index is the header or out of range.
    data = jsonl(
        header(version=None),
        {"type": "message", "timestamp": "2025-12-08T23:23:00.000Z", "message": user("one")["message"]},
        {
            "type": "compaction",
            "timestamp": "2025-12-08T23:23:01.000Z",
            "summary": "S0",
            "tokensBefore": 5,
            "firstKeptEntryIndex": 0,
        },
        {"type": "message", "timestamp": "2025-12-08T23:23:02.000Z", "message": assistant("two")["message"]},
        {
            "type": "compaction",
            "timestamp": "2025-12-08T23:23:03.000Z",
            "summary": "S1",
            "tokensBefore": 7,
            "firstKeptEntryIndex": 99,
        },
        {"type": "message", "timestamp": "2025-12-08T23:23:04.000Z", "message": user("three")["message"]},
    )
    result = pipeline.session_import(owner=alice, data=data)
    assert result.skipped == []
    stored = assert_tree(result.session, expected=5)
    for compaction in (stored[1], stored[3]):
        obj = json.loads(compaction.raw)
        assert "firstKeptEntryId" not in obj
        assert "firstKeptEntryIndex" not in obj
    messages = selectors.session_context(session=result.session)["messages"]
    # No kept entries: the last summary, then what follows the compaction.
    assert [(m["role"], m.get("summary")) for m in messages] == [("compactionSummary", "S1"), ("user", None)]


def test_a_duplicated_header_line(alice):
    # pi rewrites header + entries after a header-only file: the header appears twice.
    data = jsonl(header(), header(), *chain(3))
    result = pipeline.session_import(owner=alice, data=data)
    assert (result.added, result.skipped) == (3, [])
    assert export_bytes(result.session) == data
    assert pipeline.session_import(owner=alice, data=data).added == 0


def test_a_header_repeated_with_the_entries_before_it(alice):
    # pi v0.58's lazy flush after a fork that had no assistant message yet: header and the early
    # entries are written again, byte for byte, before the new ones.
    early = chain(2)
    later = chain(2, start=3, parent="e0000002")
    data = jsonl(header(), *early, header(), *early, *later)
    result = pipeline.session_import(owner=alice, data=data)
    assert result.skipped == []
    assert [e.entry_id for e in assert_tree(result.session, expected=4)] == [f"e000000{i}" for i in range(1, 5)]
    assert result.session.leaf_id == "e0000004"
    # A repeated id whose line differs is still an error.
    changed = jsonl(header(), *early, header(), entry("e0000002", "e0000001", message=user("edited")["message"]))
    with pytest.raises(ImportRejected, match="1 problem"):
        pipeline.session_import(owner=alice, data=jsonl(header("s2"), *early) + changed.split(b"\n", 1)[1])


def test_crlf_line_endings(alice):
    # pi never writes them, but its reader takes them (JSON allows the trailing whitespace).
    data = jsonl(header(), *chain(2)).replace(b"\n", b"\r\n")
    session = pipeline.session_import(owner=alice, data=data).session
    assert_tree(session, expected=2)
    assert export_bytes(session) == data
    assert pipeline.session_import(owner=alice, data=data).added == 0


# --- re-imports ---------------------------------------------------------------------------


def test_reimporting_the_same_file_adds_nothing(alice):
    data = jsonl(header(), *chain(5))
    pipeline.session_import(owner=alice, data=data)
    before = counts()
    for _ in range(3):
        result = pipeline.session_import(owner=alice, data=data)
        assert (result.created, result.added) == (False, 0)
    assert counts() == before


def test_a_grown_file_adds_the_new_lines_only(alice):
    data = jsonl(header(), *chain(5))
    session = pipeline.session_import(owner=alice, data=data).session
    services.leaf_move(session=session, entry_id="e0000002")
    grown = data + jsonl(*chain(3, start=6, parent="e0000005"))
    result = pipeline.session_import(owner=alice, data=grown)
    assert result.added == 3
    session = Session.objects.get(pk=session.pk)
    assert session.leaf_id == "e0000008"
    assert export_bytes(session) == grown
    assert_tree(session, expected=8)


def test_a_grown_file_with_a_bad_new_line_reports_its_real_line_number(alice):
    data = jsonl(header(), *chain(5))
    pipeline.session_import(owner=alice, data=data)
    grown = data + jsonl(*chain(1, start=6, parent="e0000005")) + b"{bad\n" + jsonl(entry("z", "nope"))
    before = counts()
    with pytest.raises(ImportRejected) as exc_info:
        pipeline.session_import(owner=alice, data=grown)
    assert [line for line, _ in problems(exc_info)] == [8, 9]
    assert counts() == before


def test_a_modified_existing_line_is_a_conflict(alice):
    data = jsonl(header(), *chain(4))
    session = pipeline.session_import(owner=alice, data=data).session
    lines = data.split(b"\n")
    lines[2] = lines[2].replace(b"text of e0000002", b"tampered")
    before = counts()
    with pytest.raises(SessionsError) as exc_info:
        pipeline.session_import(owner=alice, data=b"\n".join(lines))
    assert exc_info.value.extra["errors"] == [
        {"line": 3, "message": "entry 'e0000002' differs from the stored entry with that id"}
    ]
    assert counts() == before
    assert export_bytes(Session.objects.get(pk=session.pk)) == data


def test_a_modified_line_in_a_grown_file_is_a_conflict(alice):
    data = jsonl(header(), *chain(4))
    pipeline.session_import(owner=alice, data=data)
    tampered = data.replace(b"text of e0000004", b"text of E0000004")
    grown = tampered + jsonl(*chain(1, start=5, parent="e0000004"))
    before = counts()
    with pytest.raises(SessionsError, match="nothing was imported") as exc_info:
        pipeline.session_import(owner=alice, data=grown)
    assert [line for line, _ in problems(exc_info)] == [5]
    assert counts() == before
