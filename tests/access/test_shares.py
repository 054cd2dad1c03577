"""Share links: a branch link shows only the path to its entry and what grows below it; links stop
working once revoked, expired, or when their creator loses the right to share."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from sessions_app.access import revoke, teams
from sessions_app.models import AuditRecord, ShareLink
from sessions_app.store import services, shares
from tests.builders import assistant, user
from tests.worlds import World

pytestmark = pytest.mark.django_db


@pytest.fixture
def branched(world: World) -> World:
    """The team session gets a second branch under a1: u2b - a2b (the leaf stays on a2)."""
    s = world.sessions["team"]
    ids = world.ids["team"]
    admin = world.users["admin"]
    ids["u2b"] = services.entry_append(
        session=s, payload=user("secret other branch", 1_767_600_010_000), parent_id=ids["a1"], author=admin
    ).entry_id
    ids["a2b"] = services.entry_append(
        session=s, payload=assistant("hidden answer", 1_767_600_011_000), author=admin
    ).entry_id
    services.leaf_move(session=s, entry_id=ids["a2"])
    s.refresh_from_db()
    return world


def make(world: World, who: str = "reviewer", entry: str | None = None, **data: str) -> str:
    sid = world.sessions["team"].public_id
    body = {"entry": world.ids["team"][entry] if entry else "", **data}
    response = world.client(who).post(f"/sessions/{sid}/share/", body)
    assert response.status_code == 200, response.content
    found = re.search(r'id="share-url"[^>]*href="([^"]+)"', response.content.decode())
    assert found is not None
    return found.group(1).replace("http://testserver", "")


def shown_ids(html: str) -> set[str]:
    return set(re.findall(r'data-id="([^"]+)"', html))


def test_whole_session_link(branched):
    url = make(branched)
    html = Client().get(url).content.decode()
    assert "secret other branch" in html  # in the tree
    assert "second answer" in html  # the conversation follows the session's leaf
    assert set(branched.ids["team"].values()) <= shown_ids(html)


def test_branch_link_stays_inside_its_branch(branched):
    ids = branched.ids["team"]
    url = make(branched, entry="u2b")
    response = Client().get(url)
    assert response.status_code == 200
    html = response.content.decode()
    inside = {ids[k] for k in ("info", "model", "u1", "a1", "u2b", "a2b")}
    assert shown_ids(html) == inside
    assert "second question" not in html
    assert "second answer" not in html
    assert "hidden answer" in html  # the leaf is outside, so it shows the shared entry's path
    # asking for an entry outside the branch is a 404, inside one is fine
    assert Client().get(url + f"?leaf={ids['a2']}").status_code == 404
    assert Client().get(url + "?leaf=nope").status_code == 404
    inside_page = Client().get(url + f"?leaf={ids['a1']}").content.decode()
    assert "hidden answer" not in inside_page.split('id="conversation"')[1]
    assert shown_ids(inside_page) == inside


def test_a_branch_link_opens_the_newest_leaf_as_the_session_page_does(branched):
    """Off the session's leaf, a branch link shows the tip reached through the newest children
    (explorer.newest_leaf, pi's findNewestLeaf), not the entry written last."""
    s, ids, admin = branched.sessions["team"], branched.ids["team"], branched.users["admin"]
    newer = services.entry_append(session=s, payload=user("newer branch"), parent_id=ids["u2b"], author=admin)
    services.entry_append(session=s, payload=user("written last"), parent_id=ids["a2b"], author=admin)
    services.leaf_move(session=s, entry_id=ids["a2"])
    html = Client().get(make(branched, entry="u2b")).content.decode()
    conversation = html.split('id="conversation"')[1]
    assert "newer branch" in conversation and "written last" not in conversation
    assert re.search(rf'id="explorer"[^>]* data-leaf="{newer.entry_id}"', html)


def test_scope_is_path_and_descendants(branched):
    ids = branched.ids["team"]
    share, _ = shares.share_create(session=branched.sessions["team"], user=branched.users["admin"], entry_id=ids["a1"])
    assert shares.share_scope(share) == set(ids.values())
    share, _ = shares.share_create(session=branched.sessions["team"], user=branched.users["admin"], entry_id=ids["u2"])
    assert shares.share_scope(share) == {ids[k] for k in ("info", "model", "u1", "a1", "u2", "a2")}


def test_revoked_and_expired_links_stop_working(branched):
    url = make(branched, entry="u2")
    assert Client().get(url).status_code == 200
    share = ShareLink.objects.get()
    client = branched.client("reviewer", **{"HX-Request": "true"})
    response = client.post(f"/settings/shares/{share.pk}/revoke/")
    assert response.status_code == 200
    assert "revoked" in response.content.decode()
    assert Client().get(url).status_code == 404
    url = make(branched, expires_days="1")
    assert Client().get(url).status_code == 200
    ShareLink.objects.filter(revoked_at__isnull=True).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert Client().get(url).status_code == 404


def test_links_die_with_the_creators_right_to_share(branched):
    """Losing the role revokes the link in the database: giving the role back does not revive it."""
    url = make(branched, who="reviewer")
    kept = make(branched, who="admin")
    teams.member_role_set(
        team=branched.core, user=branched.users["reviewer"], role="viewer", actor=branched.users["admin"]
    )
    assert Client().get(url).status_code == 404
    share = ShareLink.objects.get(created_by=branched.users["reviewer"])
    assert share.revoked_at is not None
    record = AuditRecord.objects.filter(action="share.revoke", obj_id=share.prefix).get()
    assert record.actor_id is None
    teams.member_role_set(
        team=branched.core, user=branched.users["reviewer"], role="reviewer", actor=branched.users["admin"]
    )
    assert Client().get(url).status_code == 404
    assert Client().get(kept).status_code == 200  # the admin's link was never in question


def test_removal_and_deactivation_revoke_for_good(branched):
    admin, editor = branched.users["admin"], branched.users["editor"]
    url = make(branched, who="editor")
    teams.member_remove(team=branched.core, user=editor, actor=admin)
    teams.member_invite(team=branched.core, username="editor", role="editor", actor=admin)
    assert Client().get(url).status_code == 404
    url = make(branched, who="editor")
    revoke.user_deactivate(user=editor, actor=admin)
    type(editor).objects.filter(pk=editor.pk).update(is_active=True)
    assert Client().get(url).status_code == 404
    assert ShareLink.objects.filter(created_by=editor, revoked_at__isnull=True).count() == 0


def test_moving_a_session_revokes_links_of_who_may_not_share_there(branched):
    """A session moved to another team: its links made by someone without the right to share there
    are revoked; the mover's own (an admin of both teams) stays."""
    admin, other_admin = branched.users["admin"], branched.users["other_admin"]
    reviewer_url = make(branched, who="reviewer")
    admin_url = make(branched, who="admin")
    teams.member_invite(team=branched.other, username="admin", role="admin", actor=other_admin)
    teams.session_move_to_team(session=branched.sessions["team"], team=branched.other, actor=admin)
    teams.member_invite(team=branched.other, username="reviewer", role="reviewer", actor=other_admin)
    assert Client().get(reviewer_url).status_code == 404
    assert Client().get(admin_url).status_code == 200


def test_views_are_counted_and_audited(branched):
    url = make(branched, entry="u2")
    Client().get(url)
    Client().get(url)
    share = ShareLink.objects.get()
    assert share.views == 2
    assert share.last_viewed_at is not None
    assert AuditRecord.objects.filter(action="share.view", obj_id=share.prefix).count() == 2
    assert AuditRecord.objects.filter(action="share.create").count() == 1


def test_listing_and_who_may_revoke(branched):
    make(branched, who="reviewer")
    share = ShareLink.objects.get()
    assert "whole session" in branched.client("reviewer").get("/settings/shares/").content.decode()
    assert "whole session" in branched.client("admin").get("/settings/shares/").content.decode()  # admin sees it
    assert "whole session" not in branched.client("editor").get("/settings/shares/").content.decode()
    # another member who is not admin cannot revoke it; an outsider gets the same 404
    assert branched.client("editor").post(f"/settings/shares/{share.pk}/revoke/").status_code == 404
    assert branched.client("owner").post(f"/settings/shares/{share.pk}/revoke/").status_code == 404
    assert ShareLink.objects.get().revoked_at is None
    assert branched.client("admin").post(f"/settings/shares/{share.pk}/revoke/").status_code == 302
    assert ShareLink.objects.get().revoked_at is not None


def test_api_share_and_unknown_entry(branched):
    sid = branched.sessions["team"].public_id
    client = branched.client("reviewer")
    response = client.post(
        f"/api/sessions/{sid}/shares", {"entryId": branched.ids["team"]["u2b"]}, content_type="application/json"
    )
    assert response.status_code == 201
    body = response.json()
    assert body["entryId"] == branched.ids["team"]["u2b"]
    assert "hidden answer" in Client().get(body["url"].replace("http://testserver", "")).content.decode()
    response = client.post(f"/api/sessions/{sid}/shares", {"entryId": "nope"}, content_type="application/json")
    assert response.status_code == 404
    assert ShareLink.objects.count() == 1


def test_unknown_token_is_404(db):
    assert Client().get("/s/pis_nothing/").status_code == 404


def test_a_branch_link_names_itself_from_its_path_only(branched):
    """The title and heading come from the shared path: a session_info on another branch, one
    below the shared entry, and a second root's first message never show."""
    s, ids, admin = branched.sessions["team"], branched.ids["team"], branched.users["admin"]
    services.entry_append(session=s, payload=user("second root question"), parent_id=None, author=admin)
    services.entry_append(session=s, payload={"type": "session_info", "name": "Name below"}, parent_id=ids["a2b"])
    services.entry_append(session=s, payload={"type": "session_info", "name": "Other branch name"}, parent_id=ids["a2"])
    url = make(branched, entry="u2b")
    html = Client().get(url).content.decode()
    assert "Other branch name" not in html
    assert "second root question" not in html
    assert "[name: Name below]" in html  # below the shared entry: in the tree, not the name
    assert "<title>team session (shared)" in html  # the session_info at the path's root
    assert re.search(r'<h1 class="title">team session</h1>', html)


def test_a_branch_link_without_a_name_on_its_path_shows_its_first_user_message(branched):
    s, ids, admin = branched.sessions["team"], branched.ids["team"], branched.users["admin"]
    services.entry_append(session=s, payload=user("root two first"), parent_id=None, author=admin)
    b1 = services.entry_append(session=s, payload=user("branch two question"), author=admin)
    services.entry_append(session=s, payload={"type": "session_info", "name": "Team name"}, parent_id=ids["a2"])
    share, _ = shares.share_create(session=s, user=admin, entry_id=b1.entry_id)
    assert shares.shared_title(share) == "root two first"
    s.refresh_from_db()
    assert s.name == "Team name"
