"""Pointwise evaluations: start one from files (CLI, evals/) or uploads (browser), what its report says
beside the scores, and its exports (JSON, CSV of the judgments, a Markdown summary)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path

from django.db import transaction

from judgeapp.judging.content import InputFile, case_rows, prompt_register, rubric_save, testset_save
from judgeapp.judging.costs import GENERATED_REPLY_CHARS, Estimate, budget_check, estimate_from_prompts
from judgeapp.judging.csvsafe import csv_chunks
from judgeapp.judging.errors import InputError, refused_when_disk_full
from judgeapp.judging.files import CaseRow, CriterionSpec, RubricSpec, parse_rubric, render_criterion
from judgeapp.judging.judges import family_warnings, judge_not_system_check
from judgeapp.judging.library import prompt_choose
from judgeapp.judging.noise import trials_check
from judgeapp.judging.outputs import no_system_outputs, output_set_replies, outputs_file_check, outputs_origin, run_outputs_store
from judgeapp.judging.prompts import Prompt, load_prompt, user_message
from judgeapp.judging.runs import run_create, run_enqueue
from judgeapp.judging.selectors import output_set_for_system, report_for_unfinished_run
from judgeapp.models import (
    Executor,
    Judge,
    Output,
    OutputSet,
    PromptMode,
    PromptTemplate,
    Purpose,
    Rubric,
    Run,
    RunKind,
    RunStatus,
    System,
    TestSet,
    content_hash,
    short_version,
)
from judgeapp.pointwise.core import report_markdown
from judgeapp.releases.core import DEFAULT_THRESHOLD


@dataclass
class PointwisePlan:
    """A pointwise run's inputs, checked (pointwise_check): what its store step writes and its estimate counts."""

    rubric: RubricSpec
    generate: bool
    outputs: dict[str, str] | None = None  # {case id: reply} from an outputs file
    warnings: list[str] = field(default_factory=list)
    cases: int = 0  # the test set's cases, counted as they were checked
    system: System | None = None  # the system the run is labelled with
    output_set: OutputSet | None = None  # the stored outputs it judges
    trials: int = 1
    budget: Decimal | None = None
    prompt: PromptTemplate | None = None  # a prompt of the library; None: the judge's own
    options: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)


def _rows_of(testset: TestSet | InputFile) -> tuple[Iterator[CaseRow], str]:
    """A test set's cases one at a time, whether stored (a version picked by its hash) or given as a file;
    and its name."""
    return case_rows(testset), str(testset) if isinstance(testset, TestSet) else testset.name


def _spec_of(rubric: Rubric | InputFile) -> RubricSpec:
    if isinstance(rubric, Rubric):
        criteria = [CriterionSpec(c.name, c.description, c.scale, c.examples) for c in rubric.criteria.order_by("position")]
        return RubricSpec(rubric.name, criteria)  # its warnings were given when it was first stored
    return parse_rubric(rubric.data, rubric.name)


def _inputs_check(
    *,
    testset: TestSet | InputFile,
    rubric: Rubric | InputFile,
    system: System | None,
    generate: bool,
    threshold: float | None,
    outputs: InputFile | None = None,
    output_set: OutputSet | None = None,
) -> PointwisePlan:
    """What can be wrong with the test set, the rubric, the replies and the threshold. The cases are walked
    once, one at a time (counted, not kept: a large test set is not a list of its cases here).

    A run labelled with a system judges that system's replies: an outputs file, outputs uploaded for it
    (`output_set`), or replies its endpoint generates; never the test set's own outputs."""
    rows, testset_name = _rows_of(testset)
    total, with_output, missing, case_ids = _cases_walk(rows, keep_ids=outputs is not None or output_set is not None)
    spec = _spec_of(rubric)
    if generate and system is None:
        raise InputError("generating outputs needs a system under test (--system)")
    if outputs is not None and output_set is not None:
        raise InputError("give an outputs file or a stored system version, not both")
    replies, warnings = None, []
    if outputs is not None or output_set is not None:
        if generate:
            raise InputError("give outputs or have the system generate the outputs, not both")
        if output_set is not None:
            replies = output_set_replies(output_set, testset=testset, case_ids=case_ids, system=system)
        else:
            replies = outputs_file_check(outputs, case_ids)
        with_output = total
    generates = system is not None and replies is None
    if generates and not generate and with_output:
        # The test set carries replies, but they are nobody's in particular: a run that says it scores
        # this system must not score them under its name.
        raise InputError(no_system_outputs(system))
    if not generates and with_output < total:
        _own_outputs_check(testset_name, total=total, with_output=with_output, missing=missing)
    if threshold is not None:
        _threshold_check(spec, threshold)
    return PointwisePlan(rubric=spec, generate=generates, outputs=replies, warnings=warnings, cases=total)


