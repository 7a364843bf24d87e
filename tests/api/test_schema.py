"""The OpenAPI schema: public at /api/v1/openapi.json, a valid OpenAPI document, listing every endpoint
with its Bearer security and its JSON errors; the browsable docs are a page of the app."""

import pytest
from django.test import Client
from django.urls import reverse
from openapi_spec_validator import validate

pytestmark = pytest.mark.django_db

ENDPOINTS = {
    ("post", "/api/v1/runs/pointwise"),
    ("post", "/api/v1/runs/pointwise/estimate"),
    ("post", "/api/v1/runs/pairwise"),
    ("post", "/api/v1/runs/pairwise/estimate"),
    ("post", "/api/v1/runs/jury"),
    ("post", "/api/v1/runs/jury/estimate"),
    ("get", "/api/v1/runs"),
    ("get", "/api/v1/runs/{run_id}"),
    ("get", "/api/v1/runs/{run_id}/report"),
    ("get", "/api/v1/runs/{run_id}/summary"),
    ("get", "/api/v1/runs/{run_id}/gate"),
    ("post", "/api/v1/runs/{run_id}/gate/decision"),
    ("post", "/api/v1/runs/{run_id}/release"),
    ("post", "/api/v1/runs/{run_id}/tags"),
    ("delete", "/api/v1/runs/{run_id}/tags/{name}"),
    ("get", "/api/v1/systems"),
    ("get", "/api/v1/systems/{name}/runs"),
    ("get", "/api/v1/judges"),
    ("get", "/api/v1/testsets"),
    ("post", "/api/v1/outputs"),
    ("get", "/api/v1/rubrics"),
    ("get", "/api/v1/token"),
}


@pytest.fixture
def schema():
    response = Client().get("/api/v1/openapi.json")  # no token: the schema is public
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    return response.json()


def test_the_schema_is_valid_openapi_and_lists_every_endpoint(schema):
    validate(schema)
    listed = {(method, path) for path, operations in schema["paths"].items() for method in operations}
    assert listed == ENDPOINTS
    assert schema["components"]["securitySchemes"]["BearerToken"] == {"type": "http", "scheme": "bearer"}


def test_every_endpoint_needs_the_token_and_documents_its_json_errors(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert operation["security"] == [{"BearerToken": []}], (method, path)
            for status in ("400", "401", "403", "404"):
                error = operation["responses"][status]["content"]["application/json"]["schema"]
                assert error["$ref"].endswith("/ErrorOut"), (method, path, status)
    error_schema = schema["components"]["schemas"]["ErrorOut"]
    assert set(error_schema["required"]) == {"error", "detail"}


def test_starting_a_run_documents_its_files_fields_and_idempotency_key(schema):
    operation = schema["paths"]["/api/v1/runs/pointwise"]["post"]
    form = operation["requestBody"]["content"]["multipart/form-data"]["schema"]
    properties = form["properties"]
    for field in ("testset", "outputs", "rubric", "testset_version", "rubric_version", "judge", "system", "threshold",
                  "baseline_mean", "baseline_run"):
        assert field in properties, field
    assert {"type": "string", "format": "binary"} in properties["testset"]["anyOf"]
    headers = [p for p in operation["parameters"] if p["in"] == "header"]
    assert [h["name"] for h in headers] == ["Idempotency-Key"]
    assert {"200", "201", "409", "413"} <= set(operation["responses"])
    summary = schema["paths"]["/api/v1/runs/{run_id}/summary"]["get"]["responses"]["200"]["content"]
    assert list(summary) == ["text/markdown"]


def test_the_browsable_docs_are_a_page_for_readers(client, reviewer, annotator):
    assert Client().get(reverse("api:docs")).status_code == 302  # the app's login first
    client.force_login(annotator)
    assert client.get(reverse("api:docs")).status_code == 403
    client.force_login(reviewer)
    page = client.get(reverse("api:docs"))
    html = page.content.decode()
    assert page.status_code == 200 and "/api/v1/openapi.json" in html and "swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
