"""`manage.py evaluate pointwise`: score a system's outputs on a rubric with one judge, print the report,
and exit 0 when the release gate passes, 1 when it is blocked or the run is invalid, 2 when the run failed
(CONTRACT §3)."""

import json
import sys

from calibration.selectors.status import preflight_for_run
from judgeapp.judging.atomic import json_text, write_text_atomic
from judgeapp.judging.cli import (
    EXIT_FAILED,
    JudgeCommand,
    budget_argument,
    dry_run_argument,
    estimate_write,
    prompt_argument,
    run_ended_without_verdict,
    run_tags_put,
    tag_argument,
    trials_argument,
    usage_write,
)
from judgeapp.judging.errors import InputError
from judgeapp.judging.runs import run_execute_inline
from judgeapp.models import Executor, Run, RunKind
from judgeapp.pointwise import services as pointwise_services
from judgeapp.pointwise.core import baseline_line, one_line
from judgeapp.pointwise.services import output_path_check, report_current
from judgeapp.releases.core import DEFAULT_THRESHOLD
from judgeapp.releases.selectors import comparison_for_runs, decided_gate_for_run

help = (
    "Score every case of a test set on every criterion of a rubric with one judge (seed: LLM-as-Judge, "
    "Pointwise), then decide the release gate. Exit 0 pass, 1 blocked or invalid, 2 anything else (bad input, a "
    "failed run)."
)


def add_arguments(parser):
    parser.add_argument(
        "--testset", required=True, metavar="F",
        help="test set: JSONL or CSV with id, input and (unless a system generates it) output; or a stored test set's name "
        "(NAME for its newest version, NAME@v2 for another; a file at that path wins)",
    )
    parser.add_argument(
        "--rubric", required=True, metavar="R",
        help="rubric: TOML or JSON, criteria with a 1-5 scale and an example per score; or a stored rubric's name (as --testset)",
    )
    parser.add_argument(
        "--outputs", metavar="OUT.jsonl",
        help='the replies to judge, JSONL {"id", "output"} for every case, when they do not come with the test set',
    )
    parser.add_argument(
        "--outputs-version", metavar="V",
        help=(
            "judge the outputs stored for --system under this version label (manage.py outputs add); "
            "default: its newest for the test set"
        ),
    )
    parser.add_argument("--judge", metavar="J", help="judge name from the judges file or the admin (default: the default judge)")
    parser.add_argument(
        "--system", metavar="S",
        help="the system under test: its stored outputs are judged, or its endpoint generates them; never the test set's own",
    )
    parser.add_argument(
        "--generate", action="store_true", help="have the system generate outputs even when the test set has them"
    )
    parser.add_argument(
        "--threshold", type=float, metavar="X", help=f"the mean the gate requires (default {DEFAULT_THRESHOLD:g})"
    )
    baseline = parser.add_mutually_exclusive_group()
    baseline.add_argument(
        "--baseline-mean", type=float, metavar="M",
        help=(
            "a mean not to fall below, compared with this run's whole mean (default: the system's last "
            "release, compared like for like)"
        ),
    )
    baseline.add_argument(
        "--baseline-run", metavar="RUN_ID",
        help=(
            "compare with this earlier run like for like, on the cases both test sets share (default: the system's last release)"
        ),
    )
    parser.add_argument("--report", metavar="OUT.json", help="write the report as JSON here")
    parser.add_argument("--csv", metavar="OUT.csv", help="write every judgment as CSV here")
    parser.add_argument("--markdown", metavar="OUT.md", help="write the Markdown summary here (for a CI comment)")
    parser.add_argument(
        "--format", choices=["markdown", "json"], default="markdown", help="what to print on stdout (default markdown)"
    )
    parser.add_argument("--run-id", metavar="R", help="the run's id (default <utc>_<short-uuid>)")
    parser.add_argument("--title", default="", help="a title shown on the run's page")
    parser.add_argument(
        "--concurrency", type=int, metavar="N", help="judge calls in flight (default: the judge's max_concurrency)"
    )
    trials_argument(parser)
    tag_argument(parser)
    prompt_argument(parser)
    budget_argument(parser)
    dry_run_argument(parser)


