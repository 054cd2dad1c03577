"""The session page shows only the actions the user's role allows (access.CAPABILITIES):
viewer reads; reviewer also labels and shares; editor also chats, continues (branch) and forks;
admin (and a personal session's owner) also renames and deletes."""

from __future__ import annotations

import pytest

from tests.worlds import World

pytestmark = pytest.mark.django_db

# what each capability draws on the page
MARKS = {
    "label": ['data-action="label"', 'id="label-form-template"', "· l label"],
    "share": ['data-action="share"', 'data-action="share-branch"'],
    "chat": ['id="chat-composer"', 'data-action="regenerate"', 'data-action="edit"', 'data-action="compact"'],
    "branch": ['data-action="continue"'],
    "fork": ['data-action="fork"'],
    "manage": ['data-action="rename"'],
    "delete": ['data-action="delete"'],
}
SHOWN = {
    "viewer": set(),
    "reviewer": {"label", "share"},
    "editor": {"label", "share", "chat", "branch", "fork"},
    "admin": set(MARKS),
}


def page(world: World, who: str, scope: str = "team") -> str:
    response = world.client(who).get(f"/sessions/{world.sessions[scope].public_id}/")
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("role", list(SHOWN))
def test_each_role_sees_exactly_its_actions(world, role):
    html = page(world, role)
    for cap, marks in MARKS.items():
        for mark in marks:
            if cap in SHOWN[role]:
                assert mark in html, f"{role} should see {mark}"
            else:
                assert mark not in html, f"{role} should not see {mark}"
    assert 'data-action="copy"' in html  # a link to a message is for everyone who can read
    assert "Export JSONL" in html
    assert ("data-readonly" in html) is ("chat" not in SHOWN[role])


def test_the_owner_of_a_personal_session_sees_everything(world):
    html = page(world, "owner", "personal")
    for marks in MARKS.values():
        for mark in marks:
            assert mark in html, mark


def test_earlier_messages_follow_the_role_too(world):
    s = world.sessions["team"]
    before = world.ids["team"]["a2"]
    url = f"/sessions/{s.public_id}/conversation/earlier/?before={before}"
    viewer = world.client("viewer").get(url).content.decode()
    editor = world.client("editor").get(url).content.decode()
    assert 'data-action="fork"' in editor and 'data-action="label"' in editor
    assert 'data-action="fork"' not in viewer and 'data-action="label"' not in viewer
    assert 'data-action="copy"' in viewer