def _cases_walk(rows: Iterator[CaseRow], *, keep_ids: bool) -> tuple[int, int, str | None, list[str] | None]:
    """(the cases, those with an output, the first without one, every case id when `keep_ids`), from one walk."""
    total, with_output, missing = 0, 0, None
    case_ids: list[str] | None = [] if keep_ids else None
    for row in rows:
        total += 1
        if row.output is not None:
            with_output += 1
        elif missing is None:
            missing = row.case_id
        if case_ids is not None:
            case_ids.append(row.case_id)
    return total, with_output, missing, case_ids


def _own_outputs_check(testset_name: str, *, total: int, with_output: int, missing: str | None) -> None:
    """A run judging the test set's own outputs needs one on every case."""
    if with_output == 0:
        raise InputError(
            f"{testset_name}: no case has an 'output'; add the outputs, or name a system under "
            f"test (--system) to generate them"
        )
    raise InputError(
        f"{testset_name}: case {missing!r} has no 'output' ({total - with_output} of {total} cases lack one); "
        "give every case an output, or none and a system under test to generate them"
    )


def _threshold_check(spec: RubricSpec, threshold: float) -> None:
    low = min(c.bounds[0] for c in spec.criteria)
    high = max(c.bounds[1] for c in spec.criteria)
    if not math.isfinite(threshold) or not low <= threshold <= high:
        raise InputError(f"threshold {threshold:g} is outside the rubric's scale {low}-{high}")


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


def _outputs_resolve(
    *, testset, judge: Judge, system: System | None, outputs, output_set: OutputSet | None, outputs_version: str | None,
    generate: bool,
) -> tuple[System | None, OutputSet | None]:
    """The system a run is labelled with and the stored outputs it judges (a system's latest upload on this
    test set when neither a file nor a version is named). Reads only."""
    if output_set is not None and system is None:
        system = output_set.system  # the run is labelled with the system whose outputs it judges
    judge_not_system_check(judge=judge, systems=[system])
    if output_set is None and outputs is None and system is not None and not generate:
        output_set = output_set_for_system(system=system, testset=testset, version_label=outputs_version)
        if output_set is None and outputs_version:
            raise InputError(no_system_outputs(system, outputs_version))
    elif outputs_version and output_set is None:
        raise InputError("a version label picks a system's stored outputs: name the system (--system) and give no outputs file")
    return system, output_set


def pointwise_check(
    *,
    testset: TestSet | InputFile, rubric: Rubric | InputFile, judge: Judge, system: System | None = None,
    outputs: InputFile | None = None, output_set: OutputSet | None = None, outputs_version: str | None = None,
    generate: bool = False, threshold: float | None = None, baseline_mean: float | None = None,
    baseline_run: str | None = None, trials: int | None = None, prompt: str | None = None, budget=None,
) -> PointwisePlan:
    """Everything about a run's inputs that can be wrong, found before anything is stored (it reads, never
    writes): InputError, one line, or the plan its store step writes. Its estimate checks the same way."""
    trials = trials_check(trials)
    budget = budget_check(budget=budget, judges=[judge])
    chosen_prompt = prompt_choose(mode=PromptMode.POINTWISE, spec=prompt)
    system, output_set = _outputs_resolve(
        testset=testset, judge=judge, system=system, outputs=outputs, output_set=output_set, outputs_version=outputs_version,
        generate=generate,
    )
    plan = _inputs_check(
        testset=testset, rubric=rubric, system=system, generate=generate, threshold=threshold, outputs=outputs,
        output_set=output_set,
    )
    options, versions = _run_options(
        plan=plan, judge=judge, system=system, outputs=outputs, output_set=output_set, threshold=threshold,
        baseline_mean=baseline_mean, baseline_run=baseline_run, trials=trials,
    )
    return replace(
        plan, system=system, output_set=output_set, trials=trials, budget=budget, prompt=chosen_prompt, options=options,
        versions=versions,
    )


