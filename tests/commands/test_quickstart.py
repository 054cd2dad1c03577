"""manage.py quickstart: migrate, collectstatic, load_demo, then runserver on 127.0.0.1:8000."""

from __future__ import annotations

from io import StringIO
from unittest import mock

import pytest
from django.core.management import call_command, get_commands, load_command_class

from sessions_app.management.commands import quickstart
from sessions_app.models import Session

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _static_root(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "static"


@pytest.fixture
def runserver_handle():
    """Replace the runserver that quickstart reaches (daphne's) so that nothing is served."""
    command_class = type(load_command_class(get_commands()["runserver"], "runserver"))
    assert command_class.__module__ == "daphne.management.commands.runserver"
    with mock.patch.object(command_class, "handle", autospec=True, return_value=None) as handle:
        yield handle


def test_quickstart_migrates_collects_loads_demo_and_serves(runserver_handle, settings):
    out = StringIO()
    with mock.patch.object(quickstart, "call_command", wraps=call_command) as spy:
        call_command("quickstart", stdout=out)
    assert [c.args[0] for c in spy.call_args_list] == ["migrate", "collectstatic", "load_demo", "runserver"]
    assert spy.call_args_list[0].kwargs == {"interactive": False, "verbosity": 0}
    runserver_handle.assert_called_once()
    options = runserver_handle.call_args.kwargs
    assert options["addrport"] == "127.0.0.1:8000"
    assert options["use_reloader"] is False
    assert options["use_static_handler"] is False  # WhiteNoise serves them, as deployed
    assert Session.objects.filter(owner__username="demo").count() >= 2
    assert "http://127.0.0.1:8000/" in out.getvalue()
    manifest = settings.STATIC_ROOT / "staticfiles.json"
    assert manifest.exists() and "piweb/app.js" in manifest.read_text()


def test_quickstart_other_address(runserver_handle):
    call_command("quickstart", "0.0.0.0:9000", stdout=StringIO())
    assert runserver_handle.call_args.kwargs["addrport"] == "0.0.0.0:9000"


def test_quickstart_twice_keeps_one_demo(runserver_handle):
    call_command("quickstart", stdout=StringIO())
    count = Session.objects.count()
    call_command("quickstart", stdout=StringIO())
    assert Session.objects.count() == count
    assert runserver_handle.call_count == 2
