"""/api/v1/ over Django's test client with a reviewer's token: runs started from uploads or stored versions
by the same services as the CLI and pages, Idempotency-Key, status, report, gate, lists, and every error as
JSON {"error", "detail"} with nothing stored on bad input."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from judgeapp import models
from judgeapp.judging import runs as run_services
from judgeapp.judging import taskqueue
from judgeapp.models import Output, Rubric, Run, RunKind, RunStatus
from tests import factories
from tests.factories import BAD_REPLY, GOOD_REPLY, RUBRIC_ONE

pytestmark = pytest.mark.django_db

JURORS = [("juror-llama", "llama-3.1-8b-instruct", "meta"), ("juror-gemma", "gemma-2-9b-it", "google"),
          ("juror-qwen", "qwen2.5-7b-instruct", "qwen")]


def upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data)


def outputs_bytes(n: int, reply=lambda i: GOOD_REPLY) -> bytes:
    return "\n".join(json.dumps({"id": f"c{i:03d}", "output": reply(i)}) for i in range(n)).encode() + b"\n"


def pointwise_body(judge_row, *, n=4, testset: bytes | None = None, outputs: bytes | None = None, **fields) -> dict:
    """A multipart body: a test set whose every case carries the good reply, the rubric, the judge."""
    body = {
        "testset": upload(
            "support.jsonl", testset if testset is not None else factories.testset_bytes(n, output=lambda i: GOOD_REPLY),
        ),
        "rubric": upload("rubric.toml", RUBRIC_ONE),
        "judge": judge_row.name,
        **fields,
    }
    if outputs is not None:
        body["outputs"] = upload("outputs.jsonl", outputs)
    return body


def stored_counts() -> tuple[int, int, int, int]:
    return models.TestSet.objects.count(), Rubric.objects.count(), Run.objects.count(), Output.objects.count()


@pytest.fixture
def api(api_as, reviewer):
    return api_as(reviewer)


# --- Starting a pointwise run --------------------------------------------------------------------------


def test_a_reviewer_starts_a_pointwise_run_from_uploads_and_it_is_sent_to_the_workers(
    api, reviewer, judge, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(taskqueue, "send", lambda name, *args: sent.append((name, *args)))
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/v1/runs/pointwise", pointwise_body(judge, threshold="3", title="nightly"))
    assert response.status_code == 201, response.content
    body = response.json()
    run = Run.objects.get(run_id=body["run_id"])
    assert run.kind == RunKind.POINTWISE and run.status == RunStatus.QUEUED and run.executor == "celery"
    assert run.created_by == reviewer and run.title == "nightly" and run.config["options"]["threshold"] == 3.0
    assert sent == [(taskqueue.START_RUN, run.pk)]
    assert body["status"] == "queued" and body["finished"] is False and body["judge"] == judge.name
    assert body["progress"] == {"total_units": 0, "done_units": 0, "failed_units": 0, "percent": 0}
    assert body["versions"]["testset"] == run.testset.version
    assert body["urls"]["gate"].endswith(f"/api/v1/runs/{run.run_id}/gate")
    assert body["urls"]["summary"].endswith(f"/api/v1/runs/{run.run_id}/summary")


def test_an_outputs_file_is_judged_and_the_test_set_keeps_its_version(api, judge, no_celery):
    inputs_only = factories.testset_bytes(4, output=None)
    good = api.post("/api/v1/runs/pointwise", pointwise_body(judge, testset=inputs_only, outputs=outputs_bytes(4)))
    bad = api.post(
        "/api/v1/runs/pointwise", pointwise_body(judge, testset=inputs_only, outputs=outputs_bytes(4, lambda i: BAD_REPLY))
    )
    assert good.status_code == bad.status_code == 201, (good.content, bad.content)
    good_run, bad_run = (Run.objects.get(run_id=r.json()["run_id"]) for r in (good, bad))
    assert good_run.testset_id == bad_run.testset_id and models.TestSet.objects.count() == 1
    assert good_run.versions["outputs"] != bad_run.versions["outputs"]
    assert set(Output.objects.filter(run=good_run).values_list("source", flat=True)) == {Output.Source.FILE}

    good_run = run_services.run_execute_inline(run=good_run)
    bad_run = run_services.run_execute_inline(run=bad_run)
    assert good_run.report["mean"] > bad_run.report["mean"]
    report = api.get(f"/api/v1/runs/{good_run.run_id}/report").json()
    assert report["outputs"] == "from outputs.jsonl" and report["versions"]["outputs"] == good_run.versions["outputs"]


def test_stored_versions_start_a_run_without_uploading_them(api, judge, no_celery):
    first = api.post("/api/v1/runs/pointwise", pointwise_body(judge)).json()
    stored = Run.objects.get(run_id=first["run_id"])
    testset_hash, rubric_hash = stored.testset.content_hash, stored.rubric.content_hash
    response = api.post(
        "/api/v1/runs/pointwise",
        {
            "testset_version": testset_hash[:12],
            "rubric_version": f"{stored.rubric.name}@{rubric_hash}",
            "judge": judge.name,
            "outputs": upload("v2.jsonl", outputs_bytes(4)),
        },
    )
    assert response.status_code == 201, response.content
    run = Run.objects.get(run_id=response.json()["run_id"])
    assert run.testset_id == stored.testset_id and run.rubric_id == stored.rubric_id
    assert models.TestSet.objects.count() == 1 and Rubric.objects.count() == 1

    listed = api.get("/api/v1/testsets").json()
    assert [t["content_hash"] for t in listed] == [testset_hash] and listed[0]["cases"] == 4
    assert api.get("/api/v1/rubrics").json()[0]["version"] == stored.rubric.version


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"testset": upload("support.jsonl", b"")}, "support.jsonl: the file is empty"),
        (
            {"testset": upload("support.jsonl", b'{"id": "c1", "input": "hi"}\n{"id": "c1", "input": "again"}\n')},
            "duplicate id 'c1'",
        ),
        ({"rubric": upload("rubric.toml", b'name = "x"\n')}, "rubric.toml: missing 'criteria'"),
        ({"judge": "nobody"}, "unknown judge 'nobody'"),
        ({"system": "nothing"}, "unknown system 'nothing'"),
        ({"threshold": "9"}, "threshold 9 is outside the rubric's scale 1-5"),
        ({"threshold": "high"}, "threshold: Input should be a valid number"),
        ({"baseline_run": "no-such-run"}, "baseline run 'no-such-run': no such run"),
        (
            {"testset_version": "abcdef123456"},
            "give the test set as a file (testset) or a stored version (testset_version), one of them",
        ),
        ({"testset": None}, "give the test set as a file (testset) or a stored version (testset_version), one of them"),
        (
            {"testset": None, "testset_version": "abcdef123456"},
            "test set version 'abcdef123456': no stored test set has that content hash",
        ),
        ({"outputs": upload("outputs.jsonl", outputs_bytes(3))}, "outputs.jsonl: no output for case(s) c003 of the test set"),
        ({"run_id": "../etc"}, "run id '../etc': use letters, digits"),
    ],
)
def test_bad_input_gets_the_clis_one_line_reason_and_stores_nothing(api, judge, no_celery, change, reason):
    body = {**pointwise_body(judge), **change}
    body = {k: v for k, v in body.items() if v is not None}
    before = stored_counts()
    response = api.post("/api/v1/runs/pointwise", body)
    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith("application/json")
    error = response.json()
    assert set(error) == {"error", "detail"} and error["error"] == "bad_request"
    assert reason in error["detail"] and "\n" not in error["detail"]
    assert stored_counts() == before and no_celery == []


def test_a_test_set_over_the_case_limit_is_400_with_one_line_and_stores_nothing(api, judge, settings, no_celery):
    settings.MAX_TESTSET_CASES = 3
    before = stored_counts()
    response = api.post("/api/v1/runs/pointwise", pointwise_body(judge, n=4))
    assert response.status_code == 400
    assert response.json() == {
        "error": "bad_request", "detail": "test set support.jsonl has more than 3 cases (MAX_TESTSET_CASES)",
    }
    assert stored_counts() == before and no_celery == []


def test_an_upload_over_the_limit_is_413_and_stores_nothing(api, judge, settings):
    settings.UPLOAD_MAX_BYTES = 2_000
    response = api.post("/api/v1/runs/pointwise", pointwise_body(judge, n=40))
    assert response.status_code == 413 and response.json()["error"] == "payload_too_large"
    assert "UPLOAD_MAX_BYTES" in response.json()["detail"]
    assert stored_counts() == (0, 0, 0, 0)


# --- Idempotency-Key -------------------------------------------------------------------------------------


def test_the_same_idempotency_key_returns_the_same_run_and_sends_it_once(
    api, judge, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(taskqueue, "send", lambda name, *args: sent.append(args))
    headers = {"Idempotency-Key": "ci-build-41-step-3"}
    with django_capture_on_commit_callbacks(execute=True):
        first = api.post("/api/v1/runs/pointwise", pointwise_body(judge), headers=headers)
    with django_capture_on_commit_callbacks(execute=True):
        again = api.post("/api/v1/runs/pointwise", pointwise_body(judge), headers=headers)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["run_id"] == again.json()["run_id"]
    assert Run.objects.count() == 1 and len(sent) == 1


def test_the_same_key_with_another_request_is_409_and_starts_nothing(api, judge, no_celery):
    headers = {"Idempotency-Key": "k-1"}
    first = api.post("/api/v1/runs/pointwise", pointwise_body(judge, threshold="3"), headers=headers)
    other = api.post("/api/v1/runs/pointwise", pointwise_body(judge, threshold="4"), headers=headers)
    assert first.status_code == 201 and other.status_code == 409
    assert other.json()["error"] == "conflict" and first.json()["run_id"] in other.json()["detail"]
    # Another endpoint under the same key is another request too.
    jury = api.post("/api/v1/runs/jury", {"judges": "a,b,c", "testset_version": "x"}, headers=headers)
    assert jury.status_code == 409
    assert Run.objects.count() == 1


def test_a_refused_request_does_not_take_its_key_and_keys_are_per_user(api, api_as, make_user, judge, no_celery):
    headers = {"Idempotency-Key": "retry-me"}
    refused = api.post("/api/v1/runs/pointwise", pointwise_body(judge, judge="nobody"), headers=headers)
    fixed = api.post("/api/v1/runs/pointwise", pointwise_body(judge), headers=headers)
    assert refused.status_code == 400 and fixed.status_code == 201
    colleague = api_as(make_user("rob", "reviewer"))
    theirs = colleague.post("/api/v1/runs/pointwise", pointwise_body(judge), headers=headers)
    assert theirs.status_code == 201 and theirs.json()["run_id"] != fixed.json()["run_id"]


def test_an_idempotency_key_that_is_not_printable_ascii_is_refused(api, judge, no_celery):
    response = api.post("/api/v1/runs/pointwise", pointwise_body(judge), headers={"Idempotency-Key": "x" * 201})
    assert response.status_code == 400 and "Idempotency-Key" in response.json()["detail"]
    assert Run.objects.count() == 0


# --- Following a run: status, report, summary, gate ----------------------------------------------------


def test_status_report_summary_and_gate_of_a_finished_run(api, judge, make_system, no_celery):
    make_system("support-bot")
    given = b"".join(json.dumps({"id": f"c{i:03d}", "output": GOOD_REPLY}).encode() + b"\n" for i in range(4))
    started = api.post("/api/v1/runs/pointwise", pointwise_body(judge, outputs=given, system="support-bot", threshold="3")).json()
    run = run_services.run_execute_inline(run=Run.objects.get(run_id=started["run_id"]))

    status = api.get(f"/api/v1/runs/{run.run_id}").json()
    assert status["status"] == "done" and status["finished"] is True and status["system"] == "support-bot"
    assert status["progress"] == {"total_units": 4, "done_units": 4, "failed_units": 0, "percent": 100}

    report = api.get(f"/api/v1/runs/{run.run_id}/report").json()
    for key in ("run_id", "kind", "mean", "per_criterion", "histogram", "lowest", "parse_failures", "parse_failure_rate",
                "invalid", "gate", "versions", "judge", "warnings", "agreement"):
        assert key in report, key
    assert report["run_id"] == run.run_id and report["kind"] == "pointwise"

    gate = api.get(f"/api/v1/runs/{run.run_id}/gate")
    assert gate.status_code == 200
    gate = gate.json()
    assert gate["passed"] is True and gate["reasons"] == [] and gate["calibration_lock"] == []
    assert gate["threshold"] == 3.0 and gate["mean"] == report["mean"] and gate["run_id"] == run.run_id

    summary = api.get(f"/api/v1/runs/{run.run_id}/summary")
    assert summary["Content-Type"].startswith("text/markdown")
    assert summary.content.decode().startswith(f"## Pointwise evaluation `{run.run_id}`: gate PASSED")


def test_a_blocked_gate_is_still_200_with_its_reasons(api, judge, no_celery):
    bad = factories.testset_bytes(4, output=lambda i: BAD_REPLY)
    started = api.post("/api/v1/runs/pointwise", pointwise_body(judge, testset=bad, threshold="3")).json()
    run_services.run_execute_inline(run=Run.objects.get(run_id=started["run_id"]))
    response = api.get(f"/api/v1/runs/{started['run_id']}/gate")
    assert response.status_code == 200
    gate = response.json()
    assert gate["passed"] is False and any("threshold" in r for r in gate["reasons"])
    summary = api.get(f"/api/v1/runs/{started['run_id']}/summary").content.decode()
    assert "gate BLOCKED" in summary and "Blocked because:" in summary


def test_a_queued_run_has_a_status_and_a_gate_that_waits(api, judge, no_celery):
    run_id = api.post("/api/v1/runs/pointwise", pointwise_body(judge)).json()["run_id"]
    assert api.get(f"/api/v1/runs/{run_id}/report").json()["status"] == "queued"
    gate = api.get(f"/api/v1/runs/{run_id}/gate").json()
    assert gate["passed"] is False and gate["finished"] is False and "the run has not finished" in gate["reasons"]


# --- Pairwise and jury -----------------------------------------------------------------------------------


def test_a_pairwise_run_from_two_outputs_files(api, judge, no_celery):
    response = api.post(
        "/api/v1/runs/pairwise",
        {
            "testset": upload("support.jsonl", factories.testset_bytes(4, output=None)),
            "rubric": upload("rubric.toml", RUBRIC_ONE),
            "outputs_a": upload("a.jsonl", outputs_bytes(4)),
            "outputs_b": upload("b.jsonl", outputs_bytes(4, lambda i: BAD_REPLY)),
            "judge": judge.name,
        },
    )
    assert response.status_code == 201, response.content
    run = run_services.run_execute_inline(run=Run.objects.get(run_id=response.json()["run_id"]))
    report = api.get(f"/api/v1/runs/{run.run_id}/report").json()
    assert report["kind"] == "pairwise" and report["winner"] == "A" and report["status"] == "done"
    assert "gate" not in response.json()["urls"]
    assert api.get(f"/api/v1/runs/{run.run_id}/gate").status_code == 404


def test_a_pairwise_version_needs_a_file_or_a_system(api, judge, no_celery):
    response = api.post(
        "/api/v1/runs/pairwise",
        {"testset": upload("support.jsonl", factories.testset_bytes(4, output=None)), "rubric": upload("rubric.toml", RUBRIC_ONE),
         "outputs_a": upload("a.jsonl", outputs_bytes(4)), "judge": judge.name},
    )
    assert response.status_code == 400
    assert response.json()["detail"] == "version B: give either its outputs file or the system that generates them"
    assert stored_counts() == (0, 0, 0, 0)


def test_a_jury_run_with_a_panel_and_its_rules(api, make_judge, no_celery):
    for name, model, family in JURORS:
        make_judge(name, model=model, family=family)
    body = {"testset": upload("support.jsonl", factories.testset_bytes(4)), "rubric": upload("rubric.toml", RUBRIC_ONE)}
    response = api.post("/api/v1/runs/jury", {**body, "judges": ",".join(j[0] for j in JURORS)})
    assert response.status_code == 201, response.content
    assert response.json()["judges"] == [j[0] for j in JURORS]
    run = run_services.run_execute_inline(run=Run.objects.get(run_id=response.json()["run_id"]), concurrency=1)
    report = api.get(f"/api/v1/runs/{run.run_id}/report").json()
    assert report["kind"] == "jury" and len(report["cases"]) == 4 and "pass_rate" in report

    body = {"testset": upload("support.jsonl", factories.testset_bytes(4)), "rubric": upload("rubric.toml", RUBRIC_ONE)}
    two = api.post("/api/v1/runs/jury", {**body, "judges": "juror-llama,juror-gemma"})
    assert two.status_code == 400 and "\n" not in two.json()["detail"]


def test_a_jury_labelled_with_a_system_judges_its_stored_version_or_is_refused(api, make_judge, make_system, no_celery):
    for name, model, family in JURORS:
        make_judge(name, model=model, family=family)
    make_system("support-bot", model="gpt-4o-mini", family="openai")
    testset = factories.testset_bytes(4, output=lambda i: "STORED-IN-THE-TEST-SET")

    def start(**fields):
        body = {"testset": upload("support.jsonl", testset), "rubric": upload("rubric.toml", RUBRIC_ONE)}
        panel = ",".join(j[0] for j in JURORS)
        return api.post("/api/v1/runs/jury", {**body, "judges": panel, "system": "support-bot", **fields})

    refused = start()
    assert refused.status_code == 400 and refused.json()["detail"].startswith("support-bot has no outputs for this test set")
    assert not Run.objects.exists()
    from judgeapp.judging.content import testset_store

    testset_store(data=testset, name="support.jsonl")
    stored = api.post("/api/v1/outputs", {"system": "support-bot", "version_label": "v2.1", "testset_version": "support",
                                          "outputs": upload("v21.jsonl", outputs_bytes(4))})
    assert stored.status_code == 201, stored.content
    started = start(outputs_version="v2.1")
    assert started.status_code == 201, started.content
    run = Run.objects.get(run_id=started.json()["run_id"])
    assert run.options["outputs"]["version"] == "v2.1"
    assert set(Output.objects.filter(run=run).values_list("text", flat=True)) == {GOOD_REPLY}


# --- Lists -------------------------------------------------------------------------------------------------


def test_runs_by_system_newest_first(api, judge, make_system, no_celery):
    make_system("bot-a")
    make_system("bot-b")
    given = b"".join(json.dumps({"id": f"c{i:03d}", "output": GOOD_REPLY}).encode() + b"\n" for i in range(4))
    a1 = api.post("/api/v1/runs/pointwise", pointwise_body(judge, outputs=given, system="bot-a")).json()["run_id"]
    api.post("/api/v1/runs/pointwise", pointwise_body(judge, outputs=given, system="bot-b"))
    a2 = api.post("/api/v1/runs/pointwise", pointwise_body(judge, outputs=given, system="bot-a", threshold="3")).json()["run_id"]
    assert [r["run_id"] for r in api.get("/api/v1/systems/bot-a/runs").json()] == [a2, a1]
    assert [r["run_id"] for r in api.get("/api/v1/runs?system=bot-a&limit=1").json()] == [a2]
    assert api.get("/api/v1/runs?kind=pairwise").json() == []
    assert api.get("/api/v1/runs?kind=nonsense").status_code == 400
    missing = api.get("/api/v1/systems/ghost/runs")
    assert missing.status_code == 404 and missing.json() == {"error": "not_found", "detail": "no system 'ghost'"}
    assert {s["name"] for s in api.get("/api/v1/systems").json()} == {"bot-a", "bot-b"}


def test_judges_are_listed_with_their_version_and_never_a_key(api, judge):
    [listed] = api.get("/api/v1/judges").json()
    assert listed["name"] == judge.name and listed["version"] == judge.version and listed["family"] == "scripted"
    assert "api_key_env" not in listed and "base_url" not in listed
    assert listed["max_tokens"] is None  # the mode's default
    judge.max_tokens = 300
    judge.save()
    assert api.get("/api/v1/judges").json()[0]["max_tokens"] == 300


# --- Errors are JSON, never a page --------------------------------------------------------------------------


def test_unknown_runs_paths_and_methods_answer_json(api):
    for path, status in [("/api/v1/runs/nope", 404), ("/api/v1/runs/nope/gate", 404), ("/api/v1/nowhere", 404),
                         ("/api/v1/", 404), ("/api/", 404), ("/api", 404), ("/api/v2/runs", 404)]:
        response = api.get(path)
        assert response.status_code == status, path
        assert response["Content-Type"].startswith("application/json") and set(response.json()) == {"error", "detail"}, path
    wrong = api.post("/api/v1/judges")
    assert wrong.status_code == 405 and wrong.json()["error"] == "method_not_allowed"


def test_a_server_error_is_json_not_django_s_page(api, judge, monkeypatch):
    from judgeapp.api import selectors

    def broken(**kwargs):
        raise RuntimeError("the database is on fire")

    monkeypatch.setattr(selectors, "run_get", broken)
    response = api.get("/api/v1/runs/anything")
    assert response.status_code == 500 and response.json()["error"] == "server_error"
    assert "fire" not in response.json()["detail"]  # what failed goes to the log, not to the caller


def test_a_retry_that_races_the_first_request_gets_its_run_and_leaves_nothing(api, reviewer, judge, monkeypatch, no_celery):
    from judgeapp.api import services

    headers = {"Idempotency-Key": "raced"}
    first = api.post("/api/v1/runs/pointwise", pointwise_body(judge), headers=headers).json()
    # The retry looked before the first request had committed its key: it starts a run of its own, finds
    # the key taken when it stores it, and rolls back to the first request's run.
    real, looks = services._replayed, []

    def not_yet(user, key, request_hash):
        looks.append(key)
        return None if len(looks) == 1 else real(user, key, request_hash)

    monkeypatch.setattr(services, "_replayed", not_yet)
    retry = api.post("/api/v1/runs/pointwise", pointwise_body(judge), headers=headers)
    assert retry.status_code == 200 and retry.json()["run_id"] == first["run_id"] and len(looks) == 2
    assert Run.objects.count() == 1


def test_an_imported_judge_with_no_endpoint_cannot_start_a_run(api, judge, no_celery):
    """Issue 16, item 2: its verdicts were brought in; calling it would reach the client's default endpoint."""
    imported = models.Judge.objects.create(
        name="gpt-3.5-turbo", model="gpt-3.5-turbo", family="openai", source=models.EndpointSource.IMPORT,
    )
    response = api.post("/api/v1/runs/pointwise", pointwise_body(imported))
    assert response.status_code == 400 and "an imported judge" in response.json()["detail"]
    assert Run.objects.count() == 0 and no_celery == []


