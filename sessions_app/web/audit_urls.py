from __future__ import annotations

from django.urls import path

from sessions_app.web import audit_views

app_name = "audit"

urlpatterns = [
    path("", audit_views.audit_log, name="log"),
    path("export.csv", audit_views.audit_csv, name="csv"),
    path("verify/", audit_views.audit_chain_verify, name="verify"),
    path("verify-session/", audit_views.session_chain_verify, name="verify_session"),
]
