from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, ClassVar

from django.utils.module_loading import import_string

from judgeapp.judging.judge_calls import JudgeOutcome, messages_hash

if TYPE_CHECKING:
    from judgeapp.models import Judgment, Run


@dataclass
class UnitSpec:
    """A unit of work to create: its key is unique within the run."""

    key: str
    purpose: str = "judge"
    case_id: int | None = None
    criterion_id: int | None = None
    judge_id: int | None = None
    system_id: int | None = None
    order: str = ""
    payload: dict = field(default_factory=dict)


@dataclass
class UnitResult:
    """What a unit produced; `fields` are written onto its Judgment row."""

    ok: bool
    fields: dict = field(default_factory=dict)

    @classmethod
    def from_outcome(cls, outcome: JudgeOutcome, **extra) -> UnitResult:
        return cls(
            ok=outcome.ok,
            fields={
                "messages": outcome.messages,
                "prompt_hash": messages_hash(outcome.messages[:1]),
                "raw_reply": outcome.raw_reply,
                "parsed": outcome.parsed,
                "parse_error": outcome.parse_error,
                "attempts": outcome.attempts,
                "parse_attempts": outcome.parse_attempts,
                "prompt_tokens": outcome.prompt_tokens,
                "completion_tokens": outcome.completion_tokens,
                "latency_ms": outcome.latency_ms,
                "cached": outcome.cached,
                "truncated": outcome.truncated and not outcome.ok,
                "trials": outcome.trials,
                **extra,
            },
        )

    @classmethod
    def failure(cls, error: str, **fields) -> UnitResult:
        return cls(ok=False, fields={"error": error, **fields})


@dataclass(frozen=True)
class Verdict:
    """One judge's verdict on one item, in the form a person can also give: what calibration compares.

    value: an integer score (pointwise), "pass"/"fail" (jury), or "A"/"B"/"tie" (pairwise, after both
    orders). judge: the judge's name; a jury's pooled verdict is under the name "jury".
    """

    case_id: str
    criterion: str
    judge: str
    value: int | str


def score_verdict(score: float) -> int:
    """A score as calibration compares it with a person's: with --trials K the verdict used is the trials'
    mean, and people give whole points, so it is rounded half up (3.5 -> 4)."""
    return int(score) if float(score).is_integer() else int(score + 0.5)


class RunFailed(Exception):
    """The whole run cannot go on (a judge's server refuses its structured-output setting, say). The
    message is shown once on the run, not once per unit."""


# What a report reads of a unit: never its prompt (`messages`), raw reply, transcript or payload. A pairwise
# or jury run of 100,000 inputs holds a unit per order or juror for its report, and their prompts alone,
# each with the input and the replies judged, came to gigabytes. `run_id` too: a run's related manager
# (`run.judgments`) reads it on every row it makes, one query per unit when it is left out.
UNIT_REPORT_FIELDS = (
    "id", "run_id", "case_id", "judge_id", "key", "order", "stage", "status", "parsed", "error", "parse_error",
    "truncated", "trials",
)


