"""`evaluate jury`: every output judged by a panel of judges from different model families, pooled."""

from __future__ import annotations

import json

from django.conf import settings

from calibration.selectors.status import preflight_for_run
from judgeapp.judging.accounting import counts_line
from judgeapp.judging.cli import (
    EXIT_FAILED,
    budget_argument,
    concurrency_check,
    dry_run_argument,
    estimate_write,
    execute,
    pct,
    prompt_argument,
    report_of,
    report_path_check,
    run_ended_without_verdict,
    run_tags_put,
    tag_argument,
    trials_argument,
    usage_write,
    write_report,
)
from judgeapp.judging.errors import InputError
from judgeapp.judging.noise import noise_line
from judgeapp.judging.preflight import imported_refusal
from judgeapp.models import Executor, Run, RunStatus

help = (
    "Judge every output with a panel of three or more judges from different model families and pool their "
    "pass/fail votes by majority (exit 0 done, 1 invalid, 2 anything else: bad input, a panel that breaks the "
    "rules, a failed run)."
)


def add_arguments(parser) -> None:
    parser.add_argument("--testset", required=True, metavar="F", help="test set, JSONL or CSV with id, input and output")
    parser.add_argument("--rubric", required=True, metavar="R", help="rubric, TOML or JSON")
    parser.add_argument(
        "--judges", required=True, metavar="J1,J2,J3",
        help="the panel: an odd number (3 or more) of judges, each of a different model family",
    )
    parser.add_argument(
        "--system", metavar="S",
        help="the system under test: no juror may be of its family (without it the report says the rule was not checked); "
        "its stored outputs are judged, or it generates them (--generate); never the test set's own",
    )
    parser.add_argument(
        "--generate", action="store_true", help="have --system answer the test set first, instead of its output column"
    )
    parser.add_argument(
        "--outputs", metavar="OUT.jsonl",
        help='the replies to judge, JSONL {"id", "output"} for every case, when they do not come with the test set',
    )
    parser.add_argument(
        "--outputs-version", metavar="V",
        help="judge the outputs stored for --system under this version label (manage.py outputs add); "
        "default: its newest for the test set",
    )
    parser.add_argument("--report", metavar="OUT.json", help="write the JSON report here")
    parser.add_argument("--run-id", metavar="R", help="id of the run (default <utc>_<short-uuid>)")
    parser.add_argument(
        "--concurrency", type=int, default=None, metavar="N",
        help=f"judge calls in flight at once (default: {settings.JUDGE_MAX_CONCURRENCY}, and at least one per juror)",
    )
    parser.add_argument("--json", action="store_true", help="print the whole JSON report instead of the summary")
    trials_argument(parser)
    budget_argument(parser)
    dry_run_argument(parser)
    tag_argument(parser)
    prompt_argument(parser)


def handle(command, options) -> int:
    from judgeapp.judging.content import InputFile
    from judgeapp.jury.services import jury_panel_get, jury_run_create

    report_path = report_path_check(options.get("report"))
    command.judges_load()
    judges = jury_panel_get(options["judges"])
    concurrency = options.get("concurrency")
    concurrency = concurrency_check(concurrency) if concurrency is not None else max(settings.JUDGE_MAX_CONCURRENCY, len(judges))
    system = command.system_get(name=options["system"]) if options.get("system") else None
    refusal = imported_refusal(judges)
    if refusal:
        raise InputError(refusal)
    if options.get("dry_run"):
        from judgeapp.jury.services import jury_estimate

        estimate_write(command, jury_estimate(
            testset=InputFile.from_path(options["testset"]), rubric=InputFile.from_path(options["rubric"]), judges=judges,
            system=system, generate=options.get("generate", False),
            outputs=InputFile.from_path(options["outputs"]) if options.get("outputs") else None,
            outputs_version=options.get("outputs_version"), trials=options.get("trials"), prompt=options.get("prompt"),
        ))
        return 0
    run = jury_run_create(
        testset=InputFile.from_path(options["testset"]),
        rubric=InputFile.from_path(options["rubric"]),
        judges=judges,
        system=system,
        generate=options.get("generate", False),
        outputs=InputFile.from_path(options["outputs"]) if options.get("outputs") else None,
        outputs_version=options.get("outputs_version"),
        trials=options.get("trials"),
        run_id=options.get("run_id"),
        executor=Executor.INLINE,
        prompt=options.get("prompt"),
        budget=options.get("budget"),
    )
    run_tags_put(run, options)
    command.warnings_print(preflight_for_run(judges=judges))
    run = execute(command, run, concurrency=concurrency)
    write_report(run, report_path)
    if options.get("json"):
        command.stdout.write(json.dumps(report_of(run), indent=2, ensure_ascii=False))
    elif run.report is not None:
        command.stdout.write(jury_summary(run))
    if run_ended_without_verdict(command, run):
        return EXIT_FAILED
    usage_write(command, run.report)
    if run.status != RunStatus.DONE:
        for reason in run.report.get("invalid_reasons", []):
            command.stderr.write(f"invalid: {reason}")
        return 1
    return 0


def jury_summary(run: Run) -> str:
    report = run.report
    if report is None:
        return f"run {run.run_id}: {run.status}: {run.error}"
    lines = [f"Jury run {run.run_id} ({run.status})"]
    if run.uses_scripted_judge:
        lines.append("  NOTE: judged by the scripted demo server, not a language model")
    lines.append("  panel: " + ", ".join(f"{j['name']} ({j['family']})" for j in report["panel"]))
    lines.append(
        f"  pooled: {report['passed']} pass, {report['failed']} fail, {report['unjudged']} unjudged of {report['total']} cases; "
        f"pass rate {pct(report['pass_rate'])}"
    )
    lines.append(
        "  agreement with the pool: "
        + ", ".join(f"{name} {pct(rate)}" for name, rate in report["per_judge_agreement"].items())
    )
    for warning in report.get("warnings", []):
        lines.append(f"  warning: {warning}")
    dissenting = [c for c in report["cases"] if c["dissent"]]
    if dissenting:
        lines.append(f"  dissent on {len(dissenting)} case(s): " + ", ".join(
            f"{c['case_id']} ({', '.join(c['dissent'])})" for c in dissenting[:8]
        ) + (" …" if len(dissenting) > 8 else ""))
    if report.get("outputs"):
        lines.append(f"Outputs: {report['outputs']}")
    lines.append(f"Result: pass rate {pct(report['pass_rate'])} over {report['judged']} pooled cases")
    if report.get("noise"):
        lines.append(f"Noise: {noise_line(report['noise'])}")
    if report.get("counts"):
        lines.append(counts_line(report["counts"]))
    return "\n".join(lines)
