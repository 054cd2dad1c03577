"""API tokens: `Authorization: Bearer <token>`. Only a SHA-256 of each token is stored.

The API tries a bearer token first, then the Django session cookie (SignedInCookie). A request
with neither a live token nor a signed-in session is unauthenticated: 401, whatever its method.
CSRF applies to cookie-authenticated requests only, so a signed-in browser's write without the
CSRF token is still refused (403).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import User
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer
from ninja.security.session import SessionAuth

from sessions_app.access import audit
from sessions_app.errors import InvalidRequest, NotFound, TokenScopeError
from sessions_app.models import ApiToken

TOKEN_PREFIX = "piweb_"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


SCOPES = ("read", "write", "push")
# What a `push` token (a machine running `piweb sync`) may call: a mirror's sync state, its first
# push and its new lines (web/sync_api.py). Nothing else: no reading, deleting, chat or labels.
PUSH_OPERATIONS = frozenset({"sync_state", "sync_push", "sync_lines", "sync_replace"})
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def api_token_create(
    *, user: User, name: str = "", scope: str = "write", expires_days: int | None = None
) -> tuple[ApiToken, str]:
    """A new token for user; the plain token is returned once and never stored."""
    if scope not in SCOPES:
        raise InvalidRequest(f"scope must be one of {', '.join(SCOPES)}", field="scope")
    if expires_days is not None and expires_days < 1:
        raise InvalidRequest("expires_days must be at least 1", field="expires_days")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    expires_at = timezone.now() + timedelta(days=expires_days) if expires_days else None
    record = ApiToken.objects.create(
        user=user, name=name, prefix=token[:12], key_hash=_digest(token), scope=scope, expires_at=expires_at
    )
    audit.audit_record(
        action="token.create",
        actor=user,
        obj_type="api_token",
        obj_id=record.prefix,
        after={"name": name, "scope": scope, "expires_at": expires_at.isoformat() if expires_at else None},
    )
    return record, token


def api_token_revoke(*, user: User, prefix: str) -> ApiToken:
    """Revoke one of the user's own tokens (by its shown prefix); revoking twice is a no-op."""
    record = ApiToken.objects.filter(user=user, prefix=prefix).first()
    if record is None:
        raise NotFound("Token not found", field="prefix")
    if record.revoked_at is None:
        record.revoked_at = timezone.now()
        record.save(update_fields=["revoked_at"])
        audit.audit_record(action="token.revoke", actor=user, obj_type="api_token", obj_id=record.prefix)
    return record


def api_token_list(*, user: User) -> list[ApiToken]:
    return list(ApiToken.objects.filter(user=user).order_by("-created_at", "-pk"))


def api_token_record(token: str) -> ApiToken | None:
    """The live record for a presented token: not revoked, not expired, its user active."""
    now = timezone.now()
    record = (
        ApiToken.objects.select_related("user")
        .filter(key_hash=_digest(token), revoked_at__isnull=True, user__is_active=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .first()
    )
    if record is None:
        return None
    if record.last_used_at is None or (now - record.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=record.pk).update(last_used_at=now)
    return record


class BearerToken(HttpBearer):
    """Bearer auth: the token must be live; a read-scoped one may only GET, a push-scoped one only
    the sync operations (403 otherwise)."""

    def authenticate(self, request: HttpRequest, token: str) -> User | None:
        record = api_token_record(token)
        if record is None:
            return None
        if record.scope == "push":
            match = request.resolver_match
            if match is None or match.url_name not in PUSH_OPERATIONS:
                raise TokenScopeError("This token may only push sessions (piweb sync)", scope=record.scope)
        elif record.scope != "write" and request.method not in SAFE_METHODS:
            raise TokenScopeError(scope=record.scope)
        request.user = record.user
        return record.user


class SignedInCookie(SessionAuth):
    """Django session auth with CSRF checked only for a signed-in user. ninja's django_auth checks
    CSRF before it looks at the user, so a request with no credentials (or a dead token) got the
    CSRF 403 instead of 401."""

    def __call__(self, request: HttpRequest) -> User | None:
        if not request.user.is_authenticated:
            return None
        result = super().__call__(request)
        return result if isinstance(result, User) else None
