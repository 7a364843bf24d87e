"""The ranker's commands (seed ranker.md): `compare` (Mode 1), `rank` (Mode 2), `insert` (Mode 3)."""

import sys
from pathlib import Path

from calibration.selectors.status import preflight_for_run
from judgeapp.judging import shutdown
from judgeapp.judging.accounting import counts_line
from judgeapp.judging.cli import EXIT_FAILED, JudgeCommand, budget_argument, run_failure_write, usage_write
from judgeapp.judging.errors import InputError
from judgeapp.judging.judge_errors import JudgeError
from judgeapp.judging.runs import run_execute_inline, run_id_check
from judgeapp.models import Executor, Insertion, InsertionStatus, Run, RunStatus, Strategy
from judgeapp.ranker.core import (
    DEFAULT_GOAL,
    DEFAULT_MAX_SIZE,
    format_calls,
    format_placement,
    format_ranklist,
    format_verdict,
    seed_worst_case,
)
from judgeapp.ranker.core.tournament import CALLS_PER_CANDIDATE
from judgeapp.ranker.services import (
    ComparatorFailed,
    RanklistBusy,
    candidate_read,
    candidates_in_dir,
    compare_into_run,
    compare_run_create,
    insertion_create,
    judge_calls,
    rank_run_create,
    ranklist_from_path,
    ranklist_summary,
    ranklist_work,
)
from judgeapp.ranker.services.inputs import SET_NAME


# compare: `manage.py compare FILE_A FILE_B`: direct compare (seed Mode 1).
class CompareCommand(JudgeCommand):
    help = "Direct compare: which of two files better accomplishes the goal, with the rationale."

    def add_arguments(self, parser):
        parser.add_argument("file_a", metavar="FILE_A", help="artifact A")
        parser.add_argument("file_b", metavar="FILE_B", help="artifact B")
        parser.add_argument("--goal", default=DEFAULT_GOAL, help=f'what "better" means (default "{DEFAULT_GOAL}")')
        parser.add_argument(
            "--run-id",
            help="record the comparison in this run's comparisons.jsonl (an existing rank or compare run, or a new compare run)",
        )
        parser.add_argument("--judge", help="judge name from the judges file or the admin (default: the default judge)")
        parser.add_argument("--both-orders", action="store_true", help="judge in both orders; a disagreement counts as Equal")

    def handle(self, *args, **options):
        a = candidate_read(options["file_a"])
        b = candidate_read(options["file_b"])
        judge = self.judge_get(name=options["judge"])
        run_id = run_id_check(options["run_id"]) if options["run_id"] else None
        self.warnings_print(preflight_for_run(judges=[judge]))
        existing = Run.objects.filter(run_id=run_id).first() if run_id else None
        try:
            if existing is not None:
                comparison = compare_into_run(
                    run=existing, a=a, b=b, judge=judge, goal=options["goal"], both_orders=options["both_orders"]
                )
                winner, rationale = comparison.winner, comparison.rationale
            else:
                run = compare_run_create(
                    a=a,
                    b=b,
                    judge=judge,
                    goal=options["goal"],
                    both_orders=options["both_orders"],
                    run_id=run_id,
                    executor=Executor.INLINE,
                    # The seed keeps comparisons.jsonl when a run id is in scope: the user named one.
                    write_files=run_id is not None,
                )
                self.current_run = run
                run = run_execute_inline(run=run)
                self.current_run = None
                if run.status != RunStatus.DONE:
                    run_failure_write(self, run)
                    sys.exit(EXIT_FAILED)
                winner, rationale = run.report["winner"], run.report["rationale"]
        except (JudgeError, ComparatorFailed) as exc:
            self.stderr.write(f"error: {exc}")
            sys.exit(EXIT_FAILED)
        self.stdout.write(format_verdict(winner, rationale))


def add_strategy_arguments(parser, *, default: str | None) -> None:
    parser.add_argument(
        "--strategy",
        choices=Strategy.values,
        default=default,
        help=(
            "how candidates are placed: seed (binary insertion: the top, the bottom, then bisection; the default), "
            "robust (a gate asked in both orders, a reserve below the cut, a verification pass), "
            "tournament (Bradley–Terry with active pairs, within --budget); fixed for the ranklist's life"
            + ("" if default else " (default: the ranklist's; another one is refused)")
        ),
    )
    parser.add_argument(
        "--budget",
        type=int,
        help=f"tournament only: the most comparator calls to make (default {CALLS_PER_CANDIDATE} per new candidate, "
             "at least 3 (K + 2))",
    )


def summary_lines(summary: dict, *, calls: int, cached: int, inserts: int, worst_case: float) -> list[str]:
    """The lines after the top 3: the calls really made, how well the order is supported, what is unplaced."""
    calls_line = format_calls(calls, worst_case, inserts=inserts, both_orders=summary["both_orders"])
    if cached:
        calls_line += f"; {cached} more answered from the response cache (no call)"
    lines = [calls_line]
    if summary["strategy"] != Strategy.SEED:
        lines.append(f"Strategy: {summary['strategy']}" + _strategy_detail(summary))
    support = summary["support"]
    if support["pairs"]:
        lines.append(f"Order support: {support['line']}")
    return lines


def _strategy_detail(summary: dict) -> str:
    if summary["strategy"] == Strategy.TOURNAMENT and summary.get("tournament"):
        t = summary["tournament"]
        state = "the top K is confident" if t["confident"] else f"not confident (stopped: {t['stopped']})"
        return f" — {t['calls']} of a budget of {t['budget']} calls; {state}"
    if summary["strategy"] == Strategy.ROBUST:
        return (
            f" — reserve of {len(summary['reserve'])} below the cut; {summary.get('repairs', 0)} pair(s) repaired by verification"
        )
    return ""


def unplaced_lines(summary: dict) -> list[str]:
    return [f"unplaced: {u['id']} — {u['reason']}" for u in summary["unplaced"]]


# rank: `manage.py rank DIR --goal G`: batch rank (seed Mode 2).
class RankCommand(JudgeCommand):
    help = (
        "Batch rank: register every file of DIR (sorted by name, the arrival order) "
        "and insert each into an initially empty ranklist with one pairwise LLM comparator against the goal."
    )

    def add_arguments(self, parser):
        parser.add_argument("dir", metavar="DIR", help="directory of candidate files (each file's basename is its artifact ID)")
        parser.add_argument("--goal", required=True,
                            help="what 'better' means for every comparison, e.g. \"depth of the root-cause analysis\"")
        parser.add_argument("--run-id", help="id of the new run (default <utc>_<short-uuid>); names the run directory")
        parser.add_argument("--set", dest="set_name", help="artifact set name, the ranklist's file name (default: DIR's name)")
        parser.add_argument("--max-size", type=int, default=DEFAULT_MAX_SIZE,
                            help=f"how many artifacts the ranklist keeps (default {DEFAULT_MAX_SIZE})")
        parser.add_argument("--judge", help="judge name from the judges file or the admin (default: the default judge)")
        parser.add_argument(
            "--both-orders",
            action="store_true",
            help="judge each comparison in both orders and count a disagreement as Equal "
                 "(cancels position bias; twice the calls)",
        )
        add_strategy_arguments(parser, default=Strategy.SEED)
        # --budget is the tournament's call budget (CONTRACT §3): the spend cap in dollars is --budget-usd.
        budget_argument(parser, flag="--budget-usd")

    def handle(self, *args, **options):
        directory = Path(options["dir"])
        candidates = candidates_in_dir(directory)
        set_name = options["set_name"] or directory.resolve().name
        if not options["set_name"] and not SET_NAME.match(set_name):
            raise InputError(f"the directory name {set_name!r} cannot name the set; pass --set NAME")
        judge = self.judge_get(name=options["judge"])
        run = rank_run_create(
            candidates=candidates,
            goal=options["goal"],
            judge=judge,
            set_name=set_name,
            max_size=options["max_size"],
            both_orders=options["both_orders"],
            strategy=options["strategy"],
            budget=options["budget"],
            spend_budget=options.get("budget_usd"),
            run_id=options["run_id"],
            executor=Executor.INLINE,
        )
        self.warnings_print(preflight_for_run(judges=[judge]))
        self.current_run = run
        bar = self.progress_bar(total=len(candidates), desc="ranking")
        bar.unit = "candidate"
        run = run_execute_inline(run=run, progress=self.progress_callback(bar))
        bar.close()
        self.current_run = None
        # A run that stopped early has no report: say what the ranklist holds all the same.
        summary = run.report if (run.report or {}).get("ranklist") else ranklist_summary(run.ranklists.get())
        self.stdout.write(format_ranklist(summary["ranklist"], [(t["id"], t["preview"]) for t in summary["top"]]))
        calls = summary["judge_calls"]
        for line in summary_lines(summary, calls=calls["http"], cached=calls["cached"], inserts=summary["candidates"],
                                  worst_case=summary["seed_worst_case"]):
            self.stdout.write(line)
        if summary.get("counts"):
            self.stdout.write(counts_line(summary["counts"]))
        for line in unplaced_lines(summary):
            self.stderr.write(line)
        usage_write(self, run.report)
        if run.status == RunStatus.DONE:
            return
        if run.status == RunStatus.INVALID and (run.report or {}).get("stopped"):
            sys.exit(1)  # stopped at its spend cap: usage_write said so, and what was not placed
        if run.status == RunStatus.INVALID:
            unplaced = summary["unplaced"]
            self.stderr.write(
                f"error: {len(unplaced)} candidate(s) left unplaced (a comparison failed twice); the others are ranked. "
                f"Insert an unplaced file again to retry it"
            )
            sys.exit(1)
        run_failure_write(self, run)  # failed (the judge's server out of reach, say) or cancelled
        sys.exit(EXIT_FAILED)


