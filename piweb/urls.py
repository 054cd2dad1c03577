from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from piweb.api import api
from sessions_app.signin import SignInView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("accounts/login/", SignInView.as_view(), name="login"),  # rate-limited sign-in
    path("accounts/", include("django.contrib.auth.urls")),
    path("audit/", include("sessions_app.audit_urls")),
    path("", include("sessions_app.urls")),
    path("", include("sessions_app.chat_urls")),
    path("", include("sessions_app.settings_urls")),
]