class RunHandler:
    kind: ClassVar[str]
    # A sequential kind (a batch rank) runs as one task that claims the whole run; the others fan out.
    sequential: ClassVar[bool] = False
    # The run page's body for this kind (templates/judgeapp/<mode>/run.html), included by the web shell.
    page_template: ClassVar[str] = "judgeapp/web/run_generic.html"
    # What the web shell's pages read from this kind, by page: "run" (a run's page, `(*, run) -> dict` merged into
    # its context) and "judges" (the judges page, `(*, judges) -> dict`). Dotted paths to the kind's selectors,
    # imported on first use as RUN_KINDS' modules are: the shell imports no mode, and no template tag reads.
    page_reads: ClassVar[dict[str, str]] = {}
    # A panel of judges leaves out a judge that fails (the seed's Jury), so one judge's server that cannot
    # be reached does not fail the run; a run of one judge fails at once (judging/runs/units.py: unit_judge).
    leaves_out_failed_judges: ClassVar[bool] = False
    # The most judge calls one unit makes (a verdict and its one parse retry): with the judge's longest call
    # it sizes a unit's time limit (runs/lifecycle.py: unit_time_limits). None: no bound the kind can name.
    calls_per_unit: ClassVar[int | None] = 2
    # Heavy modules finalize needs (scipy.stats: half a second): imported in a thread while the units are
    # judged, not on the run's wall clock after its last unit.
    preload_modules: ClassVar[tuple[str, ...]] = ()
    # Its judge units are pairs judged in both orders with the Pairwise prompt (order "ab"/"ba", a winner
    # "1" | "2" | "tie"): the evidence of whether the judge follows the order (the scorecard's position
    # consistency, judgeapp/web/selectors.py).
    position_evidence: ClassVar[bool] = False
    # The outcomes a finished run of this kind can show (judging/outcomes.py), read from its report or its gate
    # by `outcome`; empty: its status alone says it (done: a result; invalid: failed).
    outcomes: ClassVar[tuple[str, ...]] = ()

    def plan(self, run: Run, stage: int) -> Iterable[UnitSpec] | None:
        """The units of `stage`, or None when the run has no more stages and should be finalized. An
        iterator is consumed a batch at a time as the units are created (a large test set's plan need not
        be a list)."""
        raise NotImplementedError

    def execute(self, unit: Judgment) -> UnitResult:
        """Judge one unit. Called outside any transaction; may call judges (slow)."""
        raise NotImplementedError

    def on_unit_done(self, unit: Judgment, result: UnitResult) -> None:
        """Side effects of a finished unit, in the transaction that records it (an Output row, say)."""

    def finalize(self, run: Run) -> tuple[str, dict]:
        """(status, report) once every stage is done: status is done, invalid or failed."""
        raise NotImplementedError

    def outcome(self, run: Run) -> dict:
        """What a finished (done or invalid) run decided, in one word (judging/outcomes.py). By default its
        status says it: a kind with a report to read an outcome from says so (`outcomes`)."""
        if run.status == "invalid":
            reasons = "; ".join((run.report or {}).get("invalid_reasons") or [])[:160]
            return {"key": "failed", "word": "invalid", "tone": "bad", "detail": reasons}
        return {"key": "result", "word": run.get_status_display(), "tone": "neutral", "detail": ""}

    def run_sequential(self, run: Run, progress=None) -> None:
        raise NotImplementedError

    def unit_accounting(self):
        """How a unit of this kind is counted (CONTRACT §6), as a query expression naming its category —
        "parsed", "parse_failures", "truncated" or "no_reply" — so that a judge's units across many runs are
        counted in one query (the scorecard). The default is accounting.judgment_category's; a kind whose finalize
        counts otherwise says so here (the agent)."""
        from django.db.models import Case, CharField, Q, Value, When

        from judgeapp.models import UnitStatus

        parse_failure = Q(status=UnitStatus.FAILED) & ~Q(parse_error="") & Q(error="")
        return Case(
            When(status=UnitStatus.DONE, then=Value("parsed")),
            When(parse_failure & Q(truncated=True), then=Value("truncated")),
            When(parse_failure, then=Value("parse_failures")),
            default=Value("no_reply"),
            output_field=CharField(),
        )

    # What people label for this kind ("score", "pass_fail" or "pairwise"); None: not calibrated by people.
    label_kind: ClassVar[str | None] = None

    def verdicts(self, run: Run) -> list[Verdict]:
        """Every judge verdict of a finished run, one per (case, criterion, judge)."""
        raise NotImplementedError

    def unusable(self, run: Run) -> list[tuple[str, str, str]]:
        """The (case id, criterion name or "", judge name) a judge was asked about and gave no usable verdict
        on (a parse failure, a reply cut at max_tokens, no reply): calibration counts a labelled one as a
        disagreement, so a judge cannot stay out of a lock by failing to answer. A case the system under test
        gave no output for has no judge unit and is not here. The default: the failed judge units; a kind whose
        verdict is built from several units (both orders, a jury's pool) says which of its verdicts failed."""
        from judgeapp.models import Purpose, UnitStatus

        failed = run.judgments.filter(purpose=Purpose.JUDGE, status=UnitStatus.FAILED).order_by("stage", "id")
        return [
            (case_id, criterion or "", judge or "")
            for case_id, criterion, judge in failed.values_list("case__case_id", "criterion__name", "judge__name").iterator(
                chunk_size=2000
            )
        ]


_REGISTRY: dict[str, RunHandler] = {}
# Run kind -> the module whose import registers its handler (declared by the apps when Django starts). A
# module is imported the first time its kind is needed, so a command that never runs a mode never pays for
# that mode's libraries (numpy, the agent's tools, ...).
_MODULES: dict[str, str] = {}


def register(handler_class: type[RunHandler]) -> type[RunHandler]:
    _REGISTRY[handler_class.kind] = handler_class()
    return handler_class


def modules_declare(modules: dict[str, str]) -> None:
    """Say which module registers each run kind's handler; imported on first use (`handler_for`)."""
    _MODULES.update(modules)


def handler_for(kind: str) -> RunHandler:
    if kind not in _REGISTRY and kind in _MODULES:
        import_module(_MODULES[kind])
    try:
        return _REGISTRY[kind]
    except KeyError:
        raise LookupError(f"no handler for run kind {kind!r}") from None


def page_read(kind: str, page: str, **kwargs) -> dict:
    """The context a kind adds to one of the web shell's pages (`RunHandler.page_reads`); {} when it adds none."""
    try:
        path = handler_for(kind).page_reads.get(page)
    except LookupError:
        return {}
    return import_string(path)(**kwargs) if path else {}


def handlers_all() -> list[RunHandler]:
    """Every run kind's handler, each module imported (the web process compiles their page templates at start)."""
    for kind in _MODULES:
        handler_for(kind)
    return list(_REGISTRY.values())
