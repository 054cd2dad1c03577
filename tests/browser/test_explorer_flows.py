"""Used like a user would: import a real pi file, search, fold, switch siblings, label, deep links,
continue, fork, export and re-import; and no XSS payload ever runs."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app.models import Session
from sessions_app.store import services
from tests.browser.harness import message_actions, session_actions, show_pane, wait_settled, wait_until
from tests.browser.shots import shot
from tests.paths import LARGE_SESSION
from tests.xss import ALL, hostile_payloads

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def branchy(owner: User) -> tuple[Session, dict[str, str]]:
    from tests.builders import assistant, user

    s = services.session_create(owner=owner, name="Branchy session")
    ids: dict[str, str] = {}

    def add(key: str, payload: dict[str, Any], parent: str | None = None) -> None:
        kw: dict[str, Any] = {"parent_id": ids[parent]} if parent else {}
        ids[key] = services.entry_append(session=s, payload=payload, author=owner, **kw).entry_id

    add("u1", user("How do I parse JSONL?", 1_767_600_000_000))
    add("a1", assistant("Read it **line by line**.", 1_767_600_001_000))
    add("u2a", user("And in Rust?", 1_767_600_002_000))
    add("a2a", assistant("Use serde_json.", 1_767_600_003_000))
    add("u3a", user("Thanks!", 1_767_600_004_000))
    add("a3a", assistant("You're welcome.", 1_767_600_005_000))
    add("u2b", user("And in Go?", 1_767_600_006_000), parent="a1")
    add("a2b", assistant("Use bufio.Scanner.", 1_767_600_007_000))
    services.leaf_move(session=s, entry_id=ids["a3a"])
    s.refresh_from_db()
    return s, ids


def test_import_search_fold_and_open(login, server, tmp_path):
    page = login()
    shot(page, "list-empty-light")
    with page.expect_response(lambda r: "/import/" in r.url):
        page.set_input_files("#import-files", str(LARGE_SESSION))
    page.wait_for_selector(".import-result.ok")
    assert "imported" in page.inner_text("#import-results")
    page.wait_for_selector("#session-table td.name a")
    shot(page, "list-light")
    page.click("#session-table td.name a")
    page.wait_for_selector("#conversation .msg")
    show_pane(page, "tree")
    page.wait_for_selector("#tree-body li.node")
    shot(page, "detail-large-light")

    # Find a node by search (all words must match), open it: the conversation scrolls to it.
    page.fill("[data-tree-search]", "publish npm")
    page.wait_for_selector("#tree-body .results li.node")
    first = page.locator("#tree-body .results li.node").first
    node_id = first.get_attribute("data-id")
    shot(page, "detail-search-light")
    first.locator("a.txt").click()
    page.wait_for_selector(f"#e-{node_id}.target")
    assert page.locator(f"#e-{node_id}").is_visible()
    assert f"target={node_id}" in page.url

    # Fold and unfold a segment (mouse), then with the keyboard.
    show_pane(page, "tree")
    wait_settled(page)  # (opening the result swapped the explorer in: its search box is wired once settled)
    page.fill("[data-tree-search]", "")
    page.wait_for_selector("#tree-body ul.main li.node")
    head = page.locator("#tree-body li.node[data-head]:has(button.tog)").first
    seg = head.get_attribute("data-seg")
    members = page.locator(f'#tree-body li.node[data-seg="{seg}"]:not([data-head])')
    assert members.count() > 0 and members.first.is_visible()
    head.locator("button.tog").click()
    assert not members.first.is_visible()
    shot(page, "detail-folded-light")
    head.locator("button.tog").click()
    assert members.first.is_visible()
    page.locator("#tree-body").focus()
    page.keyboard.press("ArrowLeft")  # the head is selected: fold it
    assert not members.first.is_visible()
    page.keyboard.press("ArrowRight")
    assert members.first.is_visible()
    page.keyboard.press("ArrowDown")
    selected = page.locator("#tree-body .sel").get_attribute("data-id")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#e-{selected}.target")

    # Lazy parts: the tree starts near the leaf; earlier entries load on demand.
    show_pane(page, "tree")
    gap = page.locator("#tree-body li.gap button").first
    if gap.count():
        before = page.locator("#tree-body li.node").count()
        gap.click()
        wait_until(page, f"document.querySelectorAll('#tree-body li.node').length > {before}")


def test_siblings_labels_deep_links_continue_and_fork(login, server):
    page = login()
    owner = User.objects.get(username="alice")
    s, ids = branchy(owner)
    page.goto(f"{server}/sessions/{s.public_id}/")
    page.wait_for_selector(f"#e-{ids['a3a']}")
    shot(page, "detail-branchy-light")

    # Switch siblings at the branch point: 1/2 -> 2/2.
    sib = page.locator(f"#e-{ids['u2a']} .sibs")
    assert sib.inner_text().replace(" ", "").replace("\n", "") == "\u20391/2\u203a"
    sib.locator("[data-sib-next]").click()
    page.wait_for_selector(f"#e-{ids['u2b']}")
    assert "And in Go?" in page.inner_text("#conversation")
    assert page.locator(f"#e-{ids['u2a']}").count() == 0
    page.locator(f"#e-{ids['u2b']} [data-sib-prev]").click()
    page.wait_for_selector(f"#e-{ids['u2a']}")

    # Label with the keyboard in the tree ("l"), then clear it from the conversation.
    show_pane(page, "tree")
    page.locator(f"#t-{ids['a1']} a.txt").click()
    page.wait_for_selector(f"#t-{ids['a1']}.focus", state="attached")
    show_pane(page, "tree")
    page.locator(f"#t-{ids['a1']}").click(position={"x": 5, "y": 5})
    page.locator("#tree-body").focus()
    page.keyboard.press("l")
    page.fill("#tree-body .label-form input[name=label]", "good answer")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#t-{ids['a1']} .badge")
    assert page.inner_text(f"#t-{ids['a1']} .badge") == "good answer"
    assert page.inner_text(f"#e-{ids['a1']} .badge") == "good answer"
    shot(page, "detail-labelled-light")
    message_actions(page, f"#e-{ids['a1']}")
    page.locator(f"#e-{ids['a1']} summary[data-action=label]").click()
    page.locator(f"#e-{ids['a1']} .label-form button[name=clear]").click()
    wait_until(page, f"!document.querySelector('#t-{ids['a1']} .badge')")

    # Copy a deep link and follow it: that path opens, scrolled to the target.
    page.goto(f"{server}/sessions/{s.public_id}/?target={ids['u2b']}")
    message_actions(page, f"#e-{ids['a1']}")
    page.locator(f"#e-{ids['a1']} [data-action=copy]").click()
    link = page.locator(f"#e-{ids['a1']} [data-action=copy]").get_attribute("data-copied")
    assert link and f"target={ids['a1']}" in link and "leaf=" in link
    page.goto(link)
    page.wait_for_selector(f"#e-{ids['a1']}.target")
    assert page.locator(f"#e-{ids['a2b']}").count() == 1  # the path of the link, not the session leaf
    assert page.evaluate(
        f"(() => {{ const r = document.getElementById('e-{ids['a1']}').getBoundingClientRect();"
        " return r.top >= 0 && r.top < innerHeight; })()"
    )

    # Continue from a user message: the leaf moves to its parent, the text goes to the composer.
    page.goto(f"{server}/sessions/{s.public_id}/")
    message_actions(page, f"#e-{ids['u2a']}")
    page.locator(f"#e-{ids['u2a']} [data-action=continue]").click()
    wait_until(page, "document.getElementById('composer-text').value === 'And in Rust?'")
    s.refresh_from_db()
    assert s.leaf_id == ids["a1"]
    # The explorer follows the moved leaf: the message continued from leaves the shown path.
    wait_until(page, f"!document.getElementById('e-{ids['u2a']}')")
    shot(page, "detail-continue-light")

    # Fork from an assistant message: a new session holding that path.
    message_actions(page, f"#e-{ids['a1']}")
    page.locator(f"#e-{ids['a1']} [data-action=fork]").click()
    page.wait_for_url(re.compile(r"/sessions/(?!" + s.public_id + ")"))
    fork = Session.objects.exclude(pk=s.pk).get()
    assert fork.public_id in page.url
    assert "Read it" in page.inner_text("#conversation")


def test_export_delete_and_reimport(login, server, tmp_path):
    page = login()
    owner = User.objects.get(username="alice")
    s, ids = branchy(owner)
    count = s.entries.count()
    page.goto(f"{server}/sessions/{s.public_id}/")
    session_actions(page)
    with page.expect_download() as dl:
        page.click("text=Export JSONL")
    jsonl = tmp_path / "export.jsonl"
    dl.value.save_as(jsonl)
    with page.expect_download() as dl:
        page.click("text=Export HTML")
    html = tmp_path / "export.html"
    dl.value.save_as(html)

    session_actions(page)
    page.click("text=Delete…")
    page.click("[data-confirm-delete]")
    page.wait_for_url(server + "/")
    assert not Session.objects.filter(pk=s.pk).exists()

    with page.expect_response(lambda r: "/import/" in r.url):
        page.set_input_files("#import-files", str(jsonl))
    page.wait_for_selector(".import-result.ok")
    again = Session.objects.get(public_id=s.public_id)
    assert again.entries.count() == count

    # The HTML export works offline: tree sidebar, filters, deep links.
    offline = page.context.new_page()
    offline.goto(f"file://{html}?leafId={ids['a2b']}&targetId={ids['u2b']}")
    offline.wait_for_selector("#tree .row")
    assert "And in Go?" in offline.inner_text("#conv")
    assert "And in Rust?" not in offline.inner_text("#conv")
    offline.click("#filters button:text('user-only')")
    assert offline.locator("#tree .row.k-user").count() == 4
    assert offline.locator("#tree .row").count() == 5  # + the viewed leaf, always shown
    offline.fill("#q", "rust")
    wait_until(offline, "document.querySelectorAll('#tree .row').length === 1")  # a search shows matches only
    shot(offline, "export-html")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_no_xss_payload_runs_anywhere(login, server, tmp_path, theme):
    page = login(theme)
    owner = User.objects.get(username="alice")
    s = services.session_create(owner=owner, name="x", cwd="/tmp/" + ALL)
    entry_ids = [services.entry_append(session=s, payload=p, author=owner).entry_id for p in hostile_payloads()]
    for target in entry_ids[:4]:
        services.label_set(session=s, target_id=target, label=ALL[:300], author=owner)
    services.leaf_move(session=s, entry_id=entry_ids[-1])
    sid = s.public_id
    urls = [
        "/",
        f"/sessions/{sid}/",
        f"/sessions/{sid}/?filter=all",
        f"/sessions/{sid}/?q=user",
        f"/sessions/{sid}/?target={entry_ids[3]}",
        f"/sessions/{sid}/delete/",
        f"/admin/sessions_app/entry/?q={sid[:8]}",
    ]
    for url in urls:
        page.goto(server + url)
        page.wait_for_load_state("networkidle")
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        page.mouse.move(300, 300)
        assert page.evaluate("window.__xss") is None, url
    page.goto(f"{server}/sessions/{sid}/")
    shot(page, f"detail-xss-{theme}")
    session_actions(page)
    with page.expect_download() as dl:
        page.click("text=Export HTML")
    path = tmp_path / "x.html"
    dl.value.save_as(path)
    page.goto(f"file://{path}")
    page.wait_for_selector("#tree .row")
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    assert page.evaluate("window.__xss") is None
    # an import whose file name and content are hostile
    page.goto(server + "/")
    bad = tmp_path / "<img src=x onerror=window.__xss=1>.jsonl"
    bad.write_text(ALL + "\n")
    with page.expect_response(lambda r: "/import/" in r.url):
        page.set_input_files("#import-files", str(bad))
    page.wait_for_selector(".import-result.bad")
    assert page.evaluate("window.__xss") is None
    assert "line 1" in page.inner_text("#import-results")
    shot(page, f"list-import-error-{theme}")
    assert page.dialogs == []
