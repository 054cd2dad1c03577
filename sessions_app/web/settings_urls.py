from __future__ import annotations

from django.urls import path

from sessions_app.web import context_views, review_views, shared_views, usage_views
from sessions_app.web import settings_views as v
from sessions_app.web.converters import ENTRY_ID

app_name = "settings"
reviews_download = review_views.team_reviews_download

urlpatterns = [
    path("settings/tokens/", v.token_list, name="tokens"),
    path("settings/tokens/new/", v.token_create, name="token_create"),
    path("settings/tokens/<str:prefix>/revoke/", v.token_revoke, name="token_revoke"),
    path("settings/shares/", v.share_list, name="shares"),
    path("settings/shares/<int:share_id>/revoke/", v.share_revoke, name="share_revoke"),
    path("sessions/<str:public_id>/share/", v.share_create, name="share_create"),
    path("s/<str:token>/", shared_views.shared_page, name="shared"),
    path("s/<str:token>/context/", context_views.shared_context, name="shared_context"),
    path("s/<str:token>/tree/gap/", shared_views.shared_tree_gap, name="shared_tree_gap"),
    path("s/<str:token>/tree/branch/", shared_views.shared_tree_branch, name="shared_tree_branch"),
    path("s/<str:token>/conversation/earlier/", shared_views.shared_earlier, name="shared_earlier"),
    path(f"s/<str:token>/entries/<{ENTRY_ID}:entry_id>/output/", shared_views.shared_output, name="shared_output"),
    path(
        f"s/<str:token>/entries/<{ENTRY_ID}:entry_id>/calls/<int:index>/", shared_views.shared_call, name="shared_call"
    ),
    path(
        f"s/<str:token>/entries/<{ENTRY_ID}:entry_id>/image/<int:index>/",
        shared_views.shared_image,
        name="shared_image",
    ),
    path("teams/", v.team_list, name="teams"),
    path("teams/new/", v.team_create, name="team_create"),
    path("teams/<str:public_id>/", v.team_detail, name="team"),
    path("teams/<str:public_id>/members/", v.member_invite, name="member_invite"),
    path("teams/<str:public_id>/members/<str:username>/role/", v.member_role, name="member_role"),
    path("teams/<str:public_id>/members/<str:username>/remove/", v.member_remove, name="member_remove"),
    path("teams/<str:public_id>/sessions/", v.team_session_add, name="team_session_add"),
    path("teams/<str:public_id>/slug/", v.team_slug, name="team_slug"),
    path("teams/<str:public_id>/usage/", usage_views.team_usage, name="team_usage"),
    path("teams/<str:public_id>/scores/", v.score_create, name="score_create"),
    path("teams/<str:public_id>/scores/<int:config_id>/delete/", v.score_delete, name="score_delete"),
    path("teams/<str:public_id>/reviews.csv", reviews_download, {"fmt": "csv"}, name="team_reviews_csv"),
    path("teams/<str:public_id>/reviews.json", reviews_download, {"fmt": "json"}, name="team_reviews_json"),
]
