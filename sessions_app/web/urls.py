from __future__ import annotations

from django.urls import path

from sessions_app.web import (
    compare_views,
    context_views,
    files_views,
    list_views,
    review_views,
    search_views,
    usage_views,
    views,
)
from sessions_app.web.converters import ENTRY_ID

app_name = "sessions"

urlpatterns = [
    path("", list_views.session_list, name="list"),
    path("search/", search_views.search_page, name="search"),
    path("import/", list_views.session_import, name="import"),
    path("import/<str:job_id>/", list_views.import_progress, name="import_progress"),
    path("sessions/new/", list_views.session_new, name="new"),
    path("sessions/<str:public_id>/", views.session_detail, name="detail"),
    path("sessions/<str:public_id>/files/", files_views.files_changed, name="files"),
    path("sessions/<str:public_id>/compare/", compare_views.compare_page, name="compare"),
    path("sessions/<str:public_id>/usage/", usage_views.session_usage, name="usage"),
    path("sessions/<str:public_id>/context/", context_views.context_page, name="context"),
    path("sessions/<str:public_id>/comments/", review_views.comment_post, name="comment"),
    path("sessions/<str:public_id>/comments/resolve/", review_views.comment_resolve, name="comment_resolve"),
    path("sessions/<str:public_id>/verdicts/", review_views.verdict_post, name="verdict"),
    path("sessions/<str:public_id>/tree/gap/", views.tree_gap, name="tree_gap"),
    path("sessions/<str:public_id>/tree/branch/", views.tree_branch, name="tree_branch"),
    path("sessions/<str:public_id>/conversation/earlier/", views.conversation_earlier, name="earlier"),
    path(f"sessions/<str:public_id>/entries/<{ENTRY_ID}:entry_id>/output/", views.entry_output, name="output"),
    path(f"sessions/<str:public_id>/entries/<{ENTRY_ID}:entry_id>/calls/<int:index>/", views.entry_call, name="call"),
    path(f"sessions/<str:public_id>/entries/<{ENTRY_ID}:entry_id>/image/<int:index>/", views.entry_image, name="image"),
    path("sessions/<str:public_id>/continue/", views.entry_continue, name="continue"),
    path("sessions/<str:public_id>/label/", views.entry_label, name="label"),
    path("sessions/<str:public_id>/fork/", views.entry_fork, name="fork"),
    path("sessions/<str:public_id>/append/", views.entry_append, name="append"),
    path("sessions/<str:public_id>/rename/", views.session_rename, name="rename"),
    path("sessions/<str:public_id>/delete/", views.session_delete, name="delete"),
    path("sessions/<str:public_id>/export.jsonl", views.export_jsonl, name="export_jsonl"),
    path("sessions/<str:public_id>/export.html", views.export_page, name="export_html"),
]
