"""Review email (Django's backend; locmem here): a review request mails the reviewers it asks, an
@mention the members it names, once; never the actor, nobody who opted out, nothing when
PIWEB_REVIEW_EMAILS is off or the transaction rolls back."""

from __future__ import annotations

import pytest
from django.core import mail
from django.db import transaction

from sessions_app.store import review_mail, reviews
from tests.worlds import World

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _mail_on(settings, world: World):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.PIWEB_REVIEW_EMAILS = True
    settings.PIWEB_SITE_URL = "https://piweb.example"
    for name, user in world.users.items():
        user.email = f"{name}@example.com"
        user.save(update_fields=["email"])


def sent_to() -> list[str]:
    return sorted(to for m in mail.outbox for to in m.to)


def test_request_mails_the_reviewer(world, django_capture_on_commit_callbacks):
    s = world.sessions["team"]
    with django_capture_on_commit_callbacks(execute=True):
        reviews.request_create(
            session=s, requester=world.users["admin"], reviewer="reviewer", entry_id=world.ids["team"]["a1"]
        )
    assert sent_to() == ["reviewer@example.com"]
    message = mail.outbox[0]
    assert "admin asked you to review" in message.subject
    assert f"https://piweb.example/sessions/{s.public_id}/?leaf={world.ids['team']['a1']}" in message.body


def test_team_request_mails_its_reviewers_not_viewers_or_the_requester(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        reviews.request_create(session=world.sessions["team"], requester=world.users["admin"], team="core")
    assert sent_to() == ["editor@example.com", "reviewer@example.com"]


def test_mentions_mail_the_named_members_once(world, django_capture_on_commit_callbacks):
    s, a1 = world.sessions["team"], world.ids["team"]["a1"]
    with django_capture_on_commit_callbacks(execute=True):
        c = reviews.comment_create(
            session=s, author=world.users["reviewer"], entry_id=a1, body="@editor look; @other_admin @reviewer"
        )
    assert sent_to() == ["editor@example.com"]  # not an outsider, not the author
    assert "@editor look" in mail.outbox[0].body and f"#comment-{c.pk}" in mail.outbox[0].body
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        reviews.comment_update(comment=c, session=s, user=world.users["reviewer"], body="@editor look, @viewer too")
    assert sent_to() == ["viewer@example.com"]  # only the newly mentioned


def test_opt_out_and_switch_off(world, settings, django_capture_on_commit_callbacks):
    s = world.sessions["team"]
    client = world.client("reviewer")
    page = client.get("/reviews/").content.decode()
    assert 'data-action="review-email"' in page and 'name="emails" value="on" checked' in page
    assert client.post("/reviews/email/", {}).status_code == 302
    assert review_mail.opted_out(world.users["reviewer"])
    with django_capture_on_commit_callbacks(execute=True):
        reviews.request_create(session=s, requester=world.users["admin"], reviewer="reviewer")
    assert mail.outbox == []
    client.post("/reviews/email/", {"emails": "on"})
    settings.PIWEB_REVIEW_EMAILS = False
    with django_capture_on_commit_callbacks(execute=True):
        reviews.request_create(session=s, requester=world.users["admin"], reviewer="reviewer")
    assert mail.outbox == []
    assert "review-email" not in client.get("/reviews/").content.decode()


def test_no_mail_when_the_write_rolls_back(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError), transaction.atomic():
        reviews.request_create(session=world.sessions["team"], requester=world.users["admin"], reviewer="reviewer")
        raise RuntimeError("rolled back")
    assert mail.outbox == []


def test_a_session_named_over_lines_still_mails_with_a_one_line_subject(world, django_capture_on_commit_callbacks):
    """The subject carries the session's name, which falls back to a first message that often
    spans lines; a header may hold no line break (Django refuses it), so the name is made one line."""
    s = world.sessions["team"]
    s.name = "Fix the\nflaky\r\ntest"
    s.save(update_fields=["name"])
    with django_capture_on_commit_callbacks(execute=True):
        reviews.request_create(
            session=s, requester=world.users["admin"], reviewer="reviewer", entry_id=world.ids["team"]["a1"]
        )
    assert sent_to() == ["reviewer@example.com"]
    assert "“Fix the flaky test”" in mail.outbox[0].subject
