"""Sign-in auditing and rate limiting.

Django's user_logged_in / user_login_failed / user_logged_out signals are recorded (signin.ok,
signin.failed, signout). Failed sign-ins are counted per username and per client IP in the Django
cache, in a fixed window of PIWEB_SIGNIN_WINDOW_SECONDS from the first failure; once either count
reaches PIWEB_SIGNIN_MAX_FAILURES, the sign-in forms (site and admin) refuse every attempt for
that username or IP, right or wrong, until the window ends, and record signin.blocked.

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

BLOCKED_MESSAGE = "Too many failed sign-ins for this account or from this address. Try again in %(minutes)d minutes."


def _keys(username: str, ip: str) -> list[str]:
    keys = [f"piweb:signin:user:{hashlib.sha256(username.casefold().encode()).hexdigest()}"]
    if ip:
        keys.append(f"piweb:signin:ip:{ip}")
    return keys


def signin_blocked(*, username: str, ip: str) -> bool:
    counts = cache.get_many(_keys(username, ip))
    return any(int(n) >= settings.PIWEB_SIGNIN_MAX_FAILURES for n in counts.values())


def signin_failure_count(*, username: str, ip: str) -> None:
    for key in _keys(username, ip):
        # The window starts at the first failure: add() only sets a key that is not there.
        cache.add(key, 0, timeout=settings.PIWEB_SIGNIN_WINDOW_SECONDS)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=settings.PIWEB_SIGNIN_WINDOW_SECONDS)


def signin_reset(*, username: str) -> None:
    cache.delete(_keys(username, "")[0])


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


@receiver(user_logged_in, dispatch_uid="piweb_audit_signin_ok")
def _signed_in(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    audit_record(actor=user, action="signin.ok", obj_type="user", obj_id=str(user.pk), request=request)
    signin_reset(username=user.get_username())


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
