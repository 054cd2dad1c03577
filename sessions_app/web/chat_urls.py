from __future__ import annotations

from django.urls import path

from sessions_app.web import chat_views

app_name = "chat"

urlpatterns = [
    path("sessions/<str:public_id>/chat/send/", chat_views.chat_send, name="send"),
    path("sessions/<str:public_id>/chat/edit/", chat_views.chat_edit, name="edit"),
    path("sessions/<str:public_id>/chat/regenerate/", chat_views.chat_regenerate, name="regenerate"),
    path("sessions/<str:public_id>/chat/continue/", chat_views.chat_continue, name="continue"),
    path("sessions/<str:public_id>/chat/stop/", chat_views.chat_stop, name="stop"),
    path("sessions/<str:public_id>/chat/model/", chat_views.chat_model, name="model"),
    path("sessions/<str:public_id>/chat/thinking/", chat_views.chat_thinking, name="thinking"),
    path("sessions/<str:public_id>/chat/compact/", chat_views.chat_compact, name="compact"),
    path("sessions/<str:public_id>/chat/navigate/", chat_views.chat_navigate, name="navigate"),
]
