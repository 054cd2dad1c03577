"""Entry ids of any shape (issue 19), as a property: sessions whose ids come from tests.idshapes
(the session's own id made as odd, within a header id's rules) are imported through the API's
import, then every page and route that takes the session or one of its entries answers as
documented (never a 500), and every id comes back as it went in.

A session here: u ─ call ─ tool (long output) ─ bash (long output) ─ image ─ label (on call)
                 └ alt (another answer)
"""

from __future__ import annotations

import json
import re
import uuid
from html import unescape
from typing import Any
from urllib.parse import quote

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils.html import escape
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sessions_app.core.entryids import dom_id
from sessions_app.live import streaming
from sessions_app.models import Entry, Session
from sessions_app.store import explorer
from tests.builders import assistant, entry, header, jsonl, tool_call, tool_result, user
from tests.idshapes import entry_ids
from tests.worlds import PNG

pytestmark = pytest.mark.django_db

ROLES = ("u", "call", "tool", "bash", "image", "alt", "label")
LONG = "\n".join(f"line {i}" for i in range(120))
SETTINGS = settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
id_sets = st.lists(entry_ids(), min_size=len(ROLES), max_size=len(ROLES), unique=True)
TRICKY = ["a/b", "..", "?x=1&y=2#z", "%2F%", " padded ", "<q \"'&>", "ünï 🙂"]


def session_id(like: str) -> str:
    """A session id for the example (a header id: no '/', nothing unprintable), as odd as `like`."""
    return "".join(c for c in like if c.isprintable() and c != "/")[:100] + f" {uuid.uuid4()}"


def session_file(ids: dict[str, str]) -> bytes:
    call = assistant("running it", call=tool_call("c1", "seq 120"), stopReason="toolUse")
    bash = {"role": "bashExecution", "command": "seq 120", "output": LONG, "exitCode": 0, "timestamp": 5}
    image = user("", content=[{"type": "image", "data": PNG, "mimeType": "image/png"}])
    return jsonl(
        header(session_id(ids["u"])),
        entry(ids["u"], None, message=user("question")["message"]),
        entry(ids["call"], ids["u"], message=call["message"]),
        entry(ids["tool"], ids["call"], message=tool_result("c1", LONG, 3)["message"]),
        entry(ids["bash"], ids["tool"], message=bash),
        entry(ids["image"], ids["bash"], message=image["message"]),
        entry(ids["alt"], ids["u"], message=assistant("another answer")["message"]),
        entry(ids["label"], ids["image"], "label", targetId=ids["call"], label="here"),
    )


def imported(client: Client, data: bytes) -> Session:
    r = ok(client.post("/api/sessions/import", {"file": SimpleUploadedFile("odd.jsonl", data)}), 201)
    return Session.objects.get(public_id=r.json()["id"])


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, (response.request["PATH_INFO"], response.status_code, response.content[:300])
    return response


def page(client: Client, url: str, **params: str) -> str:
    body: bytes = ok(client.get(url, params)).content
    return body.decode()


def fragment(client: Client, url: str, swap: str, **params: str) -> str:
    """What htmx gets for url (its query kept) swapping #swap."""
    body: bytes = ok(client.get(url, params or None, headers={"HX-Request": "true", "HX-Target": swap})).content
    return body.decode()


