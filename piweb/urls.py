from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from piweb.api import api
from sessions_app.access import password_reset as reset
from sessions_app.access.signin import SignInView
from sessions_app.web.health import favicon, healthz
from sessions_app.web.review_views import review_email_choice, review_queue_page

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon),  # for pages that name none (plain-text errors, downloads)
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("accounts/login/", SignInView.as_view(), name="login"),  # rate-limited sign-in
    # django.contrib.auth.urls, with the password reset pages a 404 unless email is configured.
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("accounts/password_reset/", reset.ResetRequestView.as_view(), name="password_reset"),
    path("accounts/password_reset/done/", reset.ResetDoneView.as_view(), name="password_reset_done"),
    path("accounts/reset/<uidb64>/<token>/", reset.ResetConfirmView.as_view(), name="password_reset_confirm"),
    path("accounts/reset/done/", reset.ResetCompleteView.as_view(), name="password_reset_complete"),
    path("audit/", include("sessions_app.web.audit_urls")),
    path("reviews/", review_queue_page, name="reviews"),
    path("reviews/email/", review_email_choice, name="review_email"),
    path("", include("sessions_app.web.urls")),
    path("", include("sessions_app.web.chat_urls")),
    path("", include("sessions_app.web.settings_urls")),
]
