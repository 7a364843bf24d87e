"""`manage.py evaluate pointwise`: score a system's outputs on a rubric with one judge, print the report,
and exit 0 when the release gate passes, 1 when it is blocked or the run is invalid, 2 when the run failed
(CONTRACT §3)."""

import json
import sys

from calibration.selectors import run_preflight
from judgeapp.judging.atomic import json_text, write_text_atomic
from judgeapp.judging.cli import EXIT_FAILED, JudgeCommand, run_ended_without_verdict
from judgeapp.judging.errors import InputError
from judgeapp.judging.runs import run_execute_inline
from judgeapp.models import Executor, Run, RunKind
from judgeapp.pointwise import services as pointwise_services
from judgeapp.pointwise.services import output_path_check, report_current
from judgeapp.releases.core import DEFAULT_THRESHOLD
from judgeapp.releases.selectors import gate_evaluate

help = (
    "Score every case of a test set on every criterion of a rubric with one judge (seed: LLM-as-Judge, "
    "Pointwise), then decide the release gate. Exit 0 pass, 1 blocked or invalid, 2 anything else (bad input, a "
    "failed run)."
)


def add_arguments(parser):
    parser.add_argument("--testset", required=True, metavar="F", help="test set: JSONL or CSV with id, input and (unless a system generates it) output")
    parser.add_argument("--rubric", required=True, metavar="R", help="rubric: TOML or JSON, criteria with a 1-5 scale and an example per score")
    parser.add_argument(
        "--outputs", metavar="OUT.jsonl",
        help='the replies to judge, JSONL {"id", "output"} for every case, when they do not come with the test set',
    )
    parser.add_argument("--judge", metavar="J", help="judge name from the judges file or the admin (default: the default judge)")
    parser.add_argument("--system", metavar="S", help="the system under test; it generates the outputs when the test set has none")
    parser.add_argument("--generate", action="store_true", help="have the system generate outputs even when the test set has them")
    parser.add_argument("--threshold", type=float, metavar="X", help=f"the mean the gate requires (default {DEFAULT_THRESHOLD:g})")
    baseline = parser.add_mutually_exclusive_group()
    baseline.add_argument("--baseline-mean", type=float, metavar="M", help="the mean not to fall below (default: the system's last released run)")
    baseline.add_argument("--baseline-run", metavar="RUN_ID", help="take the baseline mean from this earlier run")
    parser.add_argument("--report", metavar="OUT.json", help="write the report as JSON here")
    parser.add_argument("--csv", metavar="OUT.csv", help="write every judgment as CSV here")
    parser.add_argument("--markdown", metavar="OUT.md", help="write the Markdown summary here (for a CI comment)")
    parser.add_argument("--format", choices=["markdown", "json"], default="markdown", help="what to print on stdout (default markdown)")
    parser.add_argument("--run-id", metavar="R", help="the run's id (default <utc>_<short-uuid>)")
    parser.add_argument("--title", default="", help="a title shown on the run's page")
    parser.add_argument("--concurrency", type=int, metavar="N", help="judge calls in flight (default: the judge's max_concurrency)")


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
    run = _run_create(options, judge=judge, system=system)
    # After the inputs are checked (bad input is one line), before the first judge call.
    command.warnings_print(run_preflight(judges=[judge], systems=[system]))
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
    command.stderr.write(
        f"GATE: {'PASSED' if gate['passed'] else 'BLOCKED'} · run {run.run_id} {run.status} · "
        f"mean {'—' if mean is None else f'{mean:.3f}'} · threshold {gate['threshold']:g}"
        + ("" if gate["passed"] else f" · {len(reasons)} reason(s): " + "; ".join(reasons))
        + (f" · calibration: {gate['calibration']['status']}" if gate.get("calibration") else "")
    )
    for warning in gate.get("warnings") or []:
        command.stderr.write(warning)
    return 0 if gate["passed"] else 1


def _run_create(options, *, judge, system) -> Run:
    """The run, its inputs stored; the files read for it are not kept while it runs (a 100,000-case test
    set's bytes would stay alive to the end of the command)."""
    return pointwise_services.pointwise_create(
        testset=pointwise_services.InputFile.from_path(options["testset"]),
        rubric=pointwise_services.InputFile.from_path(options["rubric"]),
        judge=judge,
        system=system,
        outputs=pointwise_services.InputFile.from_path(options["outputs"]) if options.get("outputs") else None,
        generate=options["generate"],
        threshold=options.get("threshold"),
        baseline_mean=options.get("baseline_mean"),
        baseline_run=options.get("baseline_run"),
        executor=Executor.INLINE,
        run_id=options.get("run_id"),
        title=options.get("title") or "",
    )


# gate: `manage.py gate RUN_ID`: the release gate of a run, decided now, for CI (CONTRACT §3).
class GateCommand(JudgeCommand):
    help = (
        "Decide the release gate of a pointwise run now and print it with its reasons. Exit 0 pass, 1 blocked, "
        "2 anything else (no such run, a run that failed or has not finished)."
    )

    def add_arguments(self, parser):
        parser.add_argument("run_id", metavar="RUN_ID", help="the run's id, as `evaluate` printed it")
        parser.add_argument("--json", action="store_true", help="print the gate as JSON instead of lines")
        parser.add_argument("--report", metavar="OUT.json", help="also write the run's report, with this gate, here")

    def handle(self, *args, **options):
        report_path = output_path_check(options["report"], "--report") if options.get("report") else None
        run = Run.objects.select_related("system").filter(run_id=options["run_id"]).first()
        if run is None:
            raise InputError(f"no run {options['run_id']!r}")
        if run.kind != RunKind.POINTWISE:
            raise InputError(f"run {run.run_id} is a {run.get_kind_display()} run; the release gate reads pointwise runs")
        if report_path:
            report = report_current(run=run)
            gate = report["gate"]
            write_text_atomic(report_path, json_text(report))
        else:
            gate = gate_evaluate(run=run)
        if options["json"]:
            self.stdout.write(json.dumps({"run_id": run.run_id, **gate}, indent=2))
        else:
            mean, baseline = (run.report or {}).get("mean"), gate["baseline_mean"]
            self.stdout.write(f"GATE: {'PASSED' if gate['passed'] else 'BLOCKED'}")
            self.stdout.write(
                f"run {run.run_id} ({run.status}) · mean {_number(mean)} · threshold {gate['threshold']:g}"
                f" · baseline {_number(baseline)}" + (f" ({gate['baseline_source']})" if gate["baseline_source"] else "")
            )
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
            for note in gate["notes"]:
                self.stdout.write(f"  note: {note}")
            if gate["lead_decision"]:
                d = gate["lead_decision"]
                self.stdout.write(f"  lead: {d['verdict']} by {d['by']} at {d['at']}: {d['reason']}")
        if not run.is_finished:
            self.stderr.write(f"error: run {run.run_id} is {run.status}: its gate is decided once it finishes")
            sys.exit(EXIT_FAILED)
        if run_ended_without_verdict(self, run):
            sys.exit(EXIT_FAILED)
        if not gate["passed"]:
            sys.exit(1)


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"
