from __future__ import annotations

from django.urls import path

from sessions_app import views

app_name = "sessions"

urlpatterns = [
    path("", views.session_list, name="list"),
]
