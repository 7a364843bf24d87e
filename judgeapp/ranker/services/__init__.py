"""The ranker's services (seed ranker.md): candidates, ranklists, inserts, direct compares, files."""

from judgeapp.ranker.runkind.comparator import ComparatorFailed
from judgeapp.ranker.runkind.lease import LeaseLost
from judgeapp.ranker.runkind.summary import judge_calls
from judgeapp.ranker.runkind.work import JudgeOutage, RanklistBusy, compare_report, ranklist_summary, ranklist_work
from judgeapp.ranker.services.compare import compare_create, compare_into_run
from judgeapp.ranker.services.inputs import Candidate, candidate_from_bytes, candidate_read, candidates_in_dir, path_check_within
from judgeapp.ranker.services.ranklists import (
    goal_check,
    insertion_register,
    judge_check,
    rank_create,
    ranklist_from_path,
    strategy_check,
    unplaced_requeue,
)

__all__ = [
    "Candidate",
    "ComparatorFailed",
    "JudgeOutage",
    "LeaseLost",
    "RanklistBusy",
    "candidate_from_bytes",
    "candidate_read",
    "candidates_in_dir",
    "compare_create",
    "compare_into_run",
    "compare_report",
    "goal_check",
    "insertion_register",
    "judge_calls",
    "judge_check",
    "path_check_within",
    "rank_create",
    "ranklist_from_path",
    "ranklist_summary",
    "ranklist_work",
    "strategy_check",
    "unplaced_requeue",
]
