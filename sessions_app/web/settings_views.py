"""Settings pages: API tokens, share links, teams (the page behind a share link: shared_views.py).

Thin like views.py: forms validate, services in api_tokens.py, shares.py and teams.py do the work and
check permissions; errors become 404 (nothing to see), 403 (seen but not allowed) or 400.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from sessions_app.access import api_tokens, permissions, team_scores, teams
from sessions_app.errors import MemberError, SessionConflict
from sessions_app.models import BIG_COLUMNS, SCORE_KINDS, TEAM_ROLES, VISIBLE, Membership, Session, Team
from sessions_app.store import selectors, shares
from sessions_app.web.forms import FORM_ERRORS, add_service_error, entry_id_field

# --- forms ---------------------------------------------------------------------------------------


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, required=False)
    scope = forms.ChoiceField(
        choices=[("read", "read (GET only)"), ("write", "read and write"), ("push", "push (piweb sync only)")],
        initial="read",
    )
    expires_days = forms.IntegerField(required=False, min_value=1, max_value=3650)


class ShareForm(forms.Form):
    entry = entry_id_field(required=False)
    expires_days = forms.IntegerField(required=False, min_value=1, max_value=3650)
    include_comments = forms.BooleanField(required=False)  # the page shows review threads and verdicts


class TeamForm(forms.Form):
    name = forms.CharField(max_length=100, error_messages={"required": "A team needs a name."})


class InviteForm(forms.Form):
    username = forms.CharField(max_length=150, error_messages={"required": "Give a username."})
    role = forms.ChoiceField(choices=[(r, r) for r in TEAM_ROLES], initial="viewer")


class SlugForm(forms.Form):
    slug = forms.CharField(max_length=100, error_messages={"required": "Give a slug."})


class ScoreForm(forms.Form):
    name = forms.CharField(max_length=100, error_messages={"required": "A score needs a name."})
    kind = forms.ChoiceField(choices=[(k, k) for k in SCORE_KINDS], initial="numeric")
    min_value = forms.FloatField(required=False)
    max_value = forms.FloatField(required=False)
    choices = forms.CharField(max_length=5000, required=False)
    description = forms.CharField(max_length=200, required=False)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=[(r, r) for r in TEAM_ROLES])


def _user(request: HttpRequest) -> User:
    assert isinstance(request.user, User)
    return request.user


# --- API tokens ----------------------------------------------------------------------------------


@require_GET
@login_required
def token_list(request: HttpRequest) -> HttpResponse:
    context = {"tokens": api_tokens.api_token_list(user=_user(request)), "form": TokenForm()}
    return render(request, "settings/tokens.html", context)


@require_POST
@login_required
def token_create(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST)
    if not form.is_valid():
        context = {"tokens": api_tokens.api_token_list(user=_user(request)), "form": form}
        template = "settings/tokens.html#token-section" if request.headers.get("HX-Request") else "settings/tokens.html"
        return render(request, template, context, status=FORM_ERRORS)
    d = form.cleaned_data
    record, token = api_tokens.api_token_create(
        user=_user(request), name=d["name"], scope=d["scope"], expires_days=d.get("expires_days")
    )
    context = {"tokens": api_tokens.api_token_list(user=_user(request)), "new_token": token, "new_record": record}
    return render(request, "settings/tokens.html#token-section", context)


@require_POST
@login_required
def token_revoke(request: HttpRequest, prefix: str) -> HttpResponse:
    api_tokens.api_token_revoke(user=_user(request), prefix=prefix)
    return render(
        request, "settings/tokens.html#token-section", {"tokens": api_tokens.api_token_list(user=_user(request))}
    )


# --- share links ---------------------------------------------------------------------------------


@require_GET
@login_required
def share_list(request: HttpRequest) -> HttpResponse:
    return render(request, "settings/shares.html", {"shares": shares.share_list_for_user(user=_user(request))})


@require_POST
@login_required
def share_create(request: HttpRequest, public_id: str) -> HttpResponse:
    """Make a link to this session (or, with `entry`, to that branch); shown once."""
    session = selectors.session_get_for_user(user=request.user, public_id=public_id, need="share")
    form = ShareForm(request.POST)
    if not form.is_valid():
        # The popover's output shows the errors (share_form.html); a plain form gets them as a page.
        if request.headers.get("HX-Request") == "true":
            return render(request, "sessions_app/partials/form_errors.html", {"form": form}, status=FORM_ERRORS)
        context = {"form": form, "session": session}
        return render(request, "settings/share_created_page.html", context, status=FORM_ERRORS)
    d = form.cleaned_data
    share, token = shares.share_create(
        session=session,
        user=_user(request),
        entry_id=d.get("entry") or None,
        expires_days=d.get("expires_days"),
        include_comments=d.get("include_comments", False),
    )
    url = request.build_absolute_uri(reverse("settings:shared", args=[token]))
    page = (
        "settings/share_created.html"
        if request.headers.get("HX-Request") == "true"
        else "settings/share_created_page.html"
    )
    return render(request, page, {"share": share, "url": url, "session": session})


@require_POST
@login_required
def share_revoke(request: HttpRequest, share_id: int) -> HttpResponse:
    shares.share_revoke(user=_user(request), share_id=share_id)
    if request.headers.get("HX-Request") == "true":
        context = {"shares": shares.share_list_for_user(user=_user(request))}
        return render(request, "settings/shares.html#share-table", context)
    return redirect("settings:shares")


# --- teams ---------------------------------------------------------------------------------------


@require_GET
@login_required
def team_list(request: HttpRequest) -> HttpResponse:
    context = {"teams": teams.team_list_for_user(user=_user(request)), "form": TeamForm()}
    return render(request, "settings/teams.html", context)


@require_POST
@login_required
def team_create(request: HttpRequest) -> HttpResponse:
    form = TeamForm(request.POST)
    if form.is_valid():
        try:
            team = teams.team_create(name=form.cleaned_data["name"], creator=_user(request))
        except MemberError as exc:
            add_service_error(form, exc)
        else:
            return redirect("settings:team", team.public_id)
    context = {"teams": teams.team_list_for_user(user=_user(request)), "form": form}
    return render(request, "settings/teams.html", context, status=FORM_ERRORS)


def _team_context(request: HttpRequest, team: Team, **forms_shown: Any) -> dict[str, Any]:
    user = _user(request)
    role = permissions.team_role(user, team.pk)
    members = Membership.objects.filter(team=team).select_related("user").order_by("user__username")
    personal = (
        Session.objects.filter(VISIBLE, owner=user, team__isnull=True).defer(*BIG_COLUMNS).order_by("-modified_ms")
    )
    return {
        "team": team,
        "role": role,
        "is_admin": permissions.can(role, "manage"),
        "can_import": permissions.can(role, "import"),
        "members": members,
        "roles": TEAM_ROLES,
        "sessions": Session.objects.filter(VISIBLE, team=team).defer(*BIG_COLUMNS).order_by("-modified_ms")[:200],
        "personal": personal[:200],
        "invite": InviteForm(),
        "slug_form": SlugForm(initial={"slug": team.slug}),
        "score_form": ScoreForm(),
        "scores": team_scores.score_configs(team_id=team.pk),
        "score_kinds": SCORE_KINDS,
        **forms_shown,
    }


@require_GET
@login_required
def team_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    team = teams.team_get_for_user(user=_user(request), public_id=public_id)
    return render(request, "settings/team.html", _team_context(request, team))


def _members(request: HttpRequest, team: Team) -> HttpResponse:
    if request.headers.get("HX-Request") == "true":
        return render(request, "settings/team.html#members", _team_context(request, team))
    return redirect("settings:team", team.public_id)


def _team_refused(request: HttpRequest, team: Team, part: str, **shown: Any) -> HttpResponse:
    """A team form that came back with errors: its part of the page (htmx) or the whole page."""
    page = "settings/team.html" + (f"#{part}" if request.headers.get("HX-Request") == "true" else "")
    return render(request, page, _team_context(request, team, **shown), status=FORM_ERRORS)


class _Refusal(forms.Form):
    """Errors of a team action that has no form of its own (a role, a removal, a move)."""


@require_POST
@login_required
def member_invite(request: HttpRequest, public_id: str) -> HttpResponse:
    team = teams.team_get_for_user(user=_user(request), public_id=public_id)
    form = InviteForm(request.POST)
    if form.is_valid():
        try:
            teams.member_invite(
                team=team, username=form.cleaned_data["username"], role=form.cleaned_data["role"], actor=_user(request)
            )
        except (MemberError, SessionConflict) as exc:
            add_service_error(form, exc)
    if form.errors:
        return _team_refused(request, team, "invite", invite=form)
    if request.headers.get("HX-Request") == "true":  # a fresh form, and the members table out of band
        return render(request, "settings/team.html#invite", {**_team_context(request, team), "oob": True})
    return redirect("settings:team", team.public_id)


def _member(team: Team, username: str) -> User:
    membership = Membership.objects.filter(team=team, user__username=username).select_related("user").first()
    if membership is None:
        raise MemberError(f"{username} is not a member")
    return membership.user


@require_POST
@login_required
def member_role(request: HttpRequest, public_id: str, username: str) -> HttpResponse:
    team = teams.team_get_for_user(user=_user(request), public_id=public_id)
    form = RoleForm(request.POST)
    if form.is_valid():
        try:
            teams.member_role_set(
                team=team, user=_member(team, username), role=form.cleaned_data["role"], actor=_user(request)
            )
        except (MemberError, SessionConflict) as exc:
            add_service_error(form, exc)
    if form.errors:
        return _team_refused(request, team, "members", members_form=form)
    return _members(request, team)


@require_POST
@login_required
def member_remove(request: HttpRequest, public_id: str, username: str) -> HttpResponse:
    team = teams.team_get_for_user(user=_user(request), public_id=public_id)
    try:
        teams.member_remove(team=team, user=_member(team, username), actor=_user(request))
    except (MemberError, SessionConflict) as exc:
        refusal = _Refusal({})
        add_service_error(refusal, exc)
        return _team_refused(request, team, "members", members_form=refusal)
    if username == _user(request).username:
        return redirect("settings:teams")
    return _members(request, team)


@require_POST
@login_required
def team_session_add(request: HttpRequest, public_id: str) -> HttpResponse:
    """Move a session into the team (its owner, or an admin of the team it is in)."""
    team = teams.team_get_for_user(user=_user(request), public_id=public_id)
    session = selectors.session_get_for_user(user=request.user, public_id=request.POST.get("session", ""))
    teams.session_move_to_team(session=session, team=team, actor=_user(request))
    return redirect("settings:team", team.public_id)


@require_POST
@login_required
def team_slug(request: HttpRequest, public_id: str) -> HttpResponse:
    """An admin changes the team's slug (what review requests name the team by)."""
    team = teams.team_get_for_user(user=_user(request), public_id=public_id)
    form = SlugForm(request.POST)
    if form.is_valid():
        try:
            teams.team_slug_set(team=team, slug=form.cleaned_data["slug"], actor=_user(request))
        except (MemberError, SessionConflict) as exc:
            add_service_error(form, exc)
    if form.errors:
        return _team_refused(request, team, "slug", slug_form=form)
    if request.headers.get("HX-Request") == "true":
        return render(request, "settings/team.html#slug", _team_context(request, team))
    return redirect("settings:team", team.public_id)


