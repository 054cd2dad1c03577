"""Every command that takes a username names the one it did not find (management/users.py)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "command",
    [
        ["deactivate_user", "nobody"],
        ["grant_auditor", "nobody"],
        ["create_api_token", "nobody"],
        ["import_sessions", "--user", "nobody", "."],
    ],
)
def test_an_unknown_user_is_named(command, alice):
    with pytest.raises(CommandError, match=r"^no user named 'nobody'$"):
        call_command(*command)
