"""`manage.py judge-checkup`: how good and how biased a judge is on public human-labelled pairs."""

from __future__ import annotations

import json
import os
import sys

from django.conf import settings

from judgeapp.checkup.core import DEFAULT_SETS, SETS
from judgeapp.judging.accounting import counts_line
from judgeapp.judging.cli import (
    EXIT_FAILED,
    JudgeCommand,
    budget_argument,
    concurrency_check,
    execute,
    pct,
    report_of,
    report_path_check,
    run_ended_without_verdict,
    trials_argument,
    usage_write,
    write_report,
)
from judgeapp.judging.noise import noise_line
from judgeapp.models import Executor, Run, RunStatus

FIGURE_LABELS = {
    "accuracy_consistent": "accuracy over consistent verdicts",
    "accuracy_all": "accuracy over all pairs (a disagreement is a miss)",
    "accuracy_mean_of_orders": "accuracy per order (mean of the two)",
    "position_consistency": "position consistency (both orders agree)",
    "kappa": "Cohen's kappa with the human label",
}


class CheckupCommand(JudgeCommand):
    help = (
        "Check up a judge on public pairs with human verdicts (LLMBar Natural, MT-Bench human judgments, "
        "PandaLM): every pair judged in both orders with the Pairwise prompt; prints accuracy, position "
        "consistency and bias, Cohen's kappa, each with a 95% interval, beside published figures "
        "(exit 0 done, 1 invalid, 2 anything else: bad input, a failed run)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--judge", metavar="J",
                            help="the judge to check up, a name from the judges file (default: the default judge)")
        parser.add_argument(
            "--set", dest="sets", default=",".join(DEFAULT_SETS), metavar="S1,S2",
            help=f"the public sets, comma-separated (default all: {', '.join(SETS)}), and/or a team's own set: a JSONL "
                 "file of labelled pairs (input, output_1, output_2, label 1|2|tie, tags optional)",
        )
        parser.add_argument("--sample", type=int, metavar="N", help="judge N pairs drawn from each set (a smaller set whole)")
        parser.add_argument("--seed", type=int, metavar="K", help="seed of the --sample draw (default 0); same seed, same pairs")
        parser.add_argument("--report", metavar="OUT.json", help="write the JSON report here")
        parser.add_argument("--run-id", metavar="R", help="id of the run (default <utc>_<short-uuid>)")
        parser.add_argument(
            "--concurrency", type=int, default=settings.JUDGE_MAX_CONCURRENCY, metavar="N",
            help=f"judge calls in flight at once (default {settings.JUDGE_MAX_CONCURRENCY}); "
                 "the judge's max_concurrency still applies",
        )
        parser.add_argument("--json", action="store_true", help="print the whole JSON report instead of the summary")
        trials_argument(parser)
        budget_argument(parser)

    def handle(self, *args, **options):
        from judgeapp.checkup.services import checkup_run_create

        concurrency = concurrency_check(options["concurrency"])
        report_path = report_path_check(options.get("report"))
        names, own = sets_split(options["sets"])
        judge = self.judge_get(name=options["judge"])
        run = checkup_run_create(
            judge=judge,
            sets=names,
            own=own,
            sample=options.get("sample"),
            seed=options.get("seed"),
            trials=options.get("trials"),
            run_id=options.get("run_id"),
            executor=Executor.INLINE,
            budget=options.get("budget"),
        )
        run = execute(self, run, concurrency=concurrency)
        write_report(run, report_path)
        if options.get("json"):
            self.stdout.write(json.dumps(report_of(run), indent=2, ensure_ascii=False))
        elif run.report is not None:
            self.stdout.write(checkup_summary(run))
        if run_ended_without_verdict(self, run):
            sys.exit(EXIT_FAILED)
        usage_write(self, run.report)
        # A failed check-up (a figure below the lead's floor) exits 1 as an invalid one does (CONTRACT §3).
        if run.status != RunStatus.DONE or not (run.report.get("verdict") or {}).get("passed"):
            sys.exit(1)


def sets_split(value: str) -> tuple[list[str], list]:
    """`--set`: the shipped sets named and the team's own set files given (a path: it ends in .jsonl or
    holds a path separator), each file read (bounded by INPUT_MAX_BYTES) before anything is stored."""
    from judgeapp.judging.content import InputFile

    names, own = [], []
    for item in (part.strip() for part in value.split(",")):
        if item.lower().endswith(".jsonl") or "/" in item or os.sep in item:
            own.append(InputFile.from_path(item))
        elif item:
            names.append(item)
    return names, own


