"""Admin for auditing: sessions and entries browsable, searchable and filterable; entries read-only.
Teams, share links and API tokens are shown read-only (changes go through the app, whose services
record them in the audit trail), to superusers and to staff auditors; a secret's hash never shows."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from sessions_app.access import audit, revoke
from sessions_app.access.signin import AdminSignInForm
from sessions_app.core import jsjson
from sessions_app.models import ApiToken, AuditRecord, Entry, Membership, Session, ShareLink, Team
from sessions_app.store import selectors


class ReadOnlyMixin:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin[Session]):
    list_display = ("__str__", "owner", "message_count", "created", "modified", "ui_link")
    list_filter = ("owner", "created_at")
    search_fields = ("public_id", "name", "first_message", "cwd")
    date_hierarchy = "created_at"
    list_select_related = ("owner",)
    readonly_fields = [f.name for f in Session._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Session | None = None) -> bool:
        return False

    @admin.display(description="modified", ordering="modified_ms")
    def modified(self, obj: Session) -> str:
        from datetime import UTC, datetime

        if not obj.modified_ms:
            return "—"
        return datetime.fromtimestamp(obj.modified_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")

    @admin.display(description="open")
    def ui_link(self, obj: Session) -> SafeString:
        return format_html('<a href="{}">Open in piweb</a>', reverse("sessions:detail", args=[obj.public_id]))


class ModelFilter(admin.SimpleListFilter):
    title = "model"
    parameter_name = "model"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        values = Entry.objects.exclude(ctx_model=None).values_list("ctx_model", flat=True).distinct()[:50]
        out: list[tuple[str, str]] = []
        for raw in values:
            if raw is None:
                continue
            data = jsjson.loads(raw)
            out.append((raw, f"{data.get('provider')}/{data.get('modelId')}" if isinstance(data, dict) else raw))
        return sorted(set(out), key=lambda x: x[1])

    def queryset(self, request: HttpRequest, queryset: QuerySet[Entry]) -> QuerySet[Entry]:
        return queryset.filter(ctx_model=self.value()) if self.value() else queryset


class LabelFilter(admin.SimpleListFilter):
    title = "label"
    parameter_name = "label"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(t, t) for t in sorted(selectors.label_texts(sessions=None))[:200]]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Entry]) -> QuerySet[Entry]:
        """Entries a label entry with this text points at (whether or not a later one cleared it)."""
        if not self.value():
            return queryset
        targets = {
            (session_pk, data["targetId"])
            for session_pk, data in selectors.label_lines(sessions=None)
            if data.get("label") == self.value() and isinstance(data.get("targetId"), str)
        }
        return queryset.filter(entry_id__in={t for _, t in targets}, session_id__in={s for s, _ in targets})


@admin.register(Entry)
class EntryAdmin(ReadOnlyMixin, admin.ModelAdmin[Entry]):
    list_display = ("entry_id", "type", "role", "short_preview", "session", "timestamp", "ui_link")
    list_filter = ("type", "role", ModelFilter, LabelFilter, "created_at")
    search_fields = ("entry_id", "preview", "session__public_id", "session__name")
    date_hierarchy = "created_at"
    list_select_related = ("session",)
    readonly_fields = [f.name for f in Entry._meta.fields]
    show_full_result_count = False

    @admin.display(description="text")
    def short_preview(self, obj: Entry) -> str:
        return obj.preview[:100]

    @admin.display(description="open")
    def ui_link(self, obj: Entry) -> SafeString:
        url = reverse("sessions:detail", args=[obj.session.public_id])
        return format_html('<a href="{}?{}">Open in piweb</a>', url, urlencode({"target": obj.entry_id}))


class AuditorView(ReadOnlyMixin):
    """Read-only, and open to auditors (audit.is_auditor) who are staff, as well as to whoever holds
    Django's view permission."""

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        user = request.user
        return bool(user.is_active and user.is_staff and audit.is_auditor(user)) or bool(
            super().has_view_permission(request, obj)  # type: ignore[misc]
        )

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request) or bool(super().has_module_permission(request))  # type: ignore[misc]


