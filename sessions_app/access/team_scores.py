"""A team's score configs (like Langfuse's): what scores its verdicts may carry, and the one check of
a verdict's scores against them.

Team sessions: every score must name one of the team's configs and fit it (a team with no configs
takes no scores). Personal sessions have no team to define configs: their scores stay free-form
(names and short values only), as they were before configs existed.
"""

from __future__ import annotations

import math
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from sessions_app.access import audit, permissions
from sessions_app.errors import InvalidRequest, MemberError, NotFound, SessionConflict
from sessions_app.models import SCORE_KINDS, ScoreConfig, Team

MAX_SCORES = 20
MAX_CONFIGS = 50
MAX_CHOICES = 50


def score_configs(*, team_id: int | None) -> list[ScoreConfig]:
    return list(ScoreConfig.objects.filter(team_id=team_id).order_by("name")) if team_id else []


def _bound(raw: Any, name: str) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError, OverflowError):
        raise MemberError(f"The {name} must be a number", field=name) from None
    if not math.isfinite(value):
        raise MemberError(f"The {name} must be a finite number", field=name)
    return value


def _choices(raw: Any) -> list[str]:
    items = raw.split(",") if isinstance(raw, str) else raw if isinstance(raw, list) else []
    choices = list(dict.fromkeys(str(c).strip() for c in items if str(c).strip()))
    if not choices:
        raise MemberError("A categorical score needs its choices (comma-separated)", field="choices")
    if len(choices) > MAX_CHOICES or any(len(c) > 100 for c in choices):
        raise MemberError(f"At most {MAX_CHOICES} choices of at most 100 characters", field="choices")
    return choices


@transaction.atomic
def score_config_create(
    *,
    team: Team,
    actor: User,
    name: str,
    kind: str,
    min_value: Any = None,
    max_value: Any = None,
    choices: Any = None,
    description: str = "",
) -> ScoreConfig:
    """An admin defines a score: numeric (optional min and max), categorical (choices) or boolean."""
    permissions.team_require(user=actor, team_id=team.pk, need="manage")
    name = name.strip()
    if not 0 < len(name) <= 100:
        raise MemberError("A score needs a name of at most 100 characters", field="name")
    if kind not in SCORE_KINDS:
        raise MemberError(f"A score's kind is one of {', '.join(SCORE_KINDS)}", field="kind")
    low = _bound(min_value, "min_value") if kind == "numeric" else None
    high = _bound(max_value, "max_value") if kind == "numeric" else None
    if low is not None and high is not None and low > high:
        raise MemberError("The minimum must not be above the maximum", field="min_value")
    options = _choices(choices) if kind == "categorical" else []
    if ScoreConfig.objects.filter(team=team, name=name).exists():
        raise SessionConflict(f"The team already has a score named {name!r}", field="name")
    if ScoreConfig.objects.filter(team=team).count() >= MAX_CONFIGS:
        raise SessionConflict(f"A team has at most {MAX_CONFIGS} scores", field="name")
    config = ScoreConfig.objects.create(
        team=team, name=name, kind=kind, min_value=low, max_value=high, choices=options,
        description=description.strip()[:200],
    )  # fmt: skip
    after = {"name": name, "kind": kind, "min": low, "max": high, "choices": options}
    audit.audit_record(
        action="team.score_create", actor=actor, obj_type="team", obj_id=str(team.public_id), after=after
    )
    return config


@transaction.atomic
def score_config_delete(*, team: Team, actor: User, config_id: int) -> None:
    """An admin removes a score config; verdicts that carried it keep their values."""
    permissions.team_require(user=actor, team_id=team.pk, need="manage")
    config = ScoreConfig.objects.filter(team=team, pk=config_id).first()
    if config is None:
        raise NotFound("Score not found")
    config.delete()
    audit.audit_record(
        action="team.score_delete", actor=actor, obj_type="team", obj_id=str(team.public_id),
        before={"name": config.name, "kind": config.kind},
    )  # fmt: skip


def _finite(number: int | float) -> bool:
    """A JSON integer may be too large for a float (float() overflows): not a score."""
    try:
        return math.isfinite(float(number))
    except OverflowError:
        return False


def _free_form(value: dict[Any, Any]) -> dict[str, Any]:
    for name, score in value.items():
        if not isinstance(name, str) or not 0 < len(name) <= 100:
            raise InvalidRequest("score names must be 1 to 100 characters", field="scores")
        if not isinstance(score, bool | int | float | str) or (isinstance(score, str) and len(score) > 100):
            raise InvalidRequest(f"score '{name}' must be a number, a boolean or a short category", field="scores")
    return dict(value)


def _fits(config: ScoreConfig, score: Any) -> Any:
    """The score as stored if it fits config; InvalidRequest saying why otherwise."""

    def refuse(why: str) -> InvalidRequest:
        return InvalidRequest(f"score '{config.name}' {why}", field="scores", score=config.name)

    if config.kind == "boolean":
        if not isinstance(score, bool):
            raise refuse("must be true or false")
        return score
    if config.kind == "categorical":
        if not isinstance(score, str) or score not in config.choices:
            raise refuse(f"must be one of {', '.join(config.choices)}")
        return score
    if isinstance(score, bool) or not isinstance(score, int | float) or not _finite(score):
        raise refuse("must be a number")
    if config.min_value is not None and score < config.min_value:
        raise refuse(f"is {score:g}, below its minimum {config.min_value:g}")
    if config.max_value is not None and score > config.max_value:
        raise refuse(f"is {score:g}, above its maximum {config.max_value:g}")
    return score


def scores_check(*, team_id: int | None, value: Any) -> dict[str, Any]:
    """A verdict's scores (name -> value) checked against the team's configs (see the module)."""
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_SCORES:
        raise InvalidRequest(f"field 'scores' must be an object of at most {MAX_SCORES} scores", field="scores")
    if team_id is None:
        return _free_form(value)
    configs = {c.name: c for c in score_configs(team_id=team_id)} if value else {}
    out: dict[str, Any] = {}
    for name, score in value.items():
        config = configs.get(name)
        if config is None:
            known = ", ".join(configs) or "none"
            raise InvalidRequest(
                f"score '{name}' is not one of this team's scores (known: {known})", field="scores", score=name
            )
        out[name] = _fits(config, score)
    return out
