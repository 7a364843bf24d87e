"""The endpoints of /api/v1/ (docs/api.md). Each checks the role, reads the request, calls the service the
CLI and the pages call, and answers JSON. Bad input is the services' own one line (400), with nothing stored.
"""

# ruff: noqa: B008 - File(), Header() and Query() defaults are django-ninja's declarations of a parameter

from datetime import date
from typing import Any, Literal

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import File, Form, Header, Query, Router, Status, UploadedFile

from judgeapp.api import inputs, selectors, services
from judgeapp.api.schemas import (
    ErrorOut,
    EstimateOut,
    GateDecisionIn,
    GateOut,
    JudgeOut,
    JuryInputs,
    JuryStart,
    OutputSetOut,
    OutputsIn,
    PairwiseInputs,
    PairwiseStart,
    PointwiseStart,
    ReleaseIn,
    RunOut,
    TagIn,
    TokenOut,
    VersionOut,
)
from judgeapp.judging import judges as judge_rows
from judgeapp.judging import tags
from judgeapp.judging.errors import InputError
from judgeapp.judging.judges import judges_sync, system_get
from judgeapp.judging.outcomes import OUTCOMES
from judgeapp.judging.preflight import imported_refusal
from judgeapp.jury.services import jury_estimate, jury_panel_get, jury_run_create
from judgeapp.models import Executor, Judge, Run, RunKind, RunStatus, System
from judgeapp.pairwise.services import VersionSource, pairwise_estimate, pairwise_run_create
from judgeapp.pointwise.services import pointwise_estimate, pointwise_run_create, report_markdown_of
from judgeapp.releases import services as release_services
from judgeapp.roles import Role, has_role, user_roles
from judgeapp.web.selectors import RunFilters

router = Router()
Outcome = Literal[tuple(key for key, _ in OUTCOMES)]


def judge_get(*, name: str | None = None) -> Judge:
    """The judge a new run asks for: an imported judge (its verdicts brought in) has no endpoint to call."""
    judge = judge_rows.judge_get(name=name)
    refusal = imported_refusal([judge])
    if refusal:
        raise InputError(refusal)
    return judge

ERRORS = {status: ErrorOut for status in (400, 401, 403, 404, 409, 413)}
# 202: the run is stored and queued, but the broker was down: the workers start it when the broker is back.
# 507: the disk filled while the run was stored.
STARTED = {201: RunOut, 202: RunOut, 200: RunOut, **ERRORS, 507: ErrorOut}
IDEMPOTENCY_KEY = Header(
    None,
    alias="Idempotency-Key",
    description="any unique string per CI step: a retry with the same key and request gets the same run (200); "
    "the same key with another request is a 409",
)


def run_out(request: HttpRequest, run: Run) -> dict:
    """A run's status and progress, with the links a script follows."""
    def url(name: str) -> str:
        return request.build_absolute_uri(reverse(name, args=[run.run_id]))

    urls = {"self": url("api:v1:run_status"), "report": url("api:v1:run_report"), "page": url("run_detail")}
    if run.kind == RunKind.POINTWISE:
        urls |= {"gate": url("api:v1:run_gate"), "summary": url("api:v1:run_summary")}
    return {
        "run_id": run.run_id,
        "kind": run.kind,
        "status": run.status,
        "finished": run.is_finished,
        "title": run.title,
        "system": run.system.name if run.system_id else None,
        "judge": run.judge.name if run.judge_id else None,
        "judges": list((run.config.get("judges") or {}).keys()),
        "created_by": run.created_by.username if run.created_by_id else None,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "progress": {
            "total_units": run.total_units,
            "done_units": run.done_units,
            "failed_units": run.failed_units,
            "percent": run.progress_percent,
        },
        "versions": run.versions,
        "error": run.error,
        "notice": run.broker_notice,
        "tags": sorted(tag.name for tag in run.tags.all()),
        "usage": (run.report or {}).get("usage"),
        "budget": float(run.budget) if run.budget is not None else None,
        "stopped": run.stopped,
        "urls": urls,
    }