def test_a_run_labelled_with_a_system_judges_the_outputs_stored_for_its_version(api, judge, make_system, lead, no_celery):
    from judgeapp.judging.content import InputFile, testset_store
    from judgeapp.judging.outputs import output_set_save

    system = make_system("support-bot")
    data = factories.testset_bytes(4, output=lambda i: BAD_REPLY)  # the test set's own replies: never judged here
    testset = testset_store(data=data, name="support.jsonl")
    given = b"".join(json.dumps({"id": f"c{i:03d}", "output": GOOD_REPLY}).encode() + b"\n" for i in range(4))
    output_set_save(system=system, version_label="v2.1", testset=testset, outputs=InputFile(given, "v21.jsonl"), created_by=lead)

    refused = api.post("/api/v1/runs/pointwise", pointwise_body(judge, testset=data, system="support-bot", outputs_version="v9"))
    assert refused.status_code == 400 and "support-bot has no outputs labelled 'v9' for this test set" in refused.json()["detail"]
    started = api.post(
        "/api/v1/runs/pointwise", pointwise_body(judge, testset=data, system="support-bot", outputs_version="v2.1"),
    )
    assert started.status_code == 201, started.content
    run = run_services.run_execute_inline(run=Run.objects.get(run_id=started.json()["run_id"]))
    report = api.get(f"/api/v1/runs/{run.run_id}/report").json()
    assert report["outputs_source"]["source"] == "uploaded" and report["outputs_source"]["version"] == "v2.1"
    assert report["outputs"].startswith("uploaded as support-bot v2.1 on ") and report["outputs"].endswith(f" by {lead.username}")
    assert set(run.outputs.values_list("text", flat=True)) == {GOOD_REPLY}