@SETTINGS
@given(id_sets)
@example(TRICKY)
def test_every_page_and_read_route_takes_any_entry_id(alice_client, id_list):
    ids = dict(zip(ROLES, id_list, strict=True))
    data = session_file(ids)
    session = imported(alice_client, data)
    sid = session.public_id
    base = reverse("sessions:detail", args=[sid])
    api = f"/api/sessions/{quote(sid, safe='')}"
    assert set(Entry.objects.filter(session=session).values_list("entry_id", flat=True)) == set(id_list)
    assert escape(base) in page(alice_client, reverse("sessions:list"))  # the list links the session
    page(alice_client, reverse("sessions:delete", args=[sid]))  # (its confirmation page)

    html = page(alice_client, base, leaf=ids["image"], target=ids["bash"])
    assert f'data-target="{escape(ids["bash"])}"' in html
    for role in ("u", "call", "bash", "image"):  # the path's messages (tool: inside its call)
        assert f'id="{dom_id(ids[role], "e")}"' in html
    # "Show all" and images, as the page links them
    for url in re.findall(r'hx-get="([^"]*)"[^>]*>Show all<', html):
        assert "line 119" in page(alice_client, unescape(url))
    for url in re.findall(r'<img class="msg-img" src="([^"]*)"', html):
        assert ok(alice_client.get(unescape(url)))["Content-Type"] == "image/png"
    # Each message's link, and each tree row's (filter "all": every entry), opens that entry.
    for link in re.findall(r'class="act" href="([^"]*)" data-copy', html):
        assert fragment(alice_client, unescape(link), "conversation").count('class="msg m-') >= 1
    rows = re.findall(
        r'data-id="([^"]*)"[^>]*>\s*(?:<span[^>]*></span>|<button[^>]*></button>)\s*'
        r'<span class="ic"[^>]*>[^<]*</span>\s*<a class="txt" href="([^"]*)"',
        fragment(alice_client, base, "tree-body", filter="all"),
    )
    assert sorted(unescape(i) for i, _ in rows) == sorted(id_list)
    for shown_id, href in rows:
        # (a label entry is bookkeeping: its row opens the message it labels, its nearest real entry)
        opened = escape(ids["image"]) if unescape(shown_id) == ids["label"] else shown_id
        assert f'data-target="{opened}"' in fragment(alice_client, unescape(href), "explorer")
    # Every lazy load and route that names an entry
    for entry_id in id_list:
        page(alice_client, reverse("sessions:tree_gap", args=[sid]), node=entry_id, up="1", leaf=ids["image"])
        page(alice_client, reverse("sessions:tree_gap", args=[sid]), node=entry_id)
        page(alice_client, reverse("sessions:tree_branch", args=[sid]), node=entry_id, d="1")
        page(alice_client, reverse("sessions:earlier", args=[sid]), before=entry_id, leaf=ids["image"])
        ok(alice_client.get(reverse("sessions:output", args=[sid, entry_id])))
        context = ok(alice_client.get(f"{api}/context", {"leaf": entry_id})).json()
        assert isinstance(context["messages"], list)
    assert "line 119" in page(alice_client, reverse("sessions:output", args=[sid, ids["tool"]]))
    ok(alice_client.get(reverse("sessions:image", args=[sid, ids["image"], 0])))
    ok(alice_client.get(reverse("sessions:image", args=[sid, ids["u"], 0])), 404)  # no image there

    nodes = ok(alice_client.get(f"{api}/tree")).json()["nodes"]
    assert [(n["id"], n["parentId"]) for n in nodes] == [(e["id"], e["parentId"]) for e in lines(data)]
    assert b"".join(ok(alice_client.get(f"{api}/export.jsonl")).streaming_content) == data
    assert b"".join(ok(alice_client.get(reverse("sessions:export_jsonl", args=[sid]))).streaming_content) == data
    ok(alice_client.get(reverse("sessions:export_html", args=[sid])))

    # A share link to the branch at `call`: its page, its lazy loads, its routes
    r = ok(alice_client.post(f"{api}/shares", {"entryId": ids["call"]}, "application/json"), 201)
    assert r.json()["entryId"] == ids["call"]
    anon = Client()
    shared = r.json()["url"].removeprefix("http://testserver")
    html = page(anon, shared)
    token = shared.split("/")[2]
    for url in re.findall(r'hx-get="([^"]*)"[^>]*>Show all<', html):
        assert "line 119" in page(anon, unescape(url))
    for role in ("call", "tool", "bash", "image", "label"):
        opened = ids["image"] if role == "label" else ids[role]  # (a label opens its nearest real entry)
        assert f'data-target="{escape(opened)}"' in fragment(anon, shared, "explorer", target=ids[role])
        page(anon, reverse("settings:shared_tree_gap", args=[token]), node=ids[role])
        page(anon, reverse("settings:shared_earlier", args=[token]), before=ids[role])
        ok(anon.get(reverse("settings:shared_output", args=[token, ids[role]])))
    ok(anon.get(reverse("settings:shared_image", args=[token, ids["image"], 0])))
    ok(anon.get(reverse("settings:shared_output", args=[token, ids["alt"]])), 404)  # outside the branch
    ok(anon.get(shared, {"target": ids["alt"]}), 404)


