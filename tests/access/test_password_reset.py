"""Password reset: offered only when email is configured (PIWEB_EMAIL_URL), and rate-limited per
client and per address, with answers that tell nothing about which addresses have accounts."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import mail
from django.test import Client

from sessions_app.models import AuditRecord

pytestmark = pytest.mark.django_db

RESET = "/accounts/password_reset/"


@pytest.fixture
def offered(settings, alice):
    settings.PIWEB_PASSWORD_RESET = True
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    alice.email = "alice@example.com"
    alice.save()
    return settings


def request_reset(email: str, ip: str = "192.0.2.1"):
    return Client(REMOTE_ADDR=ip).post(RESET, {"email": email})


def test_without_email_there_is_no_reset(settings, alice, caplog):
    assert settings.PIWEB_PASSWORD_RESET is False  # the default: no PIWEB_EMAIL_URL
    alice.email = "alice@example.com"
    alice.save()
    with caplog.at_level(logging.ERROR):
        assert Client().get(RESET).status_code == 404
        assert request_reset("alice@example.com").status_code == 404
        for path in ("/accounts/password_reset/done/", "/accounts/reset/done/", "/accounts/reset/MQ/set-password/"):
            assert Client().get(path).status_code == 404, path
    assert mail.outbox == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "Forgot password" not in Client().get("/accounts/login/").content.decode()


def test_with_email_the_link_and_the_mail(offered):
    assert 'href="/accounts/password_reset/">Forgot password?' in Client().get("/accounts/login/").content.decode()
    response = request_reset("alice@example.com")
    assert response.status_code == 302 and response["Location"] == "/accounts/password_reset/done/"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["alice@example.com"]
    assert AuditRecord.objects.filter(action="password_reset.request").count() == 1


def test_unknown_and_limited_addresses_get_the_same_answer(offered):
    offered.PIWEB_PASSWORD_RESET_MAX_PER_ADDRESS = 2
    answers = [request_reset("alice@example.com", f"198.51.100.{i}") for i in range(4)]
    answers.append(request_reset("nobody@example.com"))
    assert {(r.status_code, r["Location"]) for r in answers} == {(302, "/accounts/password_reset/done/")}
    assert len(mail.outbox) == 2  # the address limit, counted from any client
    assert AuditRecord.objects.filter(action="password_reset.limited").count() == 2


def test_one_client_is_limited(offered):
    offered.PIWEB_PASSWORD_RESET_MAX_PER_CLIENT = 3
    for i in range(3):
        assert request_reset(f"x{i}@example.com").status_code == 302
    response = request_reset("alice@example.com")
    assert response.status_code == 429
    assert "Too many password reset requests" in response.content.decode()
    assert mail.outbox == []
    assert request_reset("alice@example.com", "192.0.2.99").status_code == 302
    assert len(mail.outbox) == 1


def test_the_mailed_link_sets_a_new_password(offered):
    request_reset("alice@example.com")
    link = re.search(r"http://testserver(/accounts/reset/\S+/)", str(mail.outbox[0].body))
    assert link is not None
    client = Client()
    form = client.get(link.group(1), follow=True)
    assert form.status_code == 200 and "New password" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0], {"new_password1": "n3w-Secret-pw!", "new_password2": "n3w-Secret-pw!"}
    )
    assert done.status_code == 302 and done["Location"] == "/accounts/reset/done/"
    assert Client().post("/accounts/login/", {"username": "alice", "password": "n3w-Secret-pw!"}).status_code == 302


def _email_settings(url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIWEB_")} | {"PIWEB_EMAIL_URL": url}
    code = (
        "import json; from django.conf import settings as s; print(json.dumps([s.EMAIL_BACKEND, s.EMAIL_HOST,"
        " s.EMAIL_PORT, s.EMAIL_HOST_USER, s.EMAIL_HOST_PASSWORD, s.EMAIL_USE_TLS, s.EMAIL_USE_SSL,"
        " s.PIWEB_PASSWORD_RESET]))"
    )
    env["DJANGO_SETTINGS_MODULE"] = "piweb.settings"
    root = Path(__file__).resolve().parents[2]
    return subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)


def test_the_email_url_configures_the_backend():
    smtp = json.loads(_email_settings("smtp://mailer:p%40ss@mail.example.com").stdout)
    assert smtp == ["django.core.mail.backends.smtp.EmailBackend", "mail.example.com", 587, "mailer", "p@ss",
                    True, False, True]  # fmt: skip
    smtps = json.loads(_email_settings("smtps://mail.example.com:2465").stdout)
    assert smtps[:3] == ["django.core.mail.backends.smtp.EmailBackend", "mail.example.com", 2465]
    assert smtps[5:] == [False, True, True]
    assert json.loads(_email_settings("console:").stdout)[0] == "django.core.mail.backends.console.EmailBackend"
    bad = _email_settings("http://mail.example.com")
    assert bad.returncode != 0 and "PIWEB_EMAIL_URL must be" in bad.stderr
