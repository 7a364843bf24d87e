"""`evaluate pairwise`: versions A and B on the same inputs, each input judged in both orders."""

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
from judgeapp.judging.noise import noise_line
from judgeapp.models import Executor, Run

help = (
    "Decide which of two versions is better: every input judged twice, A's reply first then B's, and the "
    "verdicts combined (exit 0 conclusive, 1 inconclusive or invalid, 2 anything else: bad input, a failed run)."
)


def add_arguments(parser) -> None:
    parser.add_argument("--testset", required=True, metavar="F", help="test set, JSONL or CSV with id and input")
    a = parser.add_mutually_exclusive_group(required=True)
    a.add_argument("--a", metavar="OUT_A.jsonl", help="version A's outputs, JSONL {id, output}")
    a.add_argument("--system-a", metavar="S", help="a configured system that generates version A's outputs")
    b = parser.add_mutually_exclusive_group(required=True)
    b.add_argument("--b", metavar="OUT_B.jsonl", help="version B's outputs, JSONL {id, output}")
    b.add_argument("--system-b", metavar="S", help="a configured system that generates version B's outputs")
    parser.add_argument(
        "--outputs-version-a", metavar="V", help="with --system-a: judge the outputs stored for it under this version label"
    )
    parser.add_argument(
        "--outputs-version-b", metavar="V", help="with --system-b: judge the outputs stored for it under this version label"
    )
    parser.add_argument("--rubric", required=True, metavar="R", help="rubric, TOML or JSON")
    parser.add_argument("--judge", metavar="J", help="judge name (default: the default judge)")
    parser.add_argument("--sample", type=int, metavar="N", help="compare N cases drawn from the test set")
    parser.add_argument("--seed", type=int, metavar="K", help="seed of the --sample draw (default 0); same seed, same cases")
    parser.add_argument("--report", metavar="OUT.json", help="write the JSON report here")
    parser.add_argument("--run-id", metavar="R", help="id of the run (default <utc>_<short-uuid>)")
    parser.add_argument(
        "--concurrency", type=int, default=settings.JUDGE_MAX_CONCURRENCY, metavar="N",
        help=(
            f"judge calls in flight at once (default {settings.JUDGE_MAX_CONCURRENCY}); each "
            f"judge's max_concurrency still applies"
        ),
    )
    parser.add_argument("--json", action="store_true", help="print the whole JSON report instead of the summary")
    trials_argument(parser)
    budget_argument(parser)
    dry_run_argument(parser)
    tag_argument(parser)
    prompt_argument(parser)