@SETTINGS
@given(id_sets)
@example(TRICKY)
def test_the_lazy_loads_a_page_links_take_any_entry_id(alice_client, monkeypatch, id_list):
    """With tiny windows, the tree draws gaps and folded branches and the conversation an "earlier"
    button: every URL the page and its fragments link (hx-get), followed, answers 200."""
    for name, value in (("FULL_TREE", 2), ("CHUNK", 1), ("BELOW_LIMIT", 1), ("CONV_BEFORE", 1), ("CONV_AFTER", 1)):
        monkeypatch.setattr(explorer, name, value)
    ids = dict(zip(ROLES, id_list, strict=True))
    session = imported(alice_client, session_file(ids))
    base = reverse("sessions:detail", args=[session.public_id])
    todo = [page(alice_client, base, target=ids["bash"]), page(alice_client, base, target=ids["alt"])]
    seen: set[str] = set()
    kinds: set[str] = set()
    while todo and len(seen) < 60:
        for url in re.findall(r'hx-get="([^"]*)"', todo.pop()):
            url = unescape(url)
            if url in seen:
                continue
            seen.add(url)
            kinds.add(url.split("?")[0].removeprefix(base).split("/")[0] or "page")
            todo.append(fragment(alice_client, url, "explorer"))
    assert {"tree", "conversation", "entries", "page"} <= kinds  # gaps or branches, earlier, show all


async def no_dispatch(turn: Any) -> None:
    return None


def lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines()[1:]]


@SETTINGS
@given(id_sets)
@example(TRICKY)
def test_every_write_that_names_an_entry_takes_any_entry_id(alice_client, monkeypatch, id_list):
    monkeypatch.setattr(streaming, "dispatch", no_dispatch)
    ids = dict(zip(ROLES, id_list, strict=True))
    session = imported(alice_client, session_file(ids))
    sid = session.public_id
    api = f"/api/sessions/{quote(sid, safe='')}"
    for role in ("u", "alt", "bash"):
        entry_id = ids[role]
        # REST: append under it (and with it as the new id), move the leaf, label it, fork at it
        r = ok(alice_client.post(f"{api}/entries", {**assistant("a"), "parentId": entry_id}, "application/json"), 201)
        assert json.loads(Entry.objects.get(session=session, entry_id=r.json()["id"]).raw)["parentId"] == entry_id
        r = ok(alice_client.put(f"{api}/leaf", {"entryId": entry_id}, "application/json"))
        assert r.json()["leafId"] == entry_id
        r = ok(alice_client.post(f"{api}/labels", {"targetId": entry_id, "label": "x"}, "application/json"), 201)
        label = json.loads(Entry.objects.get(session=session, entry_id=r.json()["id"]).raw)
        assert label["targetId"] == entry_id
        ok(alice_client.post(f"{api}/fork", {"entryId": entry_id}, "application/json"), 201)
        # The page's forms: continue, label, fork and a branch share, each then followed
        for name, fields in (
            ("continue", {}),
            ("label", {"label": "y", "target": entry_id}),
            ("fork", {}),
        ):
            r = ok(alice_client.post(reverse(f"sessions:{name}", args=[sid]), {"entry": entry_id, **fields}), 302)
            fragment(alice_client, r["Location"].split("#")[0], "explorer")
        r = ok(alice_client.post(reverse("settings:share_create", args=[sid]), {"entry": entry_id}))
        assert ok(alice_client.get(r.context["url"].removeprefix("http://testserver"))).status_code == 200
    # The live chat's commands (its turns are queued, not run: no model here)
    htmx = {"HX-Request": "true"}
    for name, fields, status in (
        ("regenerate", {"entry": ids["alt"]}, 204),
        ("edit", {"entry": ids["u"], "text": "again"}, 204),
        ("continue", {"entry": ids["bash"]}, 204),
    ):  # (navigate: tests/web/pages/test_entry_ids.py, on a transactional database)
        ok(alice_client.post(reverse(f"chat:{name}", args=[sid]), fields, headers=htmx), status)
    new_id = "n/" + ids["u"][:150]
    body = {**user("q"), "id": new_id, "parentId": ids["alt"]}
    assert ok(alice_client.post(f"{api}/entries", body, "application/json"), 201).json() == {"id": new_id}
    assert f'data-target="{escape(new_id)}"' in page(
        alice_client, reverse("sessions:detail", args=[sid]), target=new_id
    )
