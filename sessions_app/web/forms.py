"""Forms for the htmx UI: validation only; views hand the cleaned data to services. Also the one
check of a form's `next` (next_url)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme

from sessions_app.core.treeview import FILTERS


class ListQueryForm(forms.Form):
    q = forms.CharField(required=False, max_length=200)
    label = forms.CharField(required=False, strip=False)  # exactly a label's text, however long
    sort = forms.ChoiceField(
        required=False,
        choices=[("modified", "Last modified"), ("created", "Created"), ("name", "Name"), ("messages", "Messages")],
    )
    page = forms.IntegerField(required=False, min_value=1)


class NewChatForm(forms.Form):
    """The session list's "New chat": optionally in one of the user's teams (its public id)."""

    team = forms.CharField(required=False, max_length=200)


class PlaceForm(forms.Form):
    """Where a session page looks (all optional; ids are checked against the session by the selector)."""

    leaf = forms.CharField(required=False, max_length=200)
    target = forms.CharField(required=False, max_length=200)
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


class GapForm(forms.Form):
    node = forms.CharField(max_length=200)
    up = forms.BooleanField(required=False)
    d = forms.IntegerField(required=False, min_value=0, max_value=50)
    filter = forms.ChoiceField(required=False, choices=[(f, f) for f in FILTERS])
    leaf = forms.CharField(required=False, max_length=200)


class EntryForm(forms.Form):
    entry = forms.CharField(max_length=200)
    leaf = forms.CharField(required=False, max_length=200)
    target = forms.CharField(required=False, max_length=200)
    filter = forms.ChoiceField(required=False, choices=[(f, f) for f in FILTERS])


class LabelForm(EntryForm):
    label = forms.CharField(required=False, max_length=500, strip=True)
    clear = forms.BooleanField(required=False)


class RenameForm(forms.Form):
    name = forms.CharField(max_length=500, strip=True)


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
