"""OpenAPI: the docs page and the schema listing every route."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

ROUTES = {
    "/api/sessions": {"get", "post"},
    "/api/sessions/import": {"post"},
    "/api/sessions/{session_id}": {"get", "patch", "delete"},
    "/api/sessions/{session_id}/export.jsonl": {"get"},
    "/api/sessions/{session_id}/export.html": {"get"},
    "/api/sessions/{session_id}/context": {"get"},
    "/api/sessions/{session_id}/tree": {"get"},
    "/api/sessions/{session_id}/compare": {"get"},
    "/api/sessions/{session_id}/usage": {"get"},
    "/api/sessions/{session_id}/entries": {"post"},
    "/api/sessions/{session_id}/leaf": {"put"},
    "/api/sessions/{session_id}/labels": {"post"},
    "/api/sessions/{session_id}/fork": {"post"},
    "/api/sessions/{session_id}/shares": {"post"},
    "/api/search": {"get"},
    "/api/sync": {"post"},
    "/api/sync/{source_id}": {"get"},
    "/api/sync/{session_id}/lines": {"post"},
    "/api/sync/{session_id}/replace": {"post"},
    "/api/sessions/{session_id}/comments": {"get", "post"},
    "/api/comments/{comment_id}": {"patch", "delete"},
    "/api/sessions/{session_id}/reviews": {"get", "post"},
    "/api/sessions/{session_id}/review-requests": {"post"},
    "/api/reviews": {"get"},
    "/api/teams/{team_id}/reviews": {"get"},
}


def test_docs_page(client):
    response = client.get("/api/docs")
    assert response.status_code == 200
    assert b"openapi.json" in response.content


def test_schema_lists_the_routes(client):
    response = client.get("/api/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["info"]["title"] == "piweb"
    paths = {path: set(ops) - {"parameters"} for path, ops in schema["paths"].items()}
    assert paths == ROUTES


def test_schema_documents_both_authentications(client):
    schema = client.get("/api/openapi.json").json()
    schemes = schema["components"]["securitySchemes"]
    assert {s["type"] for s in schemes.values()} >= {"http", "apiKey"}
    assert any(s.get("scheme") == "bearer" for s in schemes.values())
    for ops in schema["paths"].values():
        for op in ops.values():
            assert op["security"], op["operationId"]
            assert op["tags"] in (["sessions"], ["sync"], ["reviews"], ["search"])


def test_import_documents_the_multipart_file(client):
    op = client.get("/api/openapi.json").json()["paths"]["/api/sessions/import"]["post"]
    assert "multipart/form-data" in op["requestBody"]["content"]
    assert set(op["responses"]) >= {"200", "201", "400"}


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("session_list", "/api/sessions"),
        ("session_import", "/api/sessions/import"),
        ("session_detail", "/api/sessions/S"),
        ("session_export", "/api/sessions/S/export.jsonl"),
        ("session_export_html", "/api/sessions/S/export.html"),
        ("session_context", "/api/sessions/S/context"),
        ("session_tree", "/api/sessions/S/tree"),
        ("session_compare", "/api/sessions/S/compare"),
        ("entry_create", "/api/sessions/S/entries"),
        ("session_leaf", "/api/sessions/S/leaf"),
        ("session_label", "/api/sessions/S/labels"),
        ("session_fork", "/api/sessions/S/fork"),
    ],
)
def test_url_names_reverse(name, path):
    kwargs = {"session_id": "S"} if "/S" in path else {}
    assert reverse(f"api:{name}", kwargs=kwargs) == path