@refused_when_disk_full
def pointwise_run_create(
    *,
    testset: TestSet | InputFile,
    rubric: Rubric | InputFile,
    judge: Judge,
    system: System | None = None,
    outputs: InputFile | None = None,
    output_set: OutputSet | None = None,
    outputs_version: str | None = None,
    generate: bool = False,
    threshold: float | None = None,
    baseline_mean: float | None = None,
    baseline_run: str | None = None,
    trials: int | None = None,
    executor: str = Executor.CELERY,
    run_id: str | None = None,
    title: str = "",
    prompt: str | None = None,
    created_by=None,
    budget=None,
) -> Run:
    """Check every input, then store the test set, rubric and prompt (by content hash and git commit) and a
    queued run, in one transaction. A Celery run is sent to the workers once that transaction commits.

    The test set and rubric are files, or versions stored before. `outputs` (JSONL `{"id", "output"}`) are
    the replies to judge when they do not come with the test set: one file per version of the system, the
    test set's version unchanged. `output_set` (or, with a system, `outputs_version`, its label) names
    outputs uploaded for the system before; a system with neither and no file judges the outputs uploaded
    for it last on this test set, or generates them. `prompt` names a prompt of the library (`summaries`,
    `summaries@v2`); without one the run takes the judge's prompt (the built-in, or the text a lead adopted
    for it in calibration). `budget`: a spend cap in dollars (judging/costs.py): at the cap the run stops,
    invalid, with what was judged.
    """
    plan = pointwise_check(
        testset=testset, rubric=rubric, judge=judge, system=system, outputs=outputs, output_set=output_set,
        outputs_version=outputs_version, generate=generate, threshold=threshold, baseline_mean=baseline_mean,
        baseline_run=baseline_run, trials=trials, prompt=prompt, budget=budget,
    )
    return _pointwise_run_store(
        plan=plan, testset=testset, rubric=rubric, judge=judge, executor=executor, run_id=run_id, title=title,
        created_by=created_by,
    )


@transaction.atomic  # run_create checks the run id; a refusal rolls the stored inputs back
def _pointwise_run_store(
    *, plan: PointwisePlan, testset: TestSet | InputFile, rubric: Rubric | InputFile, judge: Judge, executor: str,
    run_id: str | None, title: str, created_by,
) -> Run:
    """The checked run's inputs stored, and the run queued; a Celery run is sent once the transaction commits."""
    testset_row = testset_save(testset)
    run = run_create(
        kind=RunKind.POINTWISE,
        run_id=run_id,
        executor=executor,
        created_by=created_by,
        title=title,
        judge=judge,
        system=plan.system,
        testset=testset_row,
        rubric=rubric_save(rubric),
        prompt=plan.prompt or judge_prompt(judge=judge),
        options=plan.options,
        versions=plan.versions,
        budget=plan.budget,
    )
    if plan.outputs is not None:
        # Stored before the run is planned: the plan takes these over the test set's own outputs.
        output_system = plan.output_set.system if plan.output_set is not None else None
        run_outputs_store(run=run, testset=testset_row, replies=plan.outputs, system=output_system)
    if executor == Executor.CELERY:
        run_enqueue(run=run)
    return run


def _run_options(
    *, plan: PointwisePlan, judge: Judge, system: System | None, outputs: InputFile | None, output_set: OutputSet | None,
    threshold: float | None, baseline_mean: float | None, baseline_run: str | None, trials: int,
) -> tuple[dict, dict]:
    """The run's options (threshold, baseline, warnings, where its outputs come from) and versions, checked
    before anything is stored."""
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
        "trials": trials,
    }
    versions = {}
    if outputs is not None:
        digest = content_hash(outputs.data)
        options["outputs"] = {"file": outputs.name, "content_hash": digest}
        options["warnings"] = plan.warnings
        versions["outputs"] = short_version(digest)
    if output_set is not None:
        options["outputs"] = outputs_origin(output_set=output_set)
        versions["outputs"] = short_version(output_set.content_hash)
    if family_warnings([judge, system]):
        options["warnings"] = options.get("warnings", []) + family_warnings([judge, system])
    if baseline_run:
        # Compared like for like when this run finishes (its shared cases, judged this run's way), never
        # by the two runs' whole means.
        options["baseline_run"] = baseline_run_get(run_id=baseline_run).run_id
    return options, versions


def outputs_words(*, run: Run) -> str:
    """Where the run's replies come from, in words ("uploaded as support-bot v2.1 on 3 Dec 2026 by lead")."""
    from judgeapp.judging.replies import outputs_said

    return outputs_said(run)[0]