def test_a_stored_test_set_is_reached_by_its_name(api, judge, no_celery):
    from judgeapp.judging.content import testset_store as stored_testset

    stored_testset(data=factories.testset_bytes(2, output=lambda i: GOOD_REPLY), name="support.jsonl")
    newest = stored_testset(data=factories.testset_bytes(3, output=lambda i: GOOD_REPLY), name="support.jsonl")
    body = {"rubric": upload("rubric.toml", RUBRIC_ONE), "judge": judge.name}
    started = api.post("/api/v1/runs/pointwise", {**body, "testset_version": "support"})
    assert started.status_code == 201 and Run.objects.get(run_id=started.json()["run_id"]).testset == newest
    first = api.post(
        "/api/v1/runs/pointwise", {**body, "rubric": upload("rubric.toml", RUBRIC_ONE), "testset_version": "support@v1"},
    )
    assert first.status_code == 201 and Run.objects.get(run_id=first.json()["run_id"]).testset.case_count == 2


def test_a_system_versions_outputs_are_uploaded_over_the_api_then_judged_by_label(api, judge, make_system, no_celery):
    from judgeapp.judging.content import testset_store as stored_testset

    make_system("support-bot")
    data = factories.testset_bytes(3, output=lambda i: BAD_REPLY)
    stored_testset(data=data, name="support.jsonl")
    given = b"".join(json.dumps({"id": f"c{i:03d}", "output": GOOD_REPLY}).encode() + b"\n" for i in range(3))
    fields = {"system": "support-bot", "version_label": "v2.1", "testset_version": "support"}
    first = api.post("/api/v1/outputs", {**fields, "outputs": upload("v21.jsonl", given)})
    assert first.status_code == 201 and first.json()["outputs"] == 3 and first.json()["created"] is True
    again = api.post("/api/v1/outputs", {**fields, "outputs": upload("v21.jsonl", given)})
    assert again.status_code == 200 and again.json()["created"] is False
    ghost = given + b'{"id": "ghost", "output": "x"}\n'
    refused = api.post("/api/v1/outputs", {**fields, "version_label": "v3", "outputs": upload("v3.jsonl", ghost)})
    assert refused.status_code == 400 and "ghost" in refused.json()["detail"]
    assert models.OutputSet.objects.count() == 1
    started = api.post("/api/v1/runs/pointwise", {"testset_version": "support", "rubric": upload("rubric.toml", RUBRIC_ONE),
                                                  "judge": judge.name, "system": "support-bot", "outputs_version": "v2.1"})
    assert started.status_code == 201
    run = Run.objects.get(run_id=started.json()["run_id"])
    assert set(run.outputs.values_list("text", flat=True)) == {GOOD_REPLY}
