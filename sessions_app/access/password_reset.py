"""Password reset by email: offered only when email is configured, and rate-limited.

Without PIWEB_EMAIL_URL (settings.PIWEB_PASSWORD_RESET false) every reset page is a 404 and the
sign-in page shows no "Forgot password?" link: there is nothing to send the link with.

With it, reset requests are counted in the Django cache, in a window of
PIWEB_PASSWORD_RESET_WINDOW_SECONDS from the first, per client IP (audit.client_ip) and per address:
- over PIWEB_PASSWORD_RESET_MAX_PER_CLIENT from one client, the form is refused (429);
- over PIWEB_PASSWORD_RESET_MAX_PER_ADDRESS for one address, no more mail is sent to it, and the
  page answers exactly as for any address (known or not), so it tells nothing about accounts.
Each request is audited (password_reset.request / password_reset.limited).
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordResetForm
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse_lazy

from sessions_app.access.audit import audit_record, client_ip

CLIENT_LIMITED = "Too many password reset requests from this address. Try again later."


def reset_offered() -> bool:
    return bool(settings.PIWEB_PASSWORD_RESET)


def _count(key: str) -> int:
    """Count one more request under key; the count after it."""
    window = settings.PIWEB_PASSWORD_RESET_WINDOW_SECONDS
    cache.add(key, 0, timeout=window)  # the window starts at the first request
    try:
        return int(cache.incr(key))
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=window)
        return 1


def _address_key(email: str) -> str:
    return "piweb:reset:addr:" + hashlib.sha256(email.strip().casefold().encode()).hexdigest()


class OfferedOnly:
    """Mixin for the reset views: a 404 unless email is configured."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not reset_offered():
            raise Http404("Password reset is not available")
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc, no-any-return]


class ResetRequestView(OfferedOnly, auth_views.PasswordResetView):
    success_url = reverse_lazy("password_reset_done")

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        ip = client_ip(request)
        if ip and _count(f"piweb:reset:ip:{ip}") > settings.PIWEB_PASSWORD_RESET_MAX_PER_CLIENT:
            audit_record(action="password_reset.limited", obj_type="client", obj_id=ip, request=request)
            form = self.get_form()
            form.is_valid()
            form.add_error(None, CLIENT_LIMITED)
            response = self.render_to_response(self.get_context_data(form=form))
            response.status_code = 429
            return response
        return super().post(request, *args, **kwargs)

    def form_valid(self, form: PasswordResetForm) -> HttpResponse:
        email = form.cleaned_data["email"]
        if _count(_address_key(email)) > settings.PIWEB_PASSWORD_RESET_MAX_PER_ADDRESS:
            # No mail, and the same answer as a sent one: the page tells nothing about the address.
            audit_record(action="password_reset.limited", obj_type="address", obj_id="", request=self.request)
            return HttpResponseRedirect(self.get_success_url())
        audit_record(action="password_reset.request", obj_type="address", obj_id="", request=self.request)
        return super().form_valid(form)


class ResetDoneView(OfferedOnly, auth_views.PasswordResetDoneView):
    pass


class ResetConfirmView(OfferedOnly, auth_views.PasswordResetConfirmView):
    pass


class ResetCompleteView(OfferedOnly, auth_views.PasswordResetCompleteView):
    pass
