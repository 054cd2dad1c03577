"""Share from the session page: the Share button makes a link shown once with a copy button; a
message's Share makes a link to its branch; both are listed under Shares."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from sessions_app.models import ShareLink
from sessions_app.store import services
from tests.browser.harness import message_actions, session_actions
from tests.browser.shots import shot
from tests.builders import assistant, user

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