def _started(request: HttpRequest, *, endpoint: str, key: str | None, fields, files: dict, create) -> Status:
    key = services.idempotency_key_check(key)
    _sync_judges(request)
    fingerprint = services.request_fingerprint(endpoint=endpoint, fields=fields.model_dump(), files=files)
    # The tags are checked before anything is stored: a bad one is a 400 and no run.
    names = [tags.tag_name_clean(name) for name in fields.tags.split(",") if name.strip()]

    def create_tagged() -> Run:
        run = create()
        tags.run_tags_add(run=run, names=names, actor=request.user)
        return run

    run, created = services.run_start_idempotent(user=request.user, key=key, request_hash=fingerprint, create=create_tagged)
    if not created:
        return Status(200, run_out(request, run))
    return Status(202 if run.awaiting_broker else 201, run_out(request, run))


# --- Starting runs -------------------------------------------------------------------------------------
# A run's inputs, read once for its start and its estimate: the create and the estimate services take them alike.


def _inputs(data, files: dict) -> dict:
    return {
        "testset": inputs.testset_input(files.get("testset"), data.testset_version),
        "rubric": inputs.rubric_input(files.get("rubric"), data.rubric_version),
        "trials": data.trials,
        "prompt": data.prompt or None,
    }


def _pointwise_inputs(data: PointwiseStart, files: dict) -> dict:
    return {
        **_inputs(data, files),
        "outputs": files.get("outputs"),
        "outputs_version": data.outputs_version or None,
        "judge": judge_get(name=data.judge or None),
        "system": system_get(name=data.system) if data.system else None,
        "generate": data.generate,
    }


def _pairwise_inputs(data: PairwiseInputs, files: dict) -> dict:
    def version(slot: str) -> VersionSource:
        system = getattr(data, f"system_{slot}")
        return VersionSource(outputs=files.get(f"outputs_{slot}"), system=system_get(name=system) if system else None)

    return {
        **_inputs(data, files),
        "judge": judge_get(name=data.judge or None),
        "version_a": version("a"),
        "version_b": version("b"),
        "sample": data.sample,
        "seed": data.seed,
    }


def _jury_inputs(data: JuryInputs, files: dict) -> dict:
    return {
        **_inputs(data, files),
        "judges": jury_panel_get(data.judges),
        "system": system_get(name=data.system) if data.system else None,
        "generate": data.generate,
        "outputs": files.get("outputs"),
        "outputs_version": data.outputs_version or None,
    }


@router.post("/runs/pointwise", response=STARTED, url_name="pointwise_start", tags=["runs"])
def pointwise_start(
    request: HttpRequest,
    data: Form[PointwiseStart],
    testset: UploadedFile | None = File(None, description="test set, JSONL or CSV: id, input, output (output optional)"),
    outputs: UploadedFile | None = File(None, description='the replies to judge, JSONL {"id", "output"}, one per case'),
    rubric: UploadedFile | None = File(None, description="rubric, TOML or JSON"),
    idempotency_key: str | None = IDEMPOTENCY_KEY,
):
    """Start a pointwise evaluation (the gate is decided when it finishes). 201 with the run, queued; 202
    when the broker is down (the run is stored and starts when the broker is back: its `notice` says so);
    200 with the same run for a retried Idempotency-Key."""
    files = inputs.uploads_read(testset=testset, outputs=outputs, rubric=rubric)

    def create() -> Run:
        return pointwise_run_create(
            **_pointwise_inputs(data, files),
            threshold=data.threshold,
            baseline_mean=data.baseline_mean,
            baseline_run=data.baseline_run or None,
            executor=Executor.CELERY,
            run_id=data.run_id or None,
            title=data.title,
            created_by=request.user,
            budget=data.budget or None,
        )

    return _started(request, endpoint="pointwise", key=idempotency_key, fields=data, files=files, create=create)


