"""`manage.py rank DIR --goal G`: batch rank (seed Mode 2)."""

import sys
from pathlib import Path

from judgeapp.judging.errors import InputError
from judgeapp.ranker.core import DEFAULT_MAX_SIZE, format_calls, format_ranklist
from judgeapp.models import Executor, RunStatus
from judgeapp.management.base import JudgeCommand
from judgeapp.judging.judges import judge_get
from judgeapp.ranker.services import candidates_in_dir, rank_create
from judgeapp.ranker.services.inputs import SET_NAME
from judgeapp.judging.runs import run_execute_inline


class Command(JudgeCommand):
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
        judge = judge_get(name=options["judge"])
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
