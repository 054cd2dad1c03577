"""Deployed as the README says: static files from WhiteNoise (hashed, cached, with a fallback),
a Content-Security-Policy the pages satisfy, check --deploy clean, /healthz, 404 and 500 pages."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client, RequestFactory
from django.views.defaults import server_error

from sessions_app.store import shares
from tests.worlds import branchy_tree, detail

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db

PRODUCTION = {
    "PIWEB_DEBUG": "false",
    "PIWEB_SECRET_KEY": "x7#kq!2vPz9@Lm4^Rt8&Wn3*Yb6(Hc1)Jd5_Fg0+Se7=Ua2-Io9~Xp4",
    "PIWEB_ALLOWED_HOSTS": "piweb.example.com",
    "PIWEB_CSRF_TRUSTED_ORIGINS": "https://piweb.example.com",
    "PIWEB_TLS_PROXY": "true",
    "PIWEB_HTTPS": "true",
}


def test_check_deploy_is_clean_with_the_production_settings():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIWEB_")} | PRODUCTION
    env["PIWEB_SQLITE_PATH"] = str(ROOT / "var" / "deploy-check.sqlite3")
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_plain_http_still_works_with_debug_off(settings, alice):
    settings.DEBUG = False
    client = Client()
    assert client.get("/accounts/login/").status_code == 200
    client.force_login(alice)
    assert client.get("/").status_code == 200  # no redirect to https: PIWEB_HTTPS is off


def _static_urls(html: str) -> list[str]:
    return re.findall(r'(?:href|src)="(/static/[^"]+)"', html)


def test_without_collectstatic_pages_render_with_plain_names(settings, tmp_path):
    settings.DEBUG = False
    settings.STATIC_ROOT = tmp_path / "never-collected"
    page = Client().get("/accounts/login/")
    assert page.status_code == 200
    urls = _static_urls(page.content.decode())
    assert "/static/piweb/app.css" in urls and "/static/piweb/app.js" in urls
    assert Client().get("/static/piweb/app.js").status_code == 200  # served from the app's folder


def test_after_collectstatic_urls_are_hashed_compressed_and_cached(settings, tmp_path):
    settings.DEBUG = False
    settings.STATIC_ROOT = tmp_path / "static"
    call_command("collectstatic", interactive=False, verbosity=0)
    page = Client().get("/accounts/login/")
    urls = _static_urls(page.content.decode())
    script = next(u for u in urls if u.startswith("/static/piweb/app.") and u.endswith(".js"))
    assert re.fullmatch(r"/static/piweb/app\.[0-9a-f]{12}\.js", script)
    response = Client().get(script, headers={"Accept-Encoding": "gzip"})
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert "immutable" in response["Cache-Control"] and "max-age=315360000" in response["Cache-Control"]
    htmx = next(u for u in urls if "htmx" in u and "ws" not in u)
    assert Client().get(htmx).status_code == 200


def test_pages_carry_a_strict_csp_and_satisfy_it(alice, alice_client):
    tree = branchy_tree(alice)
    _, token = shares.share_create(session=tree.session, user=alice, entry_id=tree.ids["u2b"])
    pages = ("/", detail(tree), detail(tree, target=tree.ids["a2b"]), "/teams/", "/settings/tokens/", f"/s/{token}/")
    for url in pages:
        response = alice_client.get(url)
        assert response.status_code == 200, url
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "style-src 'self'" in policy
        assert "unsafe" not in policy and "frame-ancestors 'none'" in policy
        html = response.content.decode()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), url  # no inline script
        assert not re.search(r"\sstyle=", html), url  # no inline style
        assert "hx-on" not in html, url  # htmx would need eval for these
        assert "includeIndicatorStyles" in html  # htmx injects no <style>


def test_healthz_checks_database_channel_layer_and_cache():
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok", "checks": {"database": "ok", "channel_layer": "ok", "cache": "ok"}
    }  # fmt: skip
    assert "no-cache" in response["Cache-Control"]


def test_healthz_says_which_part_fails(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:1/0"}}  # fmt: skip
    response = Client().get("/healthz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["database"] == "ok" and checks["channel_layer"] == "ok"
    assert checks["cache"].startswith("fail: ")


def test_the_404_page_is_the_products(alice_client):
    response = alice_client.get("/sessions/no-such-session/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "Nothing here" in html and 'class="topbar"' in html


def test_the_500_page_needs_no_context():
    response = server_error(RequestFactory().get("/"))
    assert response.status_code == 500
    assert "Something went wrong" in response.content.decode()
