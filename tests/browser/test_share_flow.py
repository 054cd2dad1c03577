"""Share from the session page: the Share button makes a link shown once with a copy button; a
message's Share makes a link to its branch; both are listed under Shares."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from sessions_app.models import ShareLink
from sessions_app.store import services, shares
from sessions_app.store.importing import pipeline
from tests.browser.harness import message_actions, session_actions, show_pane, wait_until
from tests.browser.shots import shot
from tests.builders import assistant, user
from tests.paths import LARGE_SESSION

pytestmark = pytest.mark.django_db(transaction=True)


def test_share_the_session_and_a_branch(login, new_page, server):
    page = login()
    alice = User.objects.get(username="alice")
    s = services.session_create(owner=alice, name="Shareable")
    u1 = services.entry_append(session=s, payload=user("What is a monad?", 1_767_600_000_000), author=alice)
    services.entry_append(session=s, payload=assistant("A monoid in endofunctors.", 1_767_600_001_000), author=alice)
    page.goto(f"{server}/sessions/{s.public_id}/")
    session_actions(page)
    page.click(".head-actions [data-action=share]")
    page.select_option(".head-share select[name=expires_days]", "30")
    page.click(".head-share [data-action=create-share]")
    link = page.wait_for_selector(".head-share #share-url")
    url = link.get_attribute("href")
    assert url and "/s/pis_" in url
    page.click(".head-share [data-action=copy-share]")
    assert page.get_attribute(".head-share [data-action=copy-share]", "data-copied") == url
    shot(page, "gap-share-dialog")
    share = ShareLink.objects.get()
    assert share.entry_id is None and share.expires_at is not None
    # the link works signed out
    anon = new_page()
    anon.goto(url)
    assert "What is a monad?" in anon.content()

    page.goto(f"{server}/sessions/{s.public_id}/")
    msg = f"#e-{u1.entry_id}"
    message_actions(page, msg)
    page.click(f"{msg} [data-action=share-branch]")
    page.click(f"{msg} [data-action=create-share]")
    page.wait_for_selector(f"{msg} #share-url")
    assert "this branch" in page.inner_text(f"{msg} .share-created")
    shot(page, "gap-share-branch")
    assert ShareLink.objects.filter(entry_id=u1.entry_id).exists()
    page.click(f"{msg} .share-form a[href='/settings/shares/']")
    page.wait_for_url(f"{server}/settings/shares/")
    assert page.locator("#share-table tbody tr").count() == 2


def test_a_large_session_shared_is_the_sessions_explorer(login, new_page, server):
    """pi's large fixture behind a link, signed out: the session page's tree (lazy gaps, filters)
    and conversation, as wide as the screen."""
    alice = User.objects.get(username="alice")
    s = pipeline.session_import(owner=alice, data=LARGE_SESSION.read_bytes()).session
    _, token = shares.share_create(session=s, user=alice)
    anon = new_page()
    anon.goto(f"{server}/s/{token}/")
    anon.wait_for_selector("#conversation .msg.target")
    assert anon.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(anon, "shared-large-light")
    show_pane(anon, "tree")
    before = anon.locator("#tree-body li.node").count()
    anon.locator("#tree-body li.gap button").first.click()  # under the link's own URL
    wait_until(anon, f"document.querySelectorAll('#tree-body li.node').length > {before}")
    anon.click("#tree-form label.chip:has-text('User only')")
    anon.wait_for_selector("#tree-body[data-mode=user-only]")
    node = anon.locator("#tree-body li.node.k-user").first
    entry = node.get_attribute("data-id")
    node.locator("a.txt").click()
    anon.wait_for_selector(f"#conversation #e-{entry}.target")
    assert f"/s/{token}/" in anon.url and anon.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(anon, "shared-large-opened-light")
