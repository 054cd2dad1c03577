"""API tokens: `Authorization: Bearer <token>`. Only a SHA-256 of each token is stored."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import User
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from sessions_app.models import ApiToken

TOKEN_PREFIX = "piweb_"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def api_token_create(*, user: User, name: str = "") -> tuple[ApiToken, str]:
    """A new token for user; the plain token is returned once and never stored."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    record = ApiToken.objects.create(user=user, name=name, prefix=token[:12], key_hash=_digest(token))
    return record, token


def api_token_user(token: str) -> User | None:
    record = (
        ApiToken.objects.select_related("user")
        .filter(key_hash=_digest(token), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if record is None:
        return None
    now = timezone.now()
    if record.last_used_at is None or (now - record.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=record.pk).update(last_used_at=now)
    return record.user


class BearerToken(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> User | None:
        user = api_token_user(token)
        if user is not None:
            request.user = user
        return user
