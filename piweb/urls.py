from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from piweb.api import api
from sessions_app.access.signin import SignInView
from sessions_app.web.health import favicon, healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon),  # for pages that name none (plain-text errors, downloads)
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("accounts/login/", SignInView.as_view(), name="login"),  # rate-limited sign-in
    path("accounts/", include("django.contrib.auth.urls")),
    path("audit/", include("sessions_app.web.audit_urls")),
    path("", include("sessions_app.web.urls")),
    path("", include("sessions_app.web.chat_urls")),
    path("", include("sessions_app.web.settings_urls")),
]
