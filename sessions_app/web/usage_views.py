"""Usage pages: what a session cost (/sessions/<id>/usage/: totals, every branch, every model, the
people whose piweb chats ran, charts), and what a team's sessions cost per day and week
(/teams/<id>/usage/). Readers of the session, members of the team; others get a 404."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from sessions_app.access import teams
from sessions_app.models import VISIBLE, Session
from sessions_app.render import usage_charts
from sessions_app.store import usage_facts
from sessions_app.web.views import HtmxHttpRequest, session_view

MAX_BARS = 60  # branches drawn in the cost chart (the most expensive ones, in file order)
MAX_ROWS = 500  # branches listed (the most expensive ones)


@require_GET
@session_view
def session_usage(request: HtmxHttpRequest, session: Session) -> HttpResponse:
    page = usage_facts.usage_page(session=session)
    branches = page.usage.branches
    shown = sorted(branches, key=lambda b: -b.cost)[:MAX_ROWS]
    charted = {b.leaf_id for b in sorted(branches, key=lambda b: (not b.current, -b.cost))[:MAX_BARS]}
    chart = usage_charts.bars(
        [
            usage_charts.Bar(page.previews.get(b.leaf_id) or b.leaf_id, b.cost, b.current)
            for b in branches
            if b.leaf_id in charted
        ],
        title="Cost by branch",
    )
    context_chart = usage_charts.line(
        [float(u.total_tokens) for _, u in page.context], title="Context tokens along the current path"
    )
    context = {
        "session": session,
        "total": page.usage.total,
        "branches": [{"b": b, "preview": page.previews.get(b.leaf_id, "")} for b in shown],
        "branch_count": len(branches),
        "by_model": page.usage.by_model,
        "by_user": page.by_user,
        "cost_chart": chart,
        "context_chart": context_chart,
        "charted": len(charted),
        "replies_on_path": len(page.context),
        "peak_context": max((u.total_tokens for _, u in page.context), default=0),
    }
    return render(request, "sessions_app/usage.html", context)


@require_GET
@login_required
def team_usage(request: HttpRequest, public_id: str) -> HttpResponse:
    assert isinstance(request.user, User)  # login_required
    team = teams.team_get_for_user(user=request.user, public_id=public_id)
    sessions = list(Session.objects.filter(VISIBLE, team=team).only("pk", "last_seq", "created_at", "leaf_id"))
    days = usage_facts.team_cost_by_day(sessions=sessions)
    epoch = date(1970, 1, 1)
    # Days a date can hold: a reply stamped thousands of years away (a hostile file) is left out.
    first, last = (date.min - epoch).days, (date.max - epoch).days
    by_day = sorted((epoch + timedelta(days=d), cost) for d, cost in days.items() if first <= d <= last)
    weeks: dict[date, float] = {}
    for day, cost in by_day:
        monday = day - timedelta(days=day.weekday())
        weeks[monday] = weeks.get(monday, 0.0) + cost
    recent = by_day[-MAX_BARS:]
    chart = usage_charts.bars([usage_charts.Bar(d.isoformat(), c) for d, c in recent], title="Cost per day")
    context = {
        "team": team,
        "sessions": len(sessions),
        "total": sum(days.values()),
        "weeks": sorted(weeks.items(), reverse=True),
        "days": list(reversed(recent)),
        "chart": chart,
        "today": datetime.now(UTC).date(),
    }
    return render(request, "settings/team_usage.html", context)
