"""The ranker's commands (seed ranker.md): `compare` (Mode 1), `rank` (Mode 2), `insert` (Mode 3)."""

import sys
from pathlib import Path

from judgeapp.judging import shutdown
from judgeapp.judging.cli import JudgeCommand
from judgeapp.judging.client import JudgeError
from judgeapp.judging.errors import InputError
from judgeapp.judging.runs import run_execute_inline, run_id_check
from judgeapp.models import Executor, Insertion, InsertionStatus, Run, RunStatus
from judgeapp.ranker.core import DEFAULT_GOAL, DEFAULT_MAX_SIZE, format_calls, format_ranklist, format_verdict, seed_worst_case
from judgeapp.ranker.services import (
    ComparatorFailed,
    RanklistBusy,
    candidate_read,
    candidates_in_dir,
    compare_create,
    compare_into_run,
    insertion_register,
    rank_create,
    ranklist_from_path,
    ranklist_summary,
    ranklist_work,
)
from judgeapp.ranker.services.inputs import SET_NAME


# compare: `manage.py compare FILE_A FILE_B`: direct compare (seed Mode 1).
class CompareCommand(JudgeCommand):
    help = "Direct compare (seed ranker.md, Mode 1): which of two files better accomplishes the goal, with the rationale."

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
        existing = Run.objects.filter(run_id=run_id).first() if run_id else None
        try:
            if existing is not None:
                comparison = compare_into_run(
                    run=existing, a=a, b=b, judge=judge, goal=options["goal"], both_orders=options["both_orders"]
                )
                winner, rationale = comparison.winner, comparison.rationale
            else:
                run = compare_create(
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
                    self.stderr.write(f"error: {run.error or run.status}")
                    sys.exit(1)
                winner, rationale = run.report["winner"], run.report["rationale"]
        except (JudgeError, ComparatorFailed) as exc:
            self.stderr.write(f"error: {exc}")
            sys.exit(1)
        self.stdout.write(format_verdict(winner, rationale))


# rank: `manage.py rank DIR --goal G`: batch rank (seed Mode 2).
class RankCommand(JudgeCommand):
    help = (
        "Batch rank (seed ranker.md, Mode 2): register every file of DIR (sorted by name, the arrival order) "
        "and insert each into an initially empty ranklist with one pairwise LLM comparator against the goal."
    )

    def add_arguments(self, parser):
        parser.add_argument("dir", metavar="DIR", help="directory of candidate files (each file's basename is its artifact ID)")
        parser.add_argument("--goal", required=True, help="what 'better' means for every comparison, e.g. \"depth of the root-cause analysis\"")
        parser.add_argument("--run-id", help="id of the new run (default <utc>_<short-uuid>); names the run directory")
        parser.add_argument("--set", dest="set_name", help="artifact set name, the ranklist's file name (default: DIR's name)")
        parser.add_argument("--max-size", type=int, default=DEFAULT_MAX_SIZE, help=f"how many artifacts the ranklist keeps (default {DEFAULT_MAX_SIZE})")
        parser.add_argument("--judge", help="judge name from the judges file or the admin (default: the default judge)")
        parser.add_argument(
            "--both-orders",
            action="store_true",
            help="judge each comparison in both orders and count a disagreement as Equal (cancels position bias; twice the calls)",
        )

    def handle(self, *args, **options):
        directory = Path(options["dir"])
        candidates = candidates_in_dir(directory)
        set_name = options["set_name"] or directory.resolve().name
        if not options["set_name"] and not SET_NAME.match(set_name):
            raise InputError(f"the directory name {set_name!r} cannot name the set; pass --set NAME")
        judge = self.judge_get(name=options["judge"])
        run = rank_create(
            candidates=candidates,
            goal=options["goal"],
            judge=judge,
            set_name=set_name,
            max_size=options["max_size"],
            both_orders=options["both_orders"],
            run_id=options["run_id"],
            executor=Executor.INLINE,
        )
        self.current_run = run
        bar = self.progress_bar(total=len(candidates), desc="ranking")
        bar.unit = "candidate"
        run = run_execute_inline(run=run, progress=self.progress_callback(bar))
        bar.close()
        self.current_run = None
        report = run.report or {}
        if report.get("ranklist"):
            self.stdout.write(format_ranklist(report["ranklist"], [(t["id"], t["preview"]) for t in report["top"]]))
            self.stdout.write(
                format_calls(report["comparator_calls"], report["seed_worst_case"], inserts=report["candidates"], both_orders=report["both_orders"])
            )
        if run.status == RunStatus.DONE:
            return
        if run.status == RunStatus.INVALID:
            failed = report.get("failed", [])
            self.stderr.write(f"error: {len(failed)} candidate(s) could not be placed: " + "; ".join(f"{f['id']}: {f['error']}" for f in failed))
        else:
            self.stderr.write(f"error: run {run.run_id} {run.status}: {run.error}")
        sys.exit(1)


# insert: `manage.py insert FILE --ranklist PATH`: incremental insert (seed Mode 3).
class InsertCommand(JudgeCommand):
    help = (
        "Incremental insert (seed ranker.md, Mode 3): place one new candidate in an existing ranklist with "
        "the ranklist's comparator (top, bottom, then bisection), prune to the cap, rewrite the file atomically."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", metavar="FILE", help="the new candidate (its basename is its artifact ID)")
        parser.add_argument("--ranklist", required=True, metavar="PATH", help="the ranklist file, .../ranking_state/<set>.ranklist.json")
        parser.add_argument("--goal", help="the goal; must be the ranklist's own (default: the ranklist's goal)")
        parser.add_argument("--max-size", type=int, help="new cap of the ranklist (default: keep the ranklist's)")
        parser.add_argument("--judge", help="must be the ranklist's judge (default: the ranklist's judge)")

    def handle(self, *args, **options):
        candidate = candidate_read(options["file"])
        ranklist = ranklist_from_path(options["ranklist"])
        self.judges_load()
        insertion, queued = insertion_register(
            ranklist=ranklist,
            candidate=candidate,
            goal=options["goal"],
            judge_name=options["judge"],
            max_size=options["max_size"],
            requested_by="cli",
        )
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
                sys.exit(1)
            if shutdown.requested() is not None and not finished():
                self.stderr.write("the candidate stays registered and queued; run insert again to resume")
                shutdown.raise_if_requested()
        insertion.refresh_from_db()
        summary = ranklist_summary(ranklist)
        self.stdout.write(format_ranklist(summary["ranklist"], [(t["id"], t["preview"]) for t in summary["top"]]))
        if queued:
            self.stdout.write(
                format_calls(
                    insertion.comparisons * (2 if ranklist.both_orders else 1),
                    seed_worst_case(insertion.list_length or 0),
                    inserts=1,
                    both_orders=ranklist.both_orders,
                )
            )
        if insertion.status == InsertionStatus.FAILED:
            self.stderr.write(f"error: {candidate.artifact_id} could not be placed: {insertion.error}")
            sys.exit(1)
        if queued and insertion.outcome == "discarded":
            self.stderr.write(f"{candidate.artifact_id} is worse than every artifact of the full list: not kept")
