"""Deleting a session takes its comments, verdicts and review requests with it (checked at commit:
the foreign keys are deferred, so a transactional test is needed to see a dangling one)."""

from __future__ import annotations

import pytest

from sessions_app.models import ReviewComment, ReviewRequest, Verdict
from sessions_app.store import reviews, services
from tests.worlds import make_world

pytestmark = pytest.mark.django_db(transaction=True)


def test_session_delete_takes_its_review_rows(django_user_model):
    world = make_world(django_user_model)
    s, ids = world.sessions["team"], world.ids["team"]
    root = reviews.comment_create(session=s, author=world.users["reviewer"], entry_id=ids["a1"], body="x")
    reviews.comment_create(session=s, author=world.users["editor"], entry_id=ids["a1"], body="y", parent_id=root.pk)
    reviews.request_create(session=s, requester=world.users["admin"], reviewer="editor")
    reviews.verdict_create(session=s, reviewer=world.users["editor"], entry_id=ids["a2"], verdict="approved")
    services.session_delete(session=s)
    assert not ReviewComment.objects.exists() and not Verdict.objects.exists() and not ReviewRequest.objects.exists()
    for key in ("other", "personal"):
        services.session_delete(session=world.sessions[key])