def _scores(request: HttpRequest, team: Team, **shown: Any) -> HttpResponse:
    if request.headers.get("HX-Request") == "true":
        return render(request, "settings/team.html#scores", _team_context(request, team, **shown))
    return redirect("settings:team", team.public_id)


@require_POST
@login_required
def score_create(request: HttpRequest, public_id: str) -> HttpResponse:
    team = teams.team_get_for_user(user=_user(request), public_id=public_id)
    form = ScoreForm(request.POST)
    if form.is_valid():
        d = form.cleaned_data
        try:
            team_scores.score_config_create(
                team=team, actor=_user(request), name=d["name"], kind=d["kind"], min_value=d.get("min_value"),
                max_value=d.get("max_value"), choices=d.get("choices") or "", description=d.get("description") or "",
            )  # fmt: skip
        except (MemberError, SessionConflict) as exc:
            add_service_error(form, exc)
    if form.errors:
        return _team_refused(request, team, "scores", score_form=form)
    return _scores(request, team)


@require_POST
@login_required
def score_delete(request: HttpRequest, public_id: str, config_id: int) -> HttpResponse:
    team = teams.team_get_for_user(user=_user(request), public_id=public_id)
    team_scores.score_config_delete(team=team, actor=_user(request), config_id=config_id)
    return _scores(request, team)