def handle(command, options) -> int:
    from judgeapp.judging.content import InputFile
    from judgeapp.pairwise.services import VersionSource, pairwise_run_create

    concurrency = concurrency_check(options["concurrency"])
    report_path = report_path_check(options.get("report"))
    judge = command.judge_get(name=options.get("judge"))
    from judgeapp.judging.errors import InputError
    from judgeapp.judging.selectors import output_set_for_system

    testset = InputFile.from_path(options["testset"])
    versions = {}
    for slot in ("a", "b"):
        label = options.get(f"outputs_version_{slot}")
        if options.get(slot):
            if label:
                raise InputError(f"--outputs-version-{slot} picks a system's stored outputs: give --system-{slot}, not --{slot}")
            versions[slot] = VersionSource(outputs=InputFile.from_path(options[slot]))
            continue
        system = command.system_get(name=options[f"system_{slot}"])
        stored = output_set_for_system(system=system, testset=testset, version_label=label) if label else None
        if label and stored is None:
            raise InputError(f"{system.name} has no outputs labelled {label!r} for this test set (version {slot.upper()})")
        versions[slot] = VersionSource(system=system, output_set=stored)
    systems = [versions[slot].system for slot in ("a", "b")]
    same = options.get("a") and options["a"] == options.get("b")
    pair = (options["a"], options["b"]) if same else (
        systems[0].name if systems[0] else None, systems[1].name if systems[1] else None
    )
    if options.get("dry_run"):
        from judgeapp.pairwise.services import pairwise_estimate

        estimate_write(command, pairwise_estimate(
            testset=testset, rubric=InputFile.from_path(options["rubric"]), judge=judge, version_a=versions["a"],
            version_b=versions["b"], sample=options.get("sample"), seed=options.get("seed"), trials=options.get("trials"),
            prompt=options.get("prompt"),
        ))
        return 0
    run = pairwise_run_create(
        testset=testset,
        rubric=InputFile.from_path(options["rubric"]),
        judge=judge,
        version_a=versions["a"],
        version_b=versions["b"],
        sample=options.get("sample"),
        seed=options.get("seed"),
        trials=options.get("trials"),
        run_id=options.get("run_id"),
        executor=Executor.INLINE,
        prompt=options.get("prompt"),
        budget=options.get("budget"),
    )
    run_tags_put(run, options)
    command.warnings_print(preflight_for_run(judges=[judge], systems=[s for s in systems if s], pair=pair))
    run = execute(command, run, concurrency=concurrency)
    write_report(run, report_path)
    if options.get("json"):
        command.stdout.write(json.dumps(report_of(run), indent=2, ensure_ascii=False))
    elif run.report is not None:
        command.stdout.write(pairwise_summary(run))
    if run_ended_without_verdict(command, run):
        return EXIT_FAILED
    usage_write(command, run.report)
    # A run stopped at its budget judged only part of the cases: no verdict to pass on.
    return 1 if run.report["inconclusive"] or run.report.get("stopped") else 0


def pairwise_summary(run: Run) -> str:
    report = run.report
    if report is None:
        return f"run {run.run_id}: {run.status}: {run.error}"
    sign = report["sign_test"]
    length = report["length_split"]
    lines = [f"Pairwise run {run.run_id} ({run.status})"]
    if run.uses_scripted_judge:
        lines.append("  NOTE: judged by the scripted demo server, not a language model")
    lines += [
        f"  A vs B: {run.title}",
        f"  judged in both orders: {report['judged']} of {report['total']} cases",
        f"  wins A {report['wins_a']}, wins B {report['wins_b']}, ties {report['ties']} "
        f"({report['agreed_ties']} agreed, {len(report['disagreements'])} orders disagreed)",
        f"  win rate A (ties excluded): {pct(report['win_rate_a'])}"
        + (
            f", {sign['confidence']:.0%} interval {pct(sign['ci_low'])}–{pct(sign['ci_high'])}, sign "
            f"test p = {sign['p_value']:.3g}"
            if sign["p_value"] is not None
            else ""
        ),
        f"  tie rate (order bias): {pct(report['tie_rate'])}",
        f"  longer reply won {length['longer_won']} of {length['longer_won'] + length['shorter_won']} decisive cases "
        f"(A's win rate when A longer {pct(length['A_longer']['win_rate_a'])}, when B longer "
        f"{pct(length['B_longer']['win_rate_a'])})",
    ]
    if report["disagreements"]:
        shown = ", ".join(report["disagreements"][:10]) + (" …" if len(report["disagreements"]) > 10 else "")
        lines.append(f"  orders disagreed on: {shown}")
    for warning in report.get("warnings", []):
        lines.append(f"  warning: {warning}")
    for reason in report["inconclusive_reasons"]:
        lines.append(f"  inconclusive: {reason}")
    if report["inconclusive"]:
        lines.append("Result: INCONCLUSIVE, no winner named")
    elif report["winner"]:
        lines.append(
            f"Result: {report['winner']} wins "
            f"({pct(report['win_rate_a'] if report['winner'] == 'A' else report['win_rate_b'])} of decisive cases)"
        )
    else:
        lines.append("Result: no winner (A and B won equally often)")
    if report.get("noise"):
        lines.append(f"Noise: {noise_line(report['noise'])}")
    if report.get("counts"):
        lines.append(counts_line(report["counts"]))
    return "\n".join(lines)