def pointwise_estimate(
    *,
    testset: TestSet | InputFile,
    rubric: Rubric | InputFile,
    judge: Judge,
    system: System | None = None,
    outputs: InputFile | None = None,
    output_set: OutputSet | None = None,
    outputs_version: str | None = None,
    generate: bool = False,
    trials: int | None = None,
    prompt: str | None = None,
) -> Estimate:
    """What the run `pointwise_run_create` would start asks its judge, from its inputs alone: no judge call,
    nothing stored; inputs it would refuse are the same InputError (pointwise_check). One call per case and
    criterion (each asked `trials` times), the prompt the run would take rendered with each; a reply the system
    would generate is taken as GENERATED_REPLY_CHARS long. A baseline judged again adds its own calls, not
    counted here."""
    plan = pointwise_check(
        testset=testset, rubric=rubric, judge=judge, system=system, outputs=outputs, output_set=output_set,
        outputs_version=outputs_version, generate=generate, trials=trials, prompt=prompt,
    )
    chosen = plan.prompt or judge_prompt_adopted(judge=judge)
    template = Prompt(name=chosen.name, text=chosen.text) if chosen is not None else load_prompt("pointwise")
    criteria = [render_criterion(c) for c in plan.rubric.criteria]
    rows, _name = _rows_of(testset)

    def prompts():
        for row in rows:
            if plan.generate:
                reply = "x" * GENERATED_REPLY_CHARS
            elif plan.outputs is not None:
                reply = plan.outputs[row.case_id]
            else:
                reply = row.output
            for criterion in criteria:
                yield user_message(template.render(rubric=criterion, input=row.input, output=reply))

    calls = plan.cases * len(criteria)
    return estimate_from_prompts(judge=judge, mode="pointwise", prompts=prompts(), count=calls, trials=plan.trials)


def judge_prompt_adopted(*, judge: Judge):
    """The prompt a lead adopted for this judge (a PromptTemplate), or None for the seed's. Reads only."""
    from calibration.selectors.candidates import adopted_prompt_for_judge

    return adopted_prompt_for_judge(judge_name=judge.name)


def judge_prompt(*, judge: Judge):
    """The pointwise prompt this judge runs with: the seed's, or the prompt text of the candidate a lead
    adopted for it on the calibration page."""
    return judge_prompt_adopted(judge=judge) or prompt_register(prompt="pointwise")


def report_current(*, run: Run) -> dict:
    """The run's report with its gate and agreement as they are now (a lock or a lead's block may have
    come after the run finished)."""
    from calibration.selectors.agreement import agreement_reads_for_run, one_snapshot
    from judgeapp.releases.selectors import gate_for_run

    report = dict(run.report) if run.report else {**report_for_unfinished_run(run=run), "mean": None}
    report["status"] = run.status
    if run.error:
        report["error"] = run.error
    finished = run.status in (RunStatus.DONE, RunStatus.INVALID)
    # The gate, the agreement, the statuses and the corrected mean from one agreement snapshot, never two.
    gate, reads = one_snapshot(lambda: (gate_for_run(run=run), agreement_reads_for_run(run=run, corrected=finished)))
    report["gate"] = gate
    report["agreement"] = reads["agreement"]
    report["calibration"] = reads["calibration"]
    report["corrected"] = reads["corrected"]
    report["agreement_snapshot"] = reads["snapshot"]
    return report


# --- Exports --------------------------------------------------------------------------------------------

CSV_COLUMNS = [
    "run_id", "case_id", "criterion", "score", "reasoning", "status", "parse_error", "error",
    "attempts", "parse_attempts", "latency_ms", "cached", "judge", "input", "output", "judgment",
]


def _score_cell(value):
    """A score as the CSV shows it: an integer stays one (4, not 4.0)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def judgments_rows(*, run: Run) -> Iterator[tuple]:
    """One row per judge verdict (case x criterion) in CSV_COLUMNS order, with the case's input and the reply
    judged: read from the database a page at a time (a run of 100,000 judgments is never one list)."""
    from django.db.models import OuterRef, Subquery

    reply = Output.objects.filter(run=run, slot="", case_id=OuterRef("case_id")).values("text")[:1]
    units = (
        run.judgments.filter(purpose=Purpose.JUDGE)
        .order_by("case__position", "criterion__position")
        .annotate(reply=Subquery(reply))
        .values_list(
            "uuid", "case__case_id", "case__input", "criterion__name", "parsed", "status", "parse_error",
            "error", "attempts", "parse_attempts", "latency_ms", "cached", "judge__name", "reply",
        )
    )
    for (uuid, case_id, case_input, criterion, parsed, status, parse_error, error, attempts, parse_attempts,
         latency_ms, cached, judge, reply_text) in units.iterator(chunk_size=2000):
        parsed = parsed or {}
        yield (
            run.run_id, case_id, criterion, _score_cell(parsed.get("score")) if status == "done" else None,
            parsed.get("reasoning", ""), status, parse_error, error, attempts, parse_attempts, latency_ms, cached,
            judge, case_input, reply_text or "", str(uuid),
        )


def judgments_csv_chunks(*, run: Run) -> Iterator[str]:
    """Every judgment as CSV, a piece at a time, each text cell neutralised against formula injection
    (judging/csvsafe.py): what the export page streams and `evaluate --csv` writes."""
    return csv_chunks(CSV_COLUMNS, judgments_rows(run=run))


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


