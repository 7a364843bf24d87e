"""What the API accepts and answers: its schemas, validated by pydantic through django-ninja."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field

from judgeapp.models import RunKind, RunStatus

# --- Requests ------------------------------------------------------------------------------------------


class _Inputs(Schema):
    """Fields every run-starting request and its estimate share (multipart form fields beside the files)."""

    testset_version: str | None = Field(
        None,
        description="a stored test set by name (its newest version; NAME@v2 its second, as the Datasets page numbers "
        "them), content hash (12+ hex digits) or NAME@HASH, instead of the `testset` file",
    )
    rubric_version: str | None = Field(
        None, description="a stored rubric by name (NAME, NAME@v2), content hash or NAME@HASH, instead of the `rubric` file"
    )
    prompt: str | None = Field(
        None, max_length=80,
        description="the judge prompt: a prompt of the library by name (its latest version) or NAME@vN; "
        "default: the built-in prompt",
    )
    trials: int | None = Field(
        None, ge=1, le=10,
        description=(
            "ask every judgment this many times (1-10, default 1); the report's `noise` says how often the verdict changed"
        )
    )


class _Start(_Inputs):
    """Fields every run-starting request shares, beside its inputs: what the run is called and capped at."""

    title: str = Field("", max_length=300, description="a title shown on the run's page")
    run_id: str | None = Field(None, description="the run's id (default <utc>_<short-uuid>)")
    tags: str = Field(
        "", max_length=1000, description="tags to put on the run, comma-separated (each up to 40 of a-z, 0-9, - and _)"
    )
    budget: str | None = Field(
        None, max_length=30,
        description="a spend cap in dollars: once the run's judge calls cost this much it stops, invalid, its report "
        "`stopped: budget` (every judge needs prices)",
    )


class PointwiseStart(_Start):
    judge: str | None = Field(None, description="judge name (default: the default judge)")
    system: str | None = Field(
        None,
        description="the system under test: its last release is the baseline; its stored outputs are judged, or it "
        "generates them (never the test set's own outputs)",
    )
    generate: bool = Field(False, description="have the system generate the outputs even when the test set has them")
    outputs_version: str | None = Field(
        None, max_length=50,
        description="judge the outputs stored for `system` under this version label (default: its newest for the test set)",
    )
    threshold: float | None = Field(None, description="the mean the gate requires (default 3.5)")
    baseline_mean: float | None = Field(None, description="the mean not to fall below (default: the system's last release)")
    baseline_run: str | None = Field(None, description="take the baseline mean from this earlier run")


class PairwiseInputs(_Inputs):
    """What a pairwise run compares: `POST /runs/pairwise/estimate` (the run's fields without title, id, tags
    and budget)."""

    judge: str | None = Field(None, description="judge name (default: the default judge)")
    system_a: str | None = Field(
        None, description="version A's system, which generates its replies (instead of the `outputs_a` file)"
    )
    system_b: str | None = Field(None, description="version B's system (instead of the `outputs_b` file)")
    sample: int | None = Field(None, description="compare this many cases drawn from the test set")
    seed: int | None = Field(None, description="the draw's seed (default 0)")


class PairwiseStart(_Start, PairwiseInputs):
    """`POST /runs/pairwise`: what the run compares, and its title, id, tags and budget."""


class JuryInputs(_Inputs):
    """What a jury run judges, and with whom: `POST /runs/jury/estimate` (the run's fields without title, id,
    tags and budget)."""

    judges: str = Field(..., description="the panel, J1,J2,J3: an odd number (3 or more) of judges of different families")
    system: str | None = Field(
        None,
        description="the system under test: no juror may be of its family; its stored outputs are judged, or it generates them "
        "(never the test set's own outputs)",
    )
    generate: bool = Field(False, description="have the system answer the test set first")
    outputs_version: str | None = Field(
        None, max_length=50,
        description="judge the outputs stored for `system` under this version label (default: its newest for the test set)",
    )


class JuryStart(_Start, JuryInputs):
    """`POST /runs/jury`: what the run judges, and its title, id, tags and budget."""


class GateDecisionIn(Schema):
    verdict: Literal["approved", "blocked"]
    reason: str = Field(..., max_length=2000, description="kept in the audit log")


class TagIn(Schema):
    name: str = Field(..., max_length=80, description="the tag: up to 40 of a-z, 0-9, - and _ (stored in lower case)")


class ReleaseIn(Schema):
    label: str = Field("", max_length=100, description="the version shipped, e.g. v2.4.0")
    note: str = Field("", max_length=2000)


# --- Answers -------------------------------------------------------------------------------------------


class ErrorOut(Schema):
    error: str = Field(
        ...,
        description="bad_request, unauthorized, forbidden, not_found, method_not_allowed, conflict, payload_too_large, "
        "server_error, insufficient_storage (docs/api.md, Errors)",
    )
    detail: str = Field(..., description="one line that says what to fix")


class ProgressOut(Schema):
    total_units: int
    done_units: int
    failed_units: int
    percent: int


class RunOut(Schema):
    run_id: str
    kind: RunKind
    status: RunStatus
    finished: bool
    title: str
    system: str | None
    judge: str | None
    judges: list[str]
    created_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    progress: ProgressOut
    versions: dict[str, Any]
    error: str
    notice: str = Field("", description='why a run in flight waits: "queued — will start when the broker is back"')
    tags: list[str] = Field(default_factory=list, description="the run's tags, in alphabetical order")
    usage: dict[str, Any] | None = Field(
        None, description="a finished run's judge calls, cached judgments, tokens in and out, cost in dollars (null: unpriced)"
    )
    budget: float | None = Field(None, description="the run's spend cap in dollars, if it has one")
    stopped: str = Field("", description='"budget" when the run stopped at its cap')
    urls: dict[str, str]


class EstimateOut(Schema):
    """What a run would ask its judge, from its inputs alone: no judge call, nothing stored."""

    calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None = Field(description="dollars at the judge's prices; null when the judge has no price")
    how: str


class GateOut(Schema):
    """The gate of `judgeapp/releases/selectors.py: gate_for_run`, with the run it is about; the gate's
    own fields are passed through whole (a field the gate gains appears here too)."""

    model_config = ConfigDict(extra="allow")

    run_id: str
    status: RunStatus
    finished: bool
    mean: float | None
    passed: bool
    threshold: float
    baseline_mean: float | None
    baseline_source: str
    baseline_run: str | None
    reasons: list[str]
    notes: list[str]
    calibration_lock: list[str] = Field(..., description="the calibration lock's reasons (judge locked: …); empty when none")
    flaky: list[str] = Field(
        default_factory=list,
        description="the threshold or the baseline inside the noise band of a run with trials: 'trial means ranged …: flaky'"
    )
    lead_decision: dict[str, Any] | None
    evaluated_at: str


class JudgeOut(Schema):
    name: str
    model: str
    family: str
    version: str
    max_concurrency: int
    max_tokens: int | None = Field(None, description="the most tokens a reply may have; null: the mode's default")
    source: str
    scripted_demo: bool


class OutputsIn(Schema):
    system: str = Field(..., max_length=200, description="the system under test whose replies these are")
    version_label: str = Field(..., max_length=50, description="its version label, e.g. v2.1")
    testset_version: str = Field(
        ..., max_length=300, description="the stored test set they answer: its name (newest version), NAME@v2, or content hash"
    )


class OutputSetOut(Schema):
    system: str
    version: str
    testset: str
    testset_version: str
    outputs: int
    uploaded_at: datetime
    uploaded_by: str
    created: bool


class VersionOut(Schema):
    name: str
    version: str
    content_hash: str
    created_at: datetime
    git_commit: str
    cases: int | None = None


class TokenOut(Schema):
    name: str
    prefix: str
    user: str
    roles: list[str]