@router.post("/runs/pointwise/estimate", response={200: EstimateOut, **ERRORS}, url_name="pointwise_estimate", tags=["runs"])
def pointwise_estimate_view(
    request: HttpRequest,
    data: Form[PointwiseStart],
    testset: UploadedFile | None = File(None, description="test set, JSONL or CSV: id, input, output (output optional)"),
    outputs: UploadedFile | None = File(None, description='the replies to judge, JSONL {"id", "output"}, one per case'),
    rubric: UploadedFile | None = File(None, description="rubric, TOML or JSON"),
):
    """What `POST /runs/pointwise` with these fields and files would ask its judge: calls, tokens in and out,
    cost. No judge is asked and nothing is stored (bad input is the same 400)."""
    files = inputs.uploads_read(testset=testset, outputs=outputs, rubric=rubric)
    return pointwise_estimate(**_pointwise_inputs(data, files)).as_dict()


@router.post("/runs/pairwise", response=STARTED, url_name="pairwise_start", tags=["runs"])
def pairwise_start(
    request: HttpRequest,
    data: Form[PairwiseStart],
    testset: UploadedFile | None = File(None, description="test set, JSONL or CSV: id, input"),
    rubric: UploadedFile | None = File(None, description="rubric, TOML or JSON"),
    outputs_a: UploadedFile | None = File(None, description='version A\'s replies, JSONL {"id", "output"}'),
    outputs_b: UploadedFile | None = File(None, description='version B\'s replies, JSONL {"id", "output"}'),
    idempotency_key: str | None = IDEMPOTENCY_KEY,
):
    """Start a pairwise A/B run: each version's replies from a file or a system that generates them."""
    files = inputs.uploads_read(testset=testset, rubric=rubric, outputs_a=outputs_a, outputs_b=outputs_b)

    def create() -> Run:
        return pairwise_run_create(
            **_pairwise_inputs(data, files),
            run_id=data.run_id or None,
            title=data.title,
            executor=Executor.CELERY,
            created_by=request.user,
            budget=data.budget or None,
        )

    return _started(request, endpoint="pairwise", key=idempotency_key, fields=data, files=files, create=create)


@router.post("/runs/pairwise/estimate", response={200: EstimateOut, **ERRORS}, url_name="pairwise_estimate", tags=["runs"])
def pairwise_estimate_view(
    request: HttpRequest,
    data: Form[PairwiseInputs],
    testset: UploadedFile | None = File(None, description="test set, JSONL or CSV: id, input"),
    rubric: UploadedFile | None = File(None, description="rubric, TOML or JSON"),
    outputs_a: UploadedFile | None = File(None, description='version A\'s replies, JSONL {"id", "output"}'),
    outputs_b: UploadedFile | None = File(None, description='version B\'s replies, JSONL {"id", "output"}'),
):
    """What `POST /runs/pairwise` with these fields and files would ask its judge: both orders of every case
    compared, each trial; calls, tokens in and out, cost. No judge is asked and nothing is stored (bad input is
    the same 400)."""
    files = inputs.uploads_read(testset=testset, rubric=rubric, outputs_a=outputs_a, outputs_b=outputs_b)
    return pairwise_estimate(**_pairwise_inputs(data, files)).as_dict()


@router.post("/runs/jury", response=STARTED, url_name="jury_start", tags=["runs"])
def jury_start(
    request: HttpRequest,
    data: Form[JuryStart],
    testset: UploadedFile | None = File(None, description="test set, JSONL or CSV: id, input, output"),
    rubric: UploadedFile | None = File(None, description="rubric, TOML or JSON"),
    outputs: UploadedFile | None = File(None, description='the replies to judge, JSONL {"id", "output"}, one per case'),
    idempotency_key: str | None = IDEMPOTENCY_KEY,
):
    """Start a jury run: a panel of judges of different families, their pass/fail votes pooled."""
    files = inputs.uploads_read(testset=testset, rubric=rubric, outputs=outputs)

    def create() -> Run:
        return jury_run_create(
            **_jury_inputs(data, files),
            run_id=data.run_id or None,
            title=data.title,
            executor=Executor.CELERY,
            created_by=request.user,
            budget=data.budget or None,
        )

    return _started(request, endpoint="jury", key=idempotency_key, fields=data, files=files, create=create)