def handle(command, options) -> int:
    outputs = {
        what: pointwise_services.output_path_check(options[what], f"--{what}")
        for what in ("report", "csv", "markdown")
        if options.get(what)
    }
    if options.get("concurrency") is not None and options["concurrency"] < 1:
        from judgeapp.judging.errors import InputError

        raise InputError("--concurrency must be at least 1")
    judge = command.judge_get(name=options.get("judge"))
    system = command.system_get(name=options["system"]) if options.get("system") else None
    if options.get("dry_run"):
        estimate_write(command, pointwise_services.pointwise_estimate(**_run_inputs(options, judge=judge, system=system)))
        return 0
    run = _run_create(options, judge=judge, system=system)
    run_tags_put(run, options)
    # After the inputs are checked (bad input is one line), before the first judge call.
    command.warnings_print(preflight_for_run(judges=[judge], systems=[system]))
    command.current_run = run
    bar = command.progress_bar(total=run.testset.case_count * run.rubric.criteria.count(), desc=f"pointwise {run.run_id}")
    try:
        # No bar (not a terminal): no progress callback either, which would read the run's total every judgment.
        run = run_execute_inline(
            run=run,
            concurrency=options.get("concurrency") or judge.max_concurrency,
            progress=None if bar.disable else command.progress_callback(bar),
        )
    finally:
        bar.close()
    command.current_run = None

    report = pointwise_services.report_current(run=run)
    if "report" in outputs:
        write_text_atomic(outputs["report"], json_text(report))
    if "csv" in outputs:
        write_text_atomic(outputs["csv"], pointwise_services.judgments_csv_chunks(run=run))
    markdown = pointwise_services.report_markdown_of(run=run, report=report)
    if "markdown" in outputs:
        write_text_atomic(outputs["markdown"], markdown)

    if options["format"] == "json":
        command.stdout.write(json_text(report), ending="")
    elif run.report:
        command.stdout.write(markdown, ending="")
    if run_ended_without_verdict(command, run):
        return EXIT_FAILED
    gate = report["gate"]
    mean = report.get("mean")
    reasons = gate["reasons"]
    command.stderr.write(f"Outputs: {pointwise_services.outputs_words(run=run)}")
    command.stderr.write(
        f"GATE: {'PASSED' if gate['passed'] else 'BLOCKED'} · run {run.run_id} {run.status} · "
        f"mean {'—' if mean is None else f'{mean:.3f}'} · threshold {gate['threshold']:g}"
        + ("" if gate["passed"] else f" · {len(reasons)} reason(s): " + "; ".join(reasons))
        + (f" · calibration: {gate['calibration']['status']}" if gate.get("calibration") else "")
    )
    for warning in gate.get("warnings") or []:
        command.stderr.write(warning)
    usage_write(command, report)
    return 0 if gate["passed"] else 1


def _run_inputs(options, *, judge, system) -> dict:
    """What the run judges, as both pointwise_run_create and its --dry-run estimate take it: the test set and
    rubric (a file, or a stored version by name), the replies, the trials and the prompt."""
    from judgeapp.judging.content import input_or_stored
    from judgeapp.models import Rubric, TestSet

    return {
        "testset": input_or_stored(options["testset"], TestSet, "test set"),
        "rubric": input_or_stored(options["rubric"], Rubric, "rubric"),
        "judge": judge,
        "system": system,
        "outputs": pointwise_services.InputFile.from_path(options["outputs"]) if options.get("outputs") else None,
        "outputs_version": options.get("outputs_version"),
        "generate": options["generate"],
        "trials": options.get("trials"),
        "prompt": options.get("prompt"),
    }


def _run_create(options, *, judge, system) -> Run:
    """The run, its inputs stored; the files read for it are not kept while it runs (a 100,000-case test
    set's bytes would stay alive to the end of the command)."""
    return pointwise_services.pointwise_run_create(
        **_run_inputs(options, judge=judge, system=system),
        threshold=options.get("threshold"),
        baseline_mean=options.get("baseline_mean"),
        baseline_run=options.get("baseline_run"),
        executor=Executor.INLINE,
        run_id=options.get("run_id"),
        title=options.get("title") or "",
        budget=options.get("budget"),
    )


