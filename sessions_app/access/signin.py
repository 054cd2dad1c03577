"""Sign-in auditing and rate limiting.

Django's user_logged_in / user_login_failed / user_logged_out signals are recorded (signin.ok,
signin.failed, signout). Failed sign-ins are counted in the Django cache, in a fixed window of
PIWEB_SIGNIN_WINDOW_SECONDS from the first failure, twice over:
- per username and client IP together (as django-axes does): at PIWEB_SIGNIN_MAX_FAILURES that
  username is refused from that client only, so a stranger elsewhere cannot lock its user out;
- per client IP: at PIWEB_SIGNIN_MAX_FAILURES_PER_CLIENT (higher) that client is refused for
  every username, which bounds a spray of guesses over many accounts.
A refused attempt is refused right or wrong, until the window ends, and records signin.blocked. A
successful sign-in clears its own (username, client) count, never the client's.

Behind proxies the client IP comes from X-Forwarded-For only with PIWEB_TRUSTED_PROXY_COUNT set
(audit.client_ip); otherwise every client is the proxy, and the per-client limit counts them all.

The counts live in the default cache. Django's default LocMemCache is per process: with several
server processes each counts on its own (an attacker gets N tries per process), so configure a
shared cache (Redis, Memcached or the database cache) for such deployments.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import user_logged_in, user_logged_out, user_login_failed
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.dispatch import receiver
from django.http import HttpRequest

from sessions_app.access.audit import audit_record, client_ip

BLOCKED_MESSAGE = "Too many failed sign-ins from this address. Try again in %(minutes)d minutes."


def _pair_key(username: str, ip: str) -> str:
    pair = f"{username.casefold()}\0{ip}".encode()
    return f"piweb:signin:pair:{hashlib.sha256(pair).hexdigest()}"


def _client_key(ip: str) -> str:
    return f"piweb:signin:ip:{ip}"


def _limits(username: str, ip: str) -> dict[str, int]:
    """Each count's cache key and the failures at which it refuses (no client count without an IP)."""
    limits = {_pair_key(username, ip): settings.PIWEB_SIGNIN_MAX_FAILURES}
    if ip:
        limits[_client_key(ip)] = settings.PIWEB_SIGNIN_MAX_FAILURES_PER_CLIENT
    return limits


def signin_blocked(*, username: str, ip: str) -> bool:
    limits = _limits(username, ip)
    counts = cache.get_many(list(limits))
    return any(int(n) >= limits[key] for key, n in counts.items())


def signin_failure_count(*, username: str, ip: str) -> None:
    for key in _limits(username, ip):
        # The window starts at the first failure: add() only sets a key that is not there.
        cache.add(key, 0, timeout=settings.PIWEB_SIGNIN_WINDOW_SECONDS)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=settings.PIWEB_SIGNIN_WINDOW_SECONDS)


def signin_reset(*, username: str, ip: str) -> None:
    cache.delete(_pair_key(username, ip))


class RateLimitMixin(forms.Form):
    request: HttpRequest | None

    def clean(self) -> dict[str, Any]:
        username = str(self.cleaned_data.get("username") or "")
        ip = client_ip(self.request) if self.request is not None else ""
        if username and signin_blocked(username=username, ip=ip):
            audit_record(
                action="signin.blocked", obj_type="user", obj_id=username, request=self.request,
                extra={"username": username},
            )  # fmt: skip
            minutes = max(1, settings.PIWEB_SIGNIN_WINDOW_SECONDS // 60)
            raise forms.ValidationError(BLOCKED_MESSAGE, code="blocked", params={"minutes": minutes})
        return super().clean() or self.cleaned_data

    @property
    def signin_blocked(self) -> bool:
        return any(e.code == "blocked" for e in self.non_field_errors().as_data())


class SignInForm(RateLimitMixin, AuthenticationForm):
    pass


class AdminSignInForm(RateLimitMixin, AdminAuthenticationForm):
    pass


class SignInView(LoginView):
    authentication_form = SignInForm

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        # The "Forgot password?" link only where a reset can be mailed (access/password_reset.py).
        return {**super().get_context_data(**kwargs), "password_reset_offered": settings.PIWEB_PASSWORD_RESET}


@receiver(user_logged_in, dispatch_uid="piweb_audit_signin_ok")
def _signed_in(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    audit_record(actor=user, action="signin.ok", obj_type="user", obj_id=str(user.pk), request=request)
    signin_reset(username=user.get_username(), ip=client_ip(request) if request is not None else "")


@receiver(user_login_failed, dispatch_uid="piweb_audit_signin_failed")
def _signin_failed(sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any) -> None:
    username = str(credentials.get("username") or "")
    audit_record(
        action="signin.failed", obj_type="user", obj_id=username, request=request, extra={"username": username}
    )
    signin_failure_count(username=username, ip=client_ip(request) if request is not None else "")


@receiver(user_logged_out, dispatch_uid="piweb_audit_signout")
def _signed_out(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    if user is not None:
        audit_record(actor=user, action="signout", obj_type="user", obj_id=str(user.pk), request=request)