@router.post("/runs/jury/estimate", response={200: EstimateOut, **ERRORS}, url_name="jury_estimate", tags=["runs"])
def jury_estimate_view(
    request: HttpRequest,
    data: Form[JuryInputs],
    testset: UploadedFile | None = File(None, description="test set, JSONL or CSV: id, input, output"),
    rubric: UploadedFile | None = File(None, description="rubric, TOML or JSON"),
    outputs: UploadedFile | None = File(None, description='the replies to judge, JSONL {"id", "output"}, one per case'),
):
    """What `POST /runs/jury` with these fields and files would ask its jurors: every juror on every case, each
    trial; calls, tokens in and out, cost (null when a juror has no price). No juror is asked and nothing is
    stored (bad input is the same 400)."""
    files = inputs.uploads_read(testset=testset, rubric=rubric, outputs=outputs)
    return jury_estimate(**_jury_inputs(data, files)).as_dict()


# --- Following a run -----------------------------------------------------------------------------------


@router.get("/runs/{run_id}", response={200: RunOut, **ERRORS}, url_name="run_status", tags=["runs"])
def run_status(request: HttpRequest, run_id: str):
    """A run's status and progress (poll it until `finished`)."""
    return run_out(request, selectors.run_get(run_id=run_id))


@router.get("/runs/{run_id}/report", response={200: dict[str, Any], **ERRORS}, url_name="run_report", tags=["runs"])
def run_report(request: HttpRequest, run_id: str):
    """The report of docs/CONTRACT.md §4 (a pointwise one with its gate and agreement as they are now);
    before the run finishes, its id, kind and status."""
    return selectors.report_get(run=selectors.run_get(run_id=run_id))


@router.get(
    "/runs/{run_id}/summary",
    url_name="run_summary",
    tags=["runs"],
    response=ERRORS,  # 200 is the Markdown below, not JSON
    openapi_extra={
        "responses": {200: {"description": "the Markdown summary", "content": {"text/markdown": {"schema": {"type": "string"}}}}}
    },
)
def run_summary(request: HttpRequest, run_id: str):
    """A pointwise run's Markdown summary (for a CI comment): the gate first, then the scores."""
    run = selectors.pointwise_run_get(run_id=run_id)
    return HttpResponse(report_markdown_of(run=run), content_type="text/markdown; charset=utf-8")


@router.get("/runs/{run_id}/gate", response={200: GateOut, **ERRORS}, url_name="run_gate", tags=["gate"])
def run_gate(request: HttpRequest, run_id: str):
    """The release gate of a pointwise run, decided now: `passed` and the reasons (200 either way)."""
    return selectors.gate_get(run=selectors.pointwise_run_get(run_id=run_id))


@router.post("/runs/{run_id}/gate/decision", response={200: GateOut, **ERRORS}, url_name="gate_decide", tags=["gate"])
def gate_decide(request: HttpRequest, run_id: str, data: Form[GateDecisionIn]):
    """A lead approves or blocks the release, with a reason (audited). Answers the gate after it."""
    if not has_role(request.user, Role.LEAD):
        raise PermissionDenied("only a lead decides on a release")
    run = selectors.pointwise_run_get(run_id=run_id)
    release_services.gate_decide(run=run, actor=request.user, verdict=data.verdict, reason=data.reason)
    return selectors.gate_get(run=run)


@router.post("/runs/{run_id}/release", response={200: GateOut, **ERRORS}, url_name="release_mark", tags=["gate"])
def release_mark(request: HttpRequest, run_id: str, data: Form[ReleaseIn]):
    """A lead marks the run's version released: its mean becomes the system's baseline (audited)."""
    if not has_role(request.user, Role.LEAD):
        raise PermissionDenied("only a lead marks a release")
    run = selectors.pointwise_run_get(run_id=run_id)
    release_services.release_mark(run=run, actor=request.user, label=data.label, note=data.note)
    return selectors.gate_get(run=run)


# --- Lists ---------------------------------------------------------------------------------------------