# gate: `manage.py gate RUN_ID`: the release gate of a run, for CI (CONTRACT §3).
class GateCommand(JudgeCommand):
    help = (
        "Decide the release gate of a pointwise run now and print it with its reasons; for a released run, the gate "
        "as it was decided when it was released, and the gate now beside it. Exit 0 pass, 1 blocked, 2 anything else "
        "(no such run, a run that failed or has not finished)."
    )

    def add_arguments(self, parser):
        parser.add_argument("run_id", metavar="RUN_ID", help="the run's id, as `evaluate` printed it")
        parser.add_argument("--json", action="store_true", help="print the gate as JSON instead of lines")
        parser.add_argument("--report", metavar="OUT.json", help="also write the run's report, with this gate, here")

    def handle(self, *args, **options):
        report_path = output_path_check(options["report"], "--report") if options.get("report") else None
        run = _pointwise_run(options["run_id"], what="the release gate reads pointwise runs")
        gate = decided_gate_for_run(run=run)
        if report_path:
            write_text_atomic(report_path, json_text({**report_current(run=run), "gate": gate}))
        if options["json"]:
            self.stdout.write(json.dumps({"run_id": run.run_id, **gate}, indent=2))
        else:
            self._print(run, gate)
        if not run.is_finished:
            self.stderr.write(f"error: run {run.run_id} is {run.status}: its gate is decided once it finishes")
            sys.exit(EXIT_FAILED)
        if run_ended_without_verdict(self, run):
            sys.exit(EXIT_FAILED)
        if not gate["passed"]:
            sys.exit(1)

    def _print(self, run: Run, gate: dict) -> None:
        released = gate.get("released")
        mean = (run.report or {}).get("mean")
        when = (
            f" (as decided when {released['label'] or 'it'} was released on {released['at'][:10]} by {released['by']})"
            if released else ""
        )
        self.stdout.write(f"GATE: {'PASSED' if gate['passed'] else 'BLOCKED'}{when}")
        self.stdout.write(f"run {run.run_id} ({run.status}) · mean {_number(mean)} · threshold {gate['threshold']:g}")
        self.stdout.write(f"baseline: {baseline_line(gate.get('baseline'))}")
        for status in gate.get("calibration_statuses") or []:
            # CONTRACT §3: the status in words, and what it rests on.
            self.stdout.write(
                f"calibration: judge {status['judge']} ({status['judge_version'][:12]}): {status['status']}"
                + (" (blocks)" if status["blocks"] else " (warns)" if status["warns"] else "")
                + f" — {status['summary']}"
            )
        for reason in gate["reasons"]:
            self.stdout.write(f"  blocked: {reason}")
        for warning in gate.get("warnings") or []:
            self.stdout.write(f"  {warning}")
        for note in gate.get("notes") or []:
            self.stdout.write(f"  note: {note}")
        if gate.get("lead_decision"):
            d = gate["lead_decision"]
            self.stdout.write(f"  lead: {d['verdict']} by {d['by']} at {d['at']}: {d['reason']}")
        if released:
            for note in gate.get("since") or []:
                self.stdout.write(f"  since {note['at'][:10]}: {note['text']}")
            now = gate["now"]
            self.stdout.write(
                f"now: {'PASSED' if now['passed'] else 'BLOCKED'}" + ("" if now["passed"] else " — " + "; ".join(now["reasons"]))
            )


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


