"""Hostile input at the API's edge (issue 26, item 5): a NUL or a lone surrogate in a file, a form field, a
query parameter or the path; a limit or offset out of bounds or not a number; outputs for ids the test set
does not have; a disk that fills while a run is stored. Each gets one line as JSON {"error", "detail"} — 400,
or 507 for the full disk — and the database stays as it was."""

import errno
import json

import pytest
from django.core.files.uploadhandler import TemporaryFileUploadHandler
from django.db import OperationalError

from judgeapp import models
from judgeapp.models import AuditLog, IdempotencyKey, Output, RunKind, RunStatus
from tests import factories
from tests.api.test_endpoints import outputs_bytes, pointwise_body, stored_counts, upload
from tests.factories import GOOD_REPLY, RUBRIC_ONE

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(api_as, reviewer):
    return api_as(reviewer)


def everything_stored() -> tuple:
    return (*stored_counts(), models.Case.objects.count(), AuditLog.objects.count(), IdempotencyKey.objects.count())


def assert_one_line(response, status: int, error: str, *pieces: str) -> str:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"error", "detail"} and body["error"] == error, body
    assert "\n" not in body["detail"]
    for piece in pieces:
        assert piece in body["detail"], body["detail"]
    return body["detail"]


def jsonl(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


TESTSET_NUL = jsonl('{"id": "c000", "input": "hi", "output": "ok"}', '{"id": "c001", "input": "a\\u0000b", "output": "ok"}')
TESTSET_SURROGATE = jsonl('{"id": "c000", "input": "hi", "output": "ok", "meta": {"lang": "\\ud83d"}}')
RUBRIC_TOML_NUL = RUBRIC_ONE.replace(b'name = "helpfulness"', b'name = "help\\u0000fulness"')
RUBRIC_JSON_SURROGATE = json.dumps(
    {"name": "r", "criteria": [{"name": "h", "description": "d\ud800", "scale": {str(p): "x" for p in range(1, 6)}}]}
).encode()


@pytest.mark.parametrize(
    ("files", "pieces"),
    [
        (
            {"testset": ("support.jsonl", TESTSET_NUL)},
            ["support.jsonl line 2: 'input' holds a NUL character (\\u0000) at character 2"],
        ),
        (
            {"testset": ("support.jsonl", TESTSET_SURROGATE)},
            ["support.jsonl line 1: 'meta.lang' holds a lone surrogate (\\ud83d)"],
        ),
        ({"rubric": ("rubric.toml", RUBRIC_TOML_NUL)}, ["rubric.toml line ", "'criteria[0].name' holds a NUL character"]),
        (
            {"rubric": ("rubric.json", RUBRIC_JSON_SURROGATE)},
            ["rubric.json line 1: 'criteria[0].description' holds a lone surrogate (\\ud800)"],
        ),
        ({"outputs": ("outputs.jsonl",
                      jsonl(*(json.dumps({"id": f"c{i:03d}", "output": "x\x00" if i == 2 else "x"}) for i in range(4))))},
         ["outputs.jsonl line 3: 'output' holds a NUL character (\\u0000) at character 2"]),
        ({"testset": ("support.jsonl", b'{"id": "c000", "input": "hi", "output": "o\x00k"}\n')},
         ["support.jsonl line 1: looks like a binary file (it has NUL bytes)"]),
    ],
    ids=["nul-escape-testset", "surrogate-testset-extra", "nul-toml-rubric", "surrogate-json-rubric", "nul-outputs", "nul-byte"],
)
def test_a_file_with_a_nul_or_a_lone_surrogate_is_400_naming_its_line_and_field_and_stores_nothing(
    api, judge, no_celery, files, pieces
):
    body = pointwise_body(judge, n=4)
    if "outputs" in files:
        body["testset"] = upload("support.jsonl", factories.testset_bytes(4, output=None))
    body |= {field: upload(name, data) for field, (name, data) in files.items()}
    before = everything_stored()
    response = api.post("/api/v1/runs/pointwise", body, headers={"Idempotency-Key": "build-1"})
    assert_one_line(response, 400, "bad_request", *pieces)
    assert everything_stored() == before and no_celery == []


@pytest.mark.parametrize("field", ["title", "run_id", "judge", "system", "testset_version", "baseline_run"])
def test_a_nul_in_a_form_field_is_400_naming_the_field_and_stores_nothing(api, judge, no_celery, field):
    body = pointwise_body(judge) | {field: "nightly\x00"}
    if field == "testset_version":
        body.pop("testset")
    before = everything_stored()
    assert_one_line(
        api.post("/api/v1/runs/pointwise", body), 400, "bad_request",
        f"the field '{field}' holds a NUL character (\\u0000) at character 8",
    )
    assert everything_stored() == before


def test_a_nul_in_a_pairwise_system_or_a_leads_reason_is_400_and_changes_nothing(api_as, lead, judge, no_celery):
    api = api_as(lead)
    run = factories.pointwise_run(judge=judge)
    Run = models.Run
    Run.objects.filter(pk=run.pk).update(status=RunStatus.DONE, report={"mean": 4.0})
    before = everything_stored()
    assert_one_line(
        api.post("/api/v1/runs/pairwise", {"system_a": "bot\x00", "system_b": "bot"}), 400, "bad_request", "the field 'system_a'",
    )
    decided = api.post(f"/api/v1/runs/{run.run_id}/gate/decision", {"verdict": "approved", "reason": "fine\x00"})
    assert_one_line(decided, 400, "bad_request", "the field 'reason' holds a NUL character")
    assert_one_line(api.post(f"/api/v1/runs/{run.run_id}/release", {"label": "v\x001"}), 400, "bad_request", "the field 'label'")
    assert everything_stored() == before and not models.GateDecision.objects.exists() and not models.Release.objects.exists()


@pytest.mark.parametrize(
    ("path", "piece"),
    [
        ("/api/v1/runs?system=%00", "the query parameter 'system' holds a NUL character (\\u0000) at character 1"),
        ("/api/v1/runs?kind=pointwise&status=%00done", "the query parameter 'status' holds a NUL character"),
        ("/api/v1/runs?%00=1", "the query parameter name '\\x00' holds a NUL character"),
        ("/api/v1/testsets?limit=1%00", "the query parameter 'limit' holds a NUL character"),
        ("/api/v1/runs/%00", "the path holds a NUL character (\\u0000) at character 14"),
        ("/api/v1/runs/r%00/report", "the path holds a NUL character"),
        ("/api/v1/runs/r%00/gate", "the path holds a NUL character"),
        ("/api/v1/systems/bot%00/runs", "the path holds a NUL character"),
    ],
)
def test_a_nul_in_a_query_parameter_or_the_path_is_400_naming_it(api, path, piece):
    assert_one_line(api.get(path), 400, "bad_request", piece)


def test_a_hostile_request_without_a_token_is_401_first(api_as):
    assert_one_line(api_as(None).get("/api/v1/runs?system=%00"), 401, "unauthorized")
    assert_one_line(api_as(None).post("/api/v1/runs/pointwise", {"title": "x\x00"}), 401, "unauthorized")


@pytest.mark.parametrize(
    ("query", "piece"),
    [
        ("limit=-1", "limit: Input should be greater than or equal to 1"),
        ("limit=0", "limit: Input should be greater than or equal to 1"),
        ("limit=201", "limit: Input should be less than or equal to 200"),
        ("limit=ten", "limit: Input should be a valid integer"),
        ("limit=1.5", "limit: Input should be a valid integer"),
        ("limit=99999999999999999999999", "limit: Input should be less than or equal to 200"),
        ("offset=-1", "offset: Input should be greater than or equal to 0"),
        ("offset=x", "offset: Input should be a valid integer"),
        ("kind=nope", "kind: Input should be 'compare', 'rank', 'pointwise'"),
        ("status=%ED%A0%80", "status: Input should be 'queued', 'running'"),
    ],
)
@pytest.mark.parametrize("endpoint", ["/api/v1/runs", "/api/v1/systems/support-bot/runs"])
def test_a_limit_or_offset_out_of_bounds_or_not_a_number_and_an_unknown_kind_or_status_are_400(
    api, make_system, endpoint, query, piece
):
    make_system("support-bot")
    assert_one_line(api.get(f"{endpoint}?{query}"), 400, "bad_request", piece)


@pytest.mark.parametrize("endpoint", ["/api/v1/testsets", "/api/v1/rubrics"])
@pytest.mark.parametrize(("query", "piece"), [("limit=-3", "greater than or equal to 1"),
                                              ("limit=501", "less than or equal to 500"),
                                              ("limit=a", "valid integer"), ("offset=-1", "greater than or equal to 0")])
def test_the_versions_lists_bounds_are_400_too(api, endpoint, query, piece):
    assert_one_line(api.get(f"{endpoint}?{query}"), 400, "bad_request", piece)


def test_offset_pages_through_the_runs_and_the_versions(api, judge):
    runs = [factories.pointwise_run(judge=judge, run_id=f"r{i}") for i in range(3)]
    newest_first = [r.run_id for r in reversed(runs)]
    assert [r["run_id"] for r in api.get("/api/v1/runs?limit=2").json()] == newest_first[:2]
    assert [r["run_id"] for r in api.get("/api/v1/runs?limit=2&offset=2").json()] == newest_first[2:]
    assert api.get("/api/v1/runs?offset=1000000").json() == []
    assert len(api.get("/api/v1/testsets?limit=1&offset=0").json()) == 1
    assert api.get("/api/v1/rubrics?offset=5").json() == []


def test_the_schema_declares_the_enums_and_the_bounds(api_as):
    doc = api_as(None).get("/api/v1/openapi.json").json()
    schemas = doc["components"]["schemas"]
    assert schemas["RunKind"]["enum"] == list(RunKind.values) and schemas["RunStatus"]["enum"] == list(RunStatus.values)
    assert schemas["RunOut"]["properties"]["kind"] == {"$ref": "#/components/schemas/RunKind"}
    assert schemas["RunOut"]["properties"]["status"] == {"$ref": "#/components/schemas/RunStatus"}
    assert schemas["GateOut"]["properties"]["status"] == {"$ref": "#/components/schemas/RunStatus"}
    for path, most in (
        ("/api/v1/runs", 200), ("/api/v1/systems/{name}/runs", 200), ("/api/v1/testsets", 500), ("/api/v1/rubrics", 500),
    ):
        parameters = {p["name"]: p["schema"] for p in doc["paths"][path]["get"]["parameters"]}
        assert (parameters["limit"]["minimum"], parameters["limit"]["maximum"]) == (1, most), path
        assert parameters["offset"]["minimum"] == 0 and parameters["offset"]["maximum"] >= 1_000_000, path
    query = {p["name"]: p["schema"] for p in doc["paths"]["/api/v1/runs"]["get"]["parameters"]}
    assert {"$ref": "#/components/schemas/RunKind"} in query["kind"]["anyOf"]
    assert {"$ref": "#/components/schemas/RunStatus"} in query["status"]["anyOf"]
    assert "507" in doc["paths"]["/api/v1/runs/pointwise"]["post"]["responses"]


# --- Outputs for ids the test set does not have ---------------------------------------------------------


def test_pointwise_refuses_outputs_for_unknown_ids_with_the_ids_and_their_count(api, judge, no_celery):
    inputs_only = factories.testset_bytes(4, output=None)
    extra = outputs_bytes(4) + jsonl(*(json.dumps({"id": f"x{i}", "output": GOOD_REPLY}) for i in range(12)))
    before = everything_stored()
    response = api.post("/api/v1/runs/pointwise", pointwise_body(judge, testset=inputs_only, outputs=extra))
    assert_one_line(
        response, 400, "bad_request",
        "outputs.jsonl: 12 output(s) for id(s) not in the test set: x0, x1, x2, x3, x4, x5, x6, x7, x8, x9 and 2 more; remove "
        "them",
    )
    assert everything_stored() == before


def test_pairwise_refuses_outputs_for_unknown_ids_at_the_api_too(api, judge, no_celery):
    body = {
        "testset": upload("support.jsonl", factories.testset_bytes(3, output=None)),
        "rubric": upload("rubric.toml", RUBRIC_ONE),
        "outputs_a": upload("a.jsonl", outputs_bytes(3)),
        "outputs_b": upload("b.jsonl", outputs_bytes(3) + jsonl('{"id": "c999", "output": "x"}')),
        "judge": judge.name,
    }
    before = everything_stored()
    assert_one_line(
        api.post("/api/v1/runs/pairwise", body), 400, "bad_request",
        "b.jsonl: 1 output(s) for id(s) not in the test set: c999 (version B)",
    )
    assert everything_stored() == before


# --- A full disk ---------------------------------------------------------------------------------------


class PostgresDiskFull(Exception):
    sqlstate = "53100"  # psycopg's errors.DiskFull


def _pg_disk_full() -> OperationalError:
    error = OperationalError("could not extend file \"base/16384/2619\": No space left on device")
    error.__cause__ = PostgresDiskFull()
    return error


@pytest.mark.parametrize(
    ("raised", "reason"),
    [
        (lambda: OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
        (lambda: OSError(errno.EDQUOT, "Disk quota exceeded"), "Disk quota exceeded"),
        (lambda: OperationalError("database or disk is full"), "database or disk is full"),
        (_pg_disk_full, "could not extend file"),
    ],
    ids=["enospc", "edquot", "sqlite-full", "postgres-disk-full"],
)
def test_a_full_disk_while_the_run_is_stored_is_507_and_nothing_is_half_written(
    api, judge, no_celery, monkeypatch, raised, reason
):
    """The outputs are the last rows a new run writes: the test set, rubric and run before them roll back."""
    def full(*args, **kwargs):
        raise raised()

    monkeypatch.setattr(Output.objects, "bulk_create", full)
    before = everything_stored()
    body = pointwise_body(judge, testset=factories.testset_bytes(4, output=None), outputs=outputs_bytes(4))
    response = api.post("/api/v1/runs/pointwise", body, headers={"Idempotency-Key": "build-7"})
    detail = assert_one_line(response, 507, "insufficient_storage", f"the disk is full ({reason}", "nothing was stored")
    assert detail.endswith("free some space and try again")
    assert everything_stored() == before and no_celery == []

    monkeypatch.undo()  # space again: the same key starts the run
    body = pointwise_body(judge, testset=factories.testset_bytes(4, output=None), outputs=outputs_bytes(4))
    assert api.post("/api/v1/runs/pointwise", body, headers={"Idempotency-Key": "build-7"}).status_code == 201


def test_a_full_disk_while_an_upload_is_received_is_507_and_leaves_no_temp_file(api, judge, settings, tmp_path, monkeypatch):
    """An upload over FILE_UPLOAD_MAX_MEMORY_SIZE goes to a temp file first, before any endpoint runs."""
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 100
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)

    def full(self, raw_data, start):
        self.file.write(raw_data[:10])  # part of it made it to the disk
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(TemporaryFileUploadHandler, "receive_data_chunk", full)
    before = everything_stored()
    response = api.post("/api/v1/runs/pointwise", pointwise_body(judge, n=8))
    assert_one_line(response, 507, "insufficient_storage", "the disk is full (No space left on device)")
    assert everything_stored() == before
    assert list(tmp_path.iterdir()) == []


def test_a_method_the_path_does_not_take_is_a_json_405_with_allow(api):
    for method, path, allowed in (("delete", "/api/v1/runs", "GET"), ("put", "/api/v1/runs/pointwise", "POST"),
                                  ("patch", "/api/v1/runs/r1/gate", "GET")):
        response = getattr(api.client, method)(path, headers=api.headers)
        assert_one_line(response, 405, "method_not_allowed", f"allowed: {allowed}")
        assert response["Allow"] == allowed
