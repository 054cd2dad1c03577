"""Auditor pages under /audit/: the audit log filtered and paginated, its CSV export, and the chain
checks. Read-only; only auditors (audit.is_auditor) get past the 404."""

from __future__ import annotations

import csv
import functools
from collections.abc import Callable, Iterator
from datetime import datetime, time
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from sessions_app.access.audit import SESSION_ACTIONS, SIGNIN_ACTIONS, audit_record, audit_verify, is_auditor
from sessions_app.models import AuditRecord, Session
from sessions_app.store import integrity

PAGE_SIZE = 50
CSV_COLUMNS = (
    "seq", "at", "actor_id", "actor_username", "action", "obj_type", "obj_id", "session_id", "ip", "request_id",
    "before", "after", "extra", "hash",
)  # fmt: skip


def auditor_required(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not is_auditor(request.user):
            raise Http404()
        return view(request, *args, **kwargs)

    return login_required(wrapped)


class AuditFilterForm(forms.Form):
    user = forms.CharField(required=False, label="User")
    session = forms.CharField(required=False, label="Session")
    action = forms.CharField(required=False, label="Action")
    since = forms.DateTimeField(required=False, label="From", input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d"])
    until = forms.DateTimeField(required=False, label="Until", input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d"])

    def filter(self, records: QuerySet[AuditRecord]) -> QuerySet[AuditRecord]:
        if not self.is_valid():
            return records.none()
        d = self.cleaned_data
        if d["user"]:
            records = records.filter(actor_username=d["user"].strip())
        if d["session"]:
            records = records.filter(session_id=d["session"].strip())
        if d["action"]:
            action = d["action"].strip()
            # "session." (or "session") selects every session.* action.
            records = (
                records.filter(action__startswith=action) if action.endswith(".") else records.filter(action=action)
            )
        if d["since"]:
            records = records.filter(at__gte=d["since"])
        if d["until"]:
            until: datetime = d["until"]
            if "T" not in str(self.data.get("until", "")):  # a bare date: up to the end of that day
                until = timezone.make_aware(datetime.combine(until.date(), time.max), timezone.get_current_timezone())
            records = records.filter(at__lte=until)
        return records


def _filtered(request: HttpRequest) -> tuple[AuditFilterForm, QuerySet[AuditRecord]]:
    form = AuditFilterForm(request.GET or None)
    records = AuditRecord.objects.order_by("-seq")
    return form, (form.filter(records) if request.GET else records)


def _page(request: HttpRequest, **extra: Any) -> HttpResponse:
    form, records = _filtered(request)
    page = Paginator(records, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "form": form,
        "page": page,
        "query": query.urlencode(),
        "actions": SESSION_ACTIONS + SIGNIN_ACTIONS,
        **extra,
    }
    return render(request, "audit/log.html", context)


@require_GET
@auditor_required
def audit_log(request: HttpRequest) -> HttpResponse:
    return _page(request)


def csv_cell(value: Any) -> str:
    """A cell a spreadsheet shows as text: formulas (= + - @, and tab/CR tricks) get a leading quote."""
    text = "" if value is None else str(value)
    if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + text
    return text


class _Echo:
    def write(self, value: str) -> str:
        return value


def _csv_rows(records: QuerySet[AuditRecord]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    for row in records.values_list(*CSV_COLUMNS).iterator(chunk_size=2000):
        yield writer.writerow([csv_cell(v.isoformat() if isinstance(v, datetime) else v) for v in row])


@require_GET
@auditor_required
def audit_csv(request: HttpRequest) -> StreamingHttpResponse:
    _, records = _filtered(request)
    audit_record(action="audit.export", obj_type="audit", extra={k: v for k, v in request.GET.items() if v})
    response = StreamingHttpResponse(_csv_rows(records), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="piweb-audit.csv"'
    return response


@require_POST
@auditor_required
def audit_chain_verify(request: HttpRequest) -> HttpResponse:
    report = audit_verify()
    finding = report.finding
    audit_record(
        action="audit.verify",
        obj_type="audit",
        after={"checked": report.checked, "bad": finding.seq if finding else None},
    )
    if finding is None:
        return _page(request, verify_ok=f"Audit chain intact: {report.checked} records verified.")
    return _page(request, verify_error=f"Audit chain broken at record #{finding.seq}: {finding.message}")


@require_POST
@auditor_required
def session_chain_verify(request: HttpRequest) -> HttpResponse:
    public_id = request.POST.get("session", "").strip()
    session = Session.objects.filter(public_id=public_id).first()
    if session is None:
        return _page(request, verify_error=f"No session {public_id!r}.")
    findings = integrity.session_verify(session=session)
    first = findings[0] if findings else None
    after = {"bad": first.seq if first else None, "message": first.message if first else "", "findings": len(findings)}
    audit_record(action="session.verify", obj_type="session", obj_id=public_id, after=after)
    if first is None:
        return _page(request, verify_ok=f"Session {public_id}: every entry verified, and its owner and team.")
    shown = "; ".join(str(f) for f in findings[:3]) + (f"; and {len(findings) - 3} more" if len(findings) > 3 else "")
    return _page(request, verify_error=f"Session {public_id}: {shown}")
