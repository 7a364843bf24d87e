"""`manage.py insert FILE --ranklist PATH`: incremental insert (seed Mode 3)."""

import sys

from judgeapp.ranker.core import format_calls, format_ranklist, seed_worst_case
from judgeapp.judging.client import JudgeError
from judgeapp.management.base import JudgeCommand
from judgeapp.models import Insertion, InsertionStatus
from judgeapp.judging.judges import judges_sync
from judgeapp.ranker.services import (
    RanklistBusy,
    candidate_read,
    insertion_register,
    ranklist_from_path,
    ranklist_summary,
    ranklist_work,
)


class Command(JudgeCommand):
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
        judges_sync()
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
                ranklist_work(ranklist_pk=ranklist.pk, until=finished)
            except (JudgeError, RanklistBusy) as exc:
                self.stderr.write(f"error: {exc} (the candidate stays registered and queued; run insert again to resume)")
                sys.exit(1)
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
