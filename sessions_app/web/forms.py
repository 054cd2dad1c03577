"""Forms for the htmx UI: validation only; views hand the cleaned data to services. Also the one
check of a form's `next` (next_url)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme

from sessions_app.core.piformat import MAX_ID_CHARS
from sessions_app.core.treeview import FILTERS
from sessions_app.errors import SessionsError

# A form that did not validate comes back with its errors, swapped in place of the form (htmx
# swaps a 422: templates/base.html) or as the whole page again.
FORM_ERRORS = 422


def add_service_error(form: forms.Form, exc: SessionsError) -> None:
    """A service's refusal (MemberError, SessionConflict...) shown on the form: on the field it names
    (its extra["field"]) when the form has that field, else above the form."""
    field = exc.extra.get("field")
    form.errors  # noqa: B018 - validates the form first: add_error needs its cleaned_data
    form.add_error(field if isinstance(field, str) and field in form.fields else None, exc.message)


def entry_id_field(*, required: bool = True) -> forms.CharField:
    """An entry id exactly as sent: any characters up to import's cap, spaces kept (ids may begin,
    end or consist of them; core/entryids.py)."""
    return forms.CharField(required=required, max_length=MAX_ID_CHARS, strip=False)


class ListQueryForm(forms.Form):
    q = forms.CharField(required=False, max_length=200)
    label = forms.CharField(required=False, strip=False)  # exactly a label's text, however long
    sort = forms.ChoiceField(
        required=False,
        choices=[
            ("modified", "Last modified"),
            ("created", "Created"),
            ("name", "Name"),
            ("messages", "Messages"),
            ("cost", "Cost"),
        ],
    )
    page = forms.IntegerField(required=False, min_value=1)


class NewChatForm(forms.Form):
    """The session list's "New chat": optionally in one of the user's teams (its public id)."""

    team = forms.CharField(required=False, max_length=200)


class PlaceForm(forms.Form):
    """Where a session page looks (all optional; ids are checked against the session by the selector)."""

    leaf = entry_id_field(required=False)
    target = entry_id_field(required=False)
    filter = forms.ChoiceField(required=False, choices=[(f, f) for f in FILTERS])
    q = forms.CharField(required=False, max_length=200)

    def place(self) -> dict[str, Any]:
        data = self.cleaned_data if self.is_valid() else {}
        return {
            "leaf": data.get("leaf") or None,
            "target": data.get("target") or None,
            "mode": data.get("filter") or "default",
            "q": data.get("q") or "",
        }


class CompareForm(forms.Form):
    """The compare page's two entries (b: the session's leaf when left out; down: b's newest leaf
    below it, as the session page opens an entry) and the first entry of each side to draw (a
    page's "Show more")."""

    a = entry_id_field(required=False)
    b = entry_id_field(required=False)
    down = forms.BooleanField(required=False)
    start = forms.IntegerField(required=False, min_value=0)


class GapForm(forms.Form):
    node = entry_id_field()
    up = forms.BooleanField(required=False)
    d = forms.IntegerField(required=False, min_value=0, max_value=50)
    filter = forms.ChoiceField(required=False, choices=[(f, f) for f in FILTERS])
    leaf = entry_id_field(required=False)


class EntryForm(forms.Form):
    entry = entry_id_field()
    leaf = entry_id_field(required=False)
    target = entry_id_field(required=False)
    filter = forms.ChoiceField(required=False, choices=[(f, f) for f in FILTERS])


class LabelForm(EntryForm):
    label = forms.CharField(required=False, max_length=500, strip=True)
    clear = forms.BooleanField(required=False)


class RenameForm(forms.Form):
    name = forms.CharField(max_length=500, strip=True, error_messages={"required": "A name is required."})


class ComposerForm(forms.Form):
    text = forms.CharField(max_length=200_000, strip=False, widget=forms.Textarea)

    def clean_text(self) -> str:
        text: str = self.cleaned_data["text"]
        if not text.strip():
            raise forms.ValidationError("Write something first.")
        return text


def next_url(request: HttpRequest, fallback: str) -> str:
    """The form's `next` if it stays on this site (same host, http(s), https when the request is),
    else fallback: a `next` never sends anyone to another site."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback
