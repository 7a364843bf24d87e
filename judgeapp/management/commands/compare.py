"""`manage.py compare FILE_A FILE_B`: direct compare (seed Mode 1)."""

import sys

from judgeapp.ranker.core import DEFAULT_GOAL, format_verdict
from judgeapp.judging.client import JudgeError
from judgeapp.management.base import JudgeCommand
from judgeapp.models import Executor, Run, RunStatus
from judgeapp.judging.judges import judge_get
from judgeapp.ranker.services import ComparatorFailed, candidate_read, compare_create, compare_into_run
from judgeapp.judging.runs import run_execute_inline, run_id_check


class Command(JudgeCommand):
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
        judge = judge_get(name=options["judge"])
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