def _runs(request: HttpRequest, response: HttpResponse, *, system=None, kind: RunKind | None, status: RunStatus | None,
          limit: int, offset: int, page: int | None = None, filters=None) -> list[dict]:
    """One slice of the matching runs: `offset` and `limit`, or page `page` of `limit`. The count of all that
    match is the X-Total-Count header; the next slice, when there is one, the Link header's rel="next"."""
    matching = selectors.run_list_for_filters(system=system, kind=kind, status=status, filters=filters)
    total = matching.count() if hasattr(matching, "count") and not isinstance(matching, list) else len(matching)
    if page is not None:
        offset = (page - 1) * limit
    runs = list(matching[offset : offset + limit])
    response["X-Total-Count"] = str(total)
    if offset + limit < total:
        query = request.GET.copy()
        query.pop("offset", None)
        if page is not None:
            query["page"] = str(page + 1)
        else:
            query["offset"] = str(offset + limit)
        response["Link"] = f'<{request.build_absolute_uri(request.path)}?{query.urlencode()}>; rel="next"'
    return [run_out(request, run) for run in runs]


# The lists' bounds, declared in the schema and answered 400 beyond them (a negative limit, a word).
RUNS_LIMIT = Query(50, ge=1, le=selectors.RUNS_LIMIT_MAX, description=f"how many runs (1 to {selectors.RUNS_LIMIT_MAX})")
VERSIONS_LIMIT = Query(100, ge=1, le=500, description="how many versions (1 to 500)")
OFFSET = Query(0, ge=0, le=selectors.OFFSET_MAX, description=f"how many of the newest to skip (0 to {selectors.OFFSET_MAX:,})")
PAGE = Query(None, ge=1, le=selectors.OFFSET_MAX // 50, description="page N of `limit` runs (instead of `offset`)")
KIND = Query(None, description="only runs of this kind")
STATUS = Query(None, description="only runs in this status")


@router.get("/runs", response={200: list[RunOut], **ERRORS}, url_name="runs", tags=["runs"])
def runs(
    request: HttpRequest,
    response: HttpResponse,
    q: str = Query("", max_length=200, description="words in the run's title or id, its system, test set or judge"),
    system: str | None = Query(None, description="only this system's runs (a pairwise run's A or B side too)"),
    kind: RunKind | None = KIND,
    status: RunStatus | None = STATUS,
    outcome: Outcome | None = Query(None, description="only runs with this outcome, as the runs page says it"),
    testset: str | None = Query(None, max_length=200, description="only runs of the test set of this name"),
    tag: str | None = Query(None, max_length=80, description="only runs with this tag"),
    since: date | None = Query(None, description="only runs created on this day (YYYY-MM-DD) or later"),
    until: date | None = Query(None, description="only runs created on this day (YYYY-MM-DD) or earlier"),
    limit: int = RUNS_LIMIT,
    offset: int = OFFSET,
    page: int | None = PAGE,
):
    """Runs, newest first, filtered as on the runs page; X-Total-Count says how many match, Link the next slice."""
    if since and until and since > until:
        raise InputError("until is before since")
    system_row = selectors.system_get(name=system) if system else None
    filters = RunFilters(q=q.strip(), outcome=outcome, testset=testset or None, tag=(tag or "").strip().lower() or None,
                         since=since, until=until)
    return _runs(
        request, response, system=system_row, kind=kind, status=status, limit=limit, offset=offset, page=page, filters=filters
    )


@router.get("/systems/{name}/runs", response={200: list[RunOut], **ERRORS}, url_name="system_runs", tags=["runs"])
def system_runs(
    request: HttpRequest,
    response: HttpResponse,
    name: str,
    kind: RunKind | None = KIND,
    status: RunStatus | None = STATUS,
    limit: int = RUNS_LIMIT,
    offset: int = OFFSET,
):
    """A system's runs, newest first."""
    return _runs(request, response, system=selectors.system_get(name=name), kind=kind, status=status, limit=limit, offset=offset)


@router.post("/runs/{run_id}/tags", response={200: RunOut, **ERRORS}, url_name="run_tag_add", tags=["runs"])
def run_tag_add(request: HttpRequest, run_id: str, data: Form[TagIn]):
    """Put a tag on a run (reviewers and leads; twice is once). Answers the run with its tags."""
    run = selectors.run_get(run_id=run_id)
    tags.run_tag_add(run=run, name=data.name, actor=request.user)
    return run_out(request, run)


@router.delete("/runs/{run_id}/tags/{name}", response={200: RunOut, **ERRORS}, url_name="run_tag_remove", tags=["runs"])
def run_tag_remove(request: HttpRequest, run_id: str, name: str):
    """Take a tag off a run (reviewers and leads). Answers the run with its tags."""
    run = selectors.run_get(run_id=run_id)
    tags.run_tag_remove(run=run, name=name)
    return run_out(request, run)


def _endpoints(model_rows) -> list[dict]:
    return [
        {
            "name": e.name,
            "model": e.model,
            "family": e.effective_family,
            "version": e.version,
            "max_concurrency": e.max_concurrency,
            "max_tokens": e.max_tokens,
            "source": e.source,
            "scripted_demo": e.scripted_demo,
        }
        for e in model_rows
    ]


def _sync_judges(request: HttpRequest) -> None:
    """A run started over the API names judges as the command line does: the judges file is loaded first
    (a POST may write; a bad file leaves the rows of its last good load, and naming an unknown judge then
    gets the one-line reason)."""
    try:
        judges_sync(actor=request.user)
    except InputError:
        pass


@router.get("/judges", response={200: list[JudgeOut], **ERRORS}, url_name="judges", tags=["judges"])
def judges(request: HttpRequest):
    """The judges a run can name (as last loaded from the judges file: a GET writes nothing)."""
    return _endpoints(Judge.objects.order_by("name"))


@router.get("/systems", response={200: list[JudgeOut], **ERRORS}, url_name="systems", tags=["judges"])
def systems(request: HttpRequest):
    """The systems under test."""
    return _endpoints(System.objects.order_by("name"))


@router.get("/testsets", response={200: list[VersionOut], **ERRORS}, url_name="testsets", tags=["versions"])
def testsets(request: HttpRequest, limit: int = VERSIONS_LIMIT, offset: int = OFFSET):
    """Stored test sets, newest first: a run can name one by `testset_version` instead of uploading it."""
    return [
        {
            "name": t.name, "version": t.version, "content_hash": t.content_hash, "created_at": t.created_at,
            "git_commit": t.git_commit, "cases": t.case_count
        }
        for t in selectors.testset_list(limit=limit, offset=offset)
    ]


@router.post(
    "/outputs", response={201: OutputSetOut, 200: OutputSetOut, **ERRORS, 507: ErrorOut}, url_name="outputs_add",
    tags=["versions"]
)
def outputs_add(
    request: HttpRequest,
    data: Form[OutputsIn],
    outputs: UploadedFile = File(..., description='the replies, JSONL {"id", "output"}, one for every case of the test set'),
):
    """Store one version of a system's outputs for a stored test set: 201 when stored, 200 when the same file
    was stored before for that system and label. A run labelled with the system judges them
    (`outputs_version`)."""
    from judgeapp.judging.outputs import output_set_save

    files = inputs.uploads_read(outputs=outputs)
    _sync_judges(request)
    testset = selectors.testset_for_reference(reference=data.testset_version)
    output_set, created = output_set_save(
        system=system_get(name=data.system), version_label=data.version_label, testset=testset, outputs=files["outputs"],
        created_by=request.user,
    )
    return Status(201 if created else 200, {
        "system": output_set.system.name, "version": output_set.version_label, "testset": testset.name,
        "testset_version": testset.version, "outputs": output_set.row_count, "uploaded_at": output_set.created_at,
        "uploaded_by": output_set.created_by_label, "created": created,
    })


@router.get("/rubrics", response={200: list[VersionOut], **ERRORS}, url_name="rubrics", tags=["versions"])
def rubrics(request: HttpRequest, limit: int = VERSIONS_LIMIT, offset: int = OFFSET):
    """Stored rubrics, newest first (`rubric_version`)."""
    return [
        {
            "name": r.name, "version": r.version, "content_hash": r.content_hash, "created_at": r.created_at,
            "git_commit": r.git_commit
        }
        for r in selectors.rubric_list(limit=limit, offset=offset)
    ]


@router.get("/token", response={200: TokenOut, **ERRORS}, url_name="token", tags=["token"])
def token(request: HttpRequest):
    """The token the request came with: its name, its user and their roles (a CI job's first check)."""
    return {
        "name": request.auth.name, "prefix": request.auth.prefix, "user": request.user.username,
        "roles": sorted(user_roles(request.user))
    }