def _figure(figure: dict, *, share: bool = True) -> str:
    value, interval = figure.get("value"), figure.get("ci95")
    if value is None:
        return "n/a"
    show = pct if share else (lambda v: f"{v:.2f}")
    text = show(value)
    if interval:
        text += f" [{show(interval[0])}–{show(interval[1])}]"
    if share and figure.get("n") is not None and "k" in figure:
        text += f" ({figure['k']} of {figure['n']})"
    return text


def _reference(ref: dict) -> str:
    value = ref["value"]
    shown = (
        f"{value[0]:.2f}–{value[1]:.2f}" if isinstance(value, list)
        else (f"{value:.2f}".replace("-0.00", "0.00") if ref["figure"] == "kappa" else pct(value))
    )
    return f"{ref['label']}: {ref['who']} {shown} ({ref['how']}; {ref['source']})"


def favours_text(position: dict) -> str:
    """Which position the judge followed when its orders disagreed, and whether that could be chance."""
    favours = position["favours"]
    if favours is None:
        return "it never picked the same position twice"
    if favours == "neither":
        return "neither position more often"
    share = position["first_share"]
    text = f"favours Reply {1 if favours == 'first' else 2} (Reply 1 in {_figure(share)})"
    low, high = share["ci95"]
    if low <= 0.5 <= high:
        text += ", which chance alone could give"
    return text


def slice_lines(slices: list[dict]) -> list[str]:
    """The set's figures per tag, worst first (the lowest accuracy over all pairs)."""
    if not slices:
        return []
    lines = ["    per tag, worst first:"]
    for entry in slices:
        figures = entry["figures"]
        lines.append(
            f"      {entry['tag']} ({entry['n']} pairs): accuracy over all {_figure(figures['accuracy_all'])}; "
            f"position consistency {_figure(figures['position_consistency'])}; kappa {_figure(figures['kappa'], share=False)}"
        )
    return lines


def checkup_summary(run: Run) -> str:
    report = run.report
    if report is None:
        return f"run {run.run_id}: {run.status}: {run.error}"
    judge = report["judge"]
    lines = [f"Check-up {run.run_id} of judge {judge['name']} ({judge['model']}, version {judge['version']}): {run.status}"]
    if judge.get("scripted_demo"):
        lines.append("  NOTE: judged by the scripted demo server, not a language model")
    if report.get("sample"):
        lines.append(f"  a sample of {report['sample']['size']} pairs a set, draw number {report['sample']['seed']}")
    for name in report.get("set_order") or list(report["sets"]):
        entry = report["sets"][name]
        counts = entry["counts"]
        lines.append(
            f"  {name}: {counts['pairs']} of {entry.get('of', counts['pairs'])} pairs, {counts['judged']} judged in both orders"
        )
        if entry.get("not_judged"):
            lines.append(
                f"    {entry['not_judged']} pairs not judged: the check-up stopped at its budget (the figures leave them out)"
            )
        if entry.get("own"):
            lines.append(f"    the team's own set {entry['file']}, sha256 {entry['sha256']} (no published figures)")
        for key, label in FIGURE_LABELS.items():
            lines.append(f"    {label}: {_figure(entry['figures'][key], share=key != 'kappa')}")
            for ref in entry["references"]:
                if ref["figure"] == key:
                    lines.append(f"      {_reference(ref)}")
        position = entry["position"]
        if position["inconsistent"]:
            lines.append(
                f"    when the orders disagreed ({position['inconsistent']}): Reply 1 both times {position['followed_first']}, "
                f"Reply 2 both times {position['followed_second']}, a tie in one order {position['mixed']}: "
                f"{favours_text(position)}"
            )
        lines.append(f"    parse failures {counts['parse_failures']}, truncated replies {counts['truncated']}")
        lines += slice_lines(entry.get("slices") or [])
    lines.append(
        f"  intervals: shares {report['intervals']['shares']}; kappa {report['intervals']['kappa and per-order accuracy']}"
    )

    lines.append(f"  calls: {report['calls']['summary']}")
    if report.get("counts"):
        lines.append(f"  {counts_line(report['counts'])}")
    for warning in report.get("warnings", []):
        lines.append(f"  warning: {warning}")
    for reason in report.get("invalid_reasons", []):
        lines.append(f"  invalid: {reason}")
    verdict = report.get("verdict")
    if verdict:
        lines += [f"  note: {note}" for note in verdict["notes"]]
        lines.append(f"verdict: {verdict['text']}")
    if report.get("noise"):
        lines.append(f"noise: {noise_line(report['noise'])}")
    return "\n".join(lines)
