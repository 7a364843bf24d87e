"""Pointwise evaluations: start one from files (CLI, evals/) or uploads (browser), what its report says
beside the scores, and its exports (JSON, CSV of the judgments, a Markdown summary)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from django.conf import settings
from django.db import transaction

from judgeapp.judging.content import InputFile, prompt_register, rubric_store, testset_store
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import CaseRow, RubricSpec, parse_rubric, parse_testset
from judgeapp.judging.runs import run_create, run_enqueue
from judgeapp.models import Executor, Judge, Purpose, Run, RunKind, RunStatus, System
from judgeapp.pointwise.core import report_markdown
from judgeapp.releases.core import DEFAULT_THRESHOLD

EVALS_DIR = Path(settings.BASE_DIR) / "evals"
TESTSET_SUFFIXES = (".jsonl", ".csv")
RUBRIC_SUFFIXES = (".toml", ".json")


def evals_files(suffixes: tuple[str, ...]) -> list[str]:
    """The files under evals/ with these suffixes, as paths relative to evals/ (what the form offers)."""
    if not EVALS_DIR.is_dir():
        return []
    return sorted(
        str(p.relative_to(EVALS_DIR)) for p in EVALS_DIR.rglob("*") if p.is_file() and p.suffix.lower() in suffixes
    )


def evals_file(relative: str, suffixes: tuple[str, ...]) -> InputFile:
    """A file picked from evals/: only one of those `evals_files` lists, never a path outside it."""
    if relative not in evals_files(suffixes):
        raise InputError(f"{relative}: not a file in evals/")
    return InputFile.from_path(EVALS_DIR / relative)


@dataclass
class PointwisePlan:
    rows: list[CaseRow]
    rubric: RubricSpec
    generate: bool


def pointwise_check(
    *, testset: InputFile, rubric: InputFile, system: System | None, generate: bool, threshold: float | None
) -> PointwisePlan:
    """Everything about the inputs that can be wrong, found before anything is stored."""
    rows = parse_testset(testset.data, testset.name)
    spec = parse_rubric(rubric.data, rubric.name)
    if generate and system is None:
        raise InputError("generating outputs needs a system under test (--system)")
    with_output = sum(row.output is not None for row in rows)
    generates = system is not None and (generate or with_output == 0)
    if not generates and with_output < len(rows):
        missing = next(row.case_id for row in rows if row.output is None)
        if with_output == 0:
            raise InputError(
                f"{testset.name}: no case has an 'output'; add the outputs, or name a system under test (--system) to generate them"
            )
        raise InputError(
            f"{testset.name}: case {missing!r} has no 'output' ({len(rows) - with_output} of {len(rows)} cases lack one); "
            "give every case an output, or none and a system under test to generate them"
        )
    if threshold is not None:
        low = min(c.bounds[0] for c in spec.criteria)
        high = max(c.bounds[1] for c in spec.criteria)
        if not math.isfinite(threshold) or not low <= threshold <= high:
            raise InputError(f"threshold {threshold:g} is outside the rubric's scale {low}-{high}")
    return PointwisePlan(rows=rows, rubric=spec, generate=generates)


def baseline_run_get(*, run_id: str) -> Run:
    """The run named by --baseline-run: a finished, valid pointwise run with a mean."""
    run = Run.objects.filter(run_id=run_id).first()
    if run is None:
        raise InputError(f"baseline run {run_id!r}: no such run")
    if run.kind != RunKind.POINTWISE:
        raise InputError(f"baseline run {run_id!r} is a {run.kind} run, not a pointwise one")
    if run.status != RunStatus.DONE or not run.report or run.report.get("mean") is None:
        raise InputError(f"baseline run {run_id!r} is {run.status}; a baseline must be a valid, finished run with a mean")
    return run


def pointwise_create(
    *,
    testset: InputFile,
    rubric: InputFile,
    judge: Judge,
    system: System | None = None,
    generate: bool = False,
    threshold: float | None = None,
    baseline_mean: float | None = None,
    baseline_run: str | None = None,
    executor: str = Executor.CELERY,
    run_id: str | None = None,
    title: str = "",
    created_by=None,
) -> Run:
    """Check every input, then store the test set, rubric and prompt (by content hash and git commit) and a
    queued run, in one transaction. A Celery run is sent to the workers once that transaction commits."""
    plan = pointwise_check(testset=testset, rubric=rubric, system=system, generate=generate, threshold=threshold)
    if baseline_mean is not None and baseline_run:
        raise InputError("give --baseline-mean or --baseline-run, not both")
    if baseline_mean is not None and not math.isfinite(baseline_mean):
        raise InputError("the baseline mean must be a number")
    options = {
        "generate": plan.generate,
        "threshold": DEFAULT_THRESHOLD if threshold is None else threshold,
        "baseline_mean": baseline_mean,
        "baseline_run": None,
        "rubric_warnings": plan.rubric.warnings,
    }
    if baseline_run:
        base = baseline_run_get(run_id=baseline_run)
        options["baseline_run"], options["baseline_mean"] = base.run_id, base.report["mean"]
    with transaction.atomic():  # run_create checks the run id; a refusal rolls the stored inputs back
        testset_row = testset_store(
            data=testset.data, name=testset.name, source_path=testset.source_path, git_commit=testset.git_commit
        )
        rubric_row = rubric_store(data=rubric.data, name=rubric.name, source_path=rubric.source_path, git_commit=rubric.git_commit)
        run = run_create(
            kind=RunKind.POINTWISE,
            run_id=run_id,
            executor=executor,
            created_by=created_by,
            title=title,
            judge=judge,
            system=system,
            testset=testset_row,
            rubric=rubric_row,
            prompt=judge_prompt(judge=judge),
            options=options,
        )
        if executor == Executor.CELERY:
            run_enqueue(run=run)
    return run


def judge_prompt(*, judge: Judge):
    """The pointwise prompt this judge runs with: the seed's, or the prompt text of the candidate a lead
    adopted for it on the calibration page."""
    from calibration.selectors import adopted_prompt

    return adopted_prompt(judge_name=judge.name) or prompt_register(prompt="pointwise")


def report_current(*, run: Run) -> dict:
    """The run's report with its gate and agreement as they are now (a lock or a lead's block may have
    come after the run finished)."""
    from calibration.selectors import agreement_for_run, calibration_for_run, corrected_for_run
    from judgeapp.releases.selectors import gate_evaluate

    report = dict(run.report) if run.report else {"run_id": run.run_id, "kind": run.kind, "mean": None}
    report["status"] = run.status
    if run.error:
        report["error"] = run.error
    report["gate"] = gate_evaluate(run=run)
    report["agreement"] = agreement_for_run(run=run)
    report["calibration"] = calibration_for_run(run=run)
    report["corrected"] = corrected_for_run(run=run) if run.status in (RunStatus.DONE, RunStatus.INVALID) else None
    return report


# --- Exports --------------------------------------------------------------------------------------------

CSV_COLUMNS = [
    "run_id", "case_id", "criterion", "score", "reasoning", "status", "parse_error", "error",
    "attempts", "parse_attempts", "latency_ms", "cached", "judge", "input", "output", "judgment",
]


def judgments_frame(*, run: Run) -> pd.DataFrame:
    """One row per judge verdict (case x criterion), with the case's input and the reply judged."""
    outputs = dict(run.outputs.filter(slot="").values_list("case_id", "text"))
    rows = run.judgments.filter(purpose=Purpose.JUDGE).order_by("case__position", "criterion__position").values(
        "uuid", "case_id", "case__case_id", "case__input", "criterion__name", "parsed", "status", "parse_error",
        "error", "attempts", "parse_attempts", "latency_ms", "cached", "judge__name",
    )
    records = [
        {
            "run_id": run.run_id,
            "case_id": r["case__case_id"],
            "criterion": r["criterion__name"],
            "score": (r["parsed"] or {}).get("score") if r["status"] == "done" else None,
            "reasoning": (r["parsed"] or {}).get("reasoning", ""),
            "status": r["status"],
            "parse_error": r["parse_error"],
            "error": r["error"],
            "attempts": r["attempts"],
            "parse_attempts": r["parse_attempts"],
            "latency_ms": r["latency_ms"],
            "cached": r["cached"],
            "judge": r["judge__name"],
            "input": r["case__input"],
            "output": outputs.get(r["case_id"], ""),
            "judgment": str(r["uuid"]),
        }
        for r in rows
    ]
    frame = pd.DataFrame.from_records(records, columns=CSV_COLUMNS)
    frame["score"] = frame["score"].astype("Int64")  # an integer column that keeps the unscored empty
    return frame


def judgments_csv(*, run: Run) -> str:
    return judgments_frame(run=run).to_csv(index=False)


def report_markdown_of(*, run: Run, report: dict | None = None) -> str:
    return report_markdown(report if report is not None else report_current(run=run))


def output_path_check(path: str | Path, what: str) -> Path:
    """An output file the CLI will write: its folder must exist and it must not be a folder itself."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{what} {path}: is a directory")
    if not path.parent.exists():
        raise InputError(f"{what} {path}: no such directory {path.parent}")
    return path