# compare-runs: `manage.py compare-runs RUN BASELINE`: two pointwise runs side by side on their shared cases.
class CompareRunsCommand(JudgeCommand):
    help = (
        "Print two pointwise runs side by side in Markdown, on the cases both test sets share: per case and criterion "
        "both scores, the difference (RUN − BASELINE) and the judge's reasons, regressions first. Exit 0, 2 bad input."
    )

    def add_arguments(self, parser):
        parser.add_argument("run_id", metavar="RUN", help="the run to look at (the candidate)")
        parser.add_argument("baseline_id", metavar="BASELINE", help="the run it is compared with")
        parser.add_argument("--criterion", metavar="C", help="only this criterion of the rubric")
        parser.add_argument("--limit", type=int, default=50, metavar="N", help="rows to print, worst first (default 50; 0: all)")

    def handle(self, *args, **options):
        if options["limit"] < 0:
            raise InputError("--limit must be 0 (all rows) or more")
        what = "only pointwise runs are compared case by case"
        run, baseline = (_pointwise_run(options[key], what=what) for key in ("run_id", "baseline_id"))
        comparison = comparison_for_runs(run=run, other=baseline, criterion=options.get("criterion"))
        if options.get("criterion") and options["criterion"] not in comparison["criteria"]:
            raise InputError(
                f"no criterion {options['criterion']!r} in either run (they have: {', '.join(comparison['criteria']) or 'none'})"
            )
        self.stdout.write(comparison_markdown(comparison, limit=options["limit"] or None), ending="")


def _pointwise_run(run_id: str, *, what: str) -> Run:
    """The pointwise run a command names; `what` says why another kind is refused."""
    run = Run.objects.select_related("system", "testset", "rubric").filter(run_id=run_id).first()
    if run is None:
        raise InputError(f"no run {run_id!r}")
    if run.kind != RunKind.POINTWISE:
        raise InputError(f"run {run.run_id} is a {run.get_kind_display()} run; {what}")
    return run


def comparison_markdown(comparison: dict, *, limit: int | None = None) -> str:
    """The comparison as Markdown (what the comparison page shows, for a CI comment)."""
    run, other, summary = comparison["run"], comparison["other"], comparison["summary"]
    lines = [f"## Run `{run.run_id}` against `{other.run_id}`", ""]
    if comparison["rejudged"]:
        lines += [
            f"`{other.run_id}`'s replies judged again with `{run.run_id}`'s rubric, prompt and judge "
            f"(the comparison its gate made).",
            ""
        ]
    elif comparison["judged_differently"]:
        lines += [
            f"> ⚠ the two runs were judged with a different {', '.join(comparison['judged_differently'])}: "
            "their scores are not on one scale.",
            "",
        ]
    if summary["diff"] is None:
        lines += [f"No case of the {comparison['shared']} shared was scored in both runs.", ""]
    else:
        ci = summary["ci95"]
        interval = f" (95% CI {ci[0]:+.3f} to {ci[1]:+.3f})" if ci else ""
        lines += [
            f"**Difference {summary['diff']:+.3f}**{interval} on {summary['cases']} shared cases "
            f"({summary['pairs']} scores each): "
            f"{summary['candidate_mean']:.3f} against {summary['mean']:.3f}; {summary['n_worse']} worse, "
            f"{summary['n_better']} better, "
            f"{summary['n_unchanged']} unchanged.",
            "",
        ]
    rows = comparison["rows"][:limit] if limit else comparison["rows"]
    if rows:
        from judgeapp.releases.selectors import reasonings_for_judgments

        reasons = reasonings_for_judgments(judgment_ids=[j for row in rows for j in (row["judgment"], row["other_judgment"])])
        lines += [
            f"| case | criterion | {run.run_id} | {other.run_id} | difference | reasoning ({run.run_id}) "
            f"| reasoning ({other.run_id}) |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            lines.append(
                f"| {one_line(row['case_id'])} | {one_line(row['criterion'])} | {_score(row['score'])} | "
                f"{_score(row['other_score'])} | "
                f"{_difference(row['diff'])} | "
                f"{one_line(reasons.get(row['judgment'] or '', ''))} | {one_line(reasons.get(row['other_judgment'] or '', ''))} |"
            )
        if limit and len(comparison["rows"]) > limit:
            lines.append(f"\n{len(comparison['rows']) - limit} more rows (--limit 0 prints them all).")
    return "\n".join(lines) + "\n"


def _difference(value) -> str:
    return "—" if value is None else f"{value:+g}"


def _score(value) -> str:
    return "—" if value is None else f"{value:g}"