# insert: `manage.py insert FILE --ranklist PATH`: incremental insert (seed Mode 3).
class InsertCommand(JudgeCommand):
    help = (
        "Incremental insert: place one new candidate in an existing ranklist with "
        "the ranklist's comparator (top, bottom, then bisection), prune to the cap, rewrite the file atomically."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", metavar="FILE", help="the new candidate (its basename is its artifact ID)")
        parser.add_argument("--ranklist", required=True, metavar="PATH",
                            help="the ranklist file, .../ranking_state/<set>.ranklist.json")
        parser.add_argument("--goal", help="the goal; must be the ranklist's own (default: the ranklist's goal)")
        parser.add_argument("--max-size", type=int, help="new cap of the ranklist (default: keep the ranklist's)")
        parser.add_argument("--judge", help="must be the ranklist's judge (default: the ranklist's judge)")
        add_strategy_arguments(parser, default=None)

    def handle(self, *args, **options):
        candidate = candidate_read(options["file"])
        ranklist = ranklist_from_path(options["ranklist"])
        self.judges_load()
        calls_before = judge_calls(ranklist)
        retry = Insertion.objects.filter(
            ranklist=ranklist, artifact__artifact_id=candidate.artifact_id, status=InsertionStatus.FAILED
        ).exists()

        insertion, queued = insertion_create(
            ranklist=ranklist,
            candidate=candidate,
            goal=options["goal"],
            judge_name=options["judge"],
            max_size=options["max_size"],
            strategy=options["strategy"],
            budget=options["budget"],
            requested_by="cli",
            executor=Executor.INLINE,  # this command makes the insert itself, below
        )
        if retry:
            self.stderr.write(f"{candidate.artifact_id} was unplaced; trying it again")
        ranklist.judge.refresh_from_db()
        if ranklist.judge.version != ranklist.judge_version:
            self.stderr.write(
                f"warning: judge {ranklist.judge.name!r} changed since this ranklist was built "
                f"(version {ranklist.judge_version} -> {ranklist.judge.version}); its comparisons may not be alike"
            )
        if not queued:
            self.stderr.write(f"skipped: {candidate.artifact_id} is already registered in this ranklist; nothing was compared")
        else:
            def finished() -> bool:
                return not Insertion.objects.filter(pk=insertion.pk, status=InsertionStatus.PENDING).exists()

            try:
                # A stop request ends the loop after the insert in flight (it may be another's, queued first).
                ranklist_work(ranklist_pk=ranklist.pk, until=lambda: shutdown.requested() is not None or finished())
            except (JudgeError, RanklistBusy) as exc:
                self.stderr.write(f"error: {exc} (the candidate stays registered and queued; run insert again to resume)")
                sys.exit(EXIT_FAILED)
            if shutdown.requested() is not None and not finished():
                self.stderr.write("the candidate stays registered and queued; run insert again to resume")
                shutdown.raise_if_requested()
        insertion.refresh_from_db()
        ranklist.refresh_from_db()
        summary = ranklist_summary(ranklist)
        self.stdout.write(format_ranklist(summary["ranklist"], [(t["id"], t["preview"]) for t in summary["top"]]))
        placement = format_placement(candidate.artifact_id, summary["ranking"])
        if placement and insertion.status == InsertionStatus.DONE:
            self.stdout.write(placement)
        if queued:
            calls = summary["judge_calls"]
            for line in summary_lines(
                summary,
                calls=calls["http"] - calls_before["http"],
                cached=calls["cached"] - calls_before["cached"],
                inserts=1,
                worst_case=seed_worst_case(insertion.list_length or 0),
            ):
                self.stdout.write(line)
        if insertion.status == InsertionStatus.FAILED:
            self.stderr.write(
                f"error: {candidate.artifact_id} left unplaced: {insertion.error} (insert it again to retry it)"
            )
            sys.exit(1)
        if queued and insertion.outcome == "discarded":
            self.stderr.write(f"{candidate.artifact_id} is worse than every artifact of the full list: not kept")
