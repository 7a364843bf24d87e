"""The ranker's services (seed ranker.md): candidates, ranklists, inserts, direct compares, files."""

from judgeapp.ranker.runkind.comparator import ComparatorFailed
from judgeapp.ranker.runkind.lease import LeaseLost
from judgeapp.ranker.runkind.summary import judge_calls
from judgeapp.ranker.runkind.work import JudgeOutage, RanklistBusy, compare_report, ranklist_summary, ranklist_work
from judgeapp.ranker.services.compare import compare_into_run, compare_run_create
from judgeapp.ranker.services.inputs import Candidate, candidate_from_bytes, candidate_read, candidates_in_dir, path_check_within
from judgeapp.ranker.services.ranklists import (
    goal_check,
    insertion_check,
    insertion_create,
    judge_check,
    rank_check,
    rank_run_create,
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
    "compare_into_run",
    "compare_report",
    "compare_run_create",
    "goal_check",
    "insertion_check",
    "insertion_create",
    "judge_calls",
    "judge_check",
    "path_check_within",
    "rank_check",
    "rank_run_create",
    "ranklist_from_path",
    "ranklist_summary",
    "ranklist_work",
    "strategy_check",
    "unplaced_requeue",
]