class MembershipInline(AuditorView, admin.TabularInline[Membership, Team]):
    model = Membership
    fields = ("user", "role", "created_at")
    readonly_fields = fields
    extra = 0


@admin.register(Team)
class TeamAdmin(AuditorView, admin.ModelAdmin[Team]):
    list_display = ("name", "slug", "public_id", "members", "created_at")
    search_fields = ("name", "=slug", "=public_id", "memberships__user__username")
    readonly_fields = ("name", "slug", "public_id", "created_at")
    inlines = (MembershipInline,)

    @admin.display(description="members")
    def members(self, obj: Team) -> int:
        return obj.memberships.count()


@admin.register(ShareLink)
class ShareLinkAdmin(AuditorView, admin.ModelAdmin[ShareLink]):
    """Never the token's hash (key_hash): the prefix is what names a link."""

    list_display = ("prefix", "session", "entry_id", "created_by", "created_at", "expires_at", "revoked_at", "views")
    list_filter = ("created_at", "revoked_at")
    search_fields = ("prefix", "=session__public_id", "created_by__username")
    list_select_related = ("session", "created_by")
    fields = (
        "prefix", "session", "entry_id", "created_by", "created_at", "expires_at", "revoked_at", "last_viewed_at",
        "views",
    )  # fmt: skip
    readonly_fields = fields


@admin.register(ApiToken)
class ApiTokenAdmin(AuditorView, admin.ModelAdmin[ApiToken]):
    """Never the token's hash (key_hash): the prefix is what names a token."""

    list_display = ("prefix", "name", "user", "scope", "created_at", "last_used_at", "expires_at", "revoked_at")
    list_filter = ("scope", "created_at", "revoked_at")
    search_fields = ("prefix", "name", "user__username")
    list_select_related = ("user",)
    fields = ("prefix", "name", "user", "scope", "created_at", "last_used_at", "expires_at", "revoked_at")
    readonly_fields = fields


@admin.register(AuditRecord)
class AuditRecordAdmin(ReadOnlyMixin, admin.ModelAdmin[AuditRecord]):
    """The audit trail: browsable, never editable (the database refuses changes anyway)."""

    list_display = ("seq", "at", "actor_username", "action", "obj_type", "obj_id", "ip", "request_id")
    list_filter = ("action", "obj_type", ("at", admin.DateFieldListFilter))
    search_fields = ("=actor_username", "=session_id", "=obj_id", "=request_id", "=ip", "action")
    ordering = ("-seq",)
    date_hierarchy = "at"
    show_full_result_count = False


def _actor(request: HttpRequest) -> User | None:
    return request.user if isinstance(request.user, User) else None


class PiwebUserAdmin(DjangoUserAdmin[User]):
    """Django's user admin, except that deactivating a user (unticking "active", or the action)
    goes through revoke.user_deactivate: their browsers are signed out and their websockets close."""

    actions = ["deactivate_and_disconnect"]

    def save_model(self, request: HttpRequest, obj: User, form: ModelForm[User], change: bool) -> None:
        deactivated = change and "is_active" in form.changed_data and not obj.is_active
        super().save_model(request, obj, form, change)
        if deactivated:
            revoke.user_deactivate(user=obj, actor=_actor(request))

    @admin.action(description="Deactivate and disconnect selected users", permissions=["change"])
    def deactivate_and_disconnect(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        done = 0
        for user in queryset:
            if user.pk == request.user.pk:
                self.message_user(request, "You cannot deactivate yourself here.", messages.WARNING)
                continue
            revoke.user_deactivate(user=user, actor=_actor(request))
            done += 1
        self.message_user(request, f"Deactivated and disconnected {done} user(s).", messages.SUCCESS)


admin.site.unregister(User)
admin.site.register(User, PiwebUserAdmin)

admin.site.login_form = AdminSignInForm  # rate-limited, like the site's sign-in
