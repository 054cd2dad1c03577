from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from piweb.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("sessions_app.urls")),
    path("", include("sessions_app.chat_urls")),
]
