"""Reads for the pairwise pages: one case of a run with both replies and both orders' verdicts."""

from judgeapp.judging.selectors import case_for_run, neighbours_for_case
from judgeapp.models import Judgment, Output, Purpose, Run


def pairwise_case_get(*, run: Run, case_id: str) -> dict:
    """One input of a pairwise run: both versions' replies, both orders' judgments, the combined verdict."""
    case = case_for_run(run, case_id)
    outputs = {o.slot: o for o in Output.objects.filter(run=run, case=case, slot__in=("A", "B")).select_related("system")}
    units = {
        u.order: u
        for u in Judgment.objects.filter(run=run, case=case, purpose=Purpose.JUDGE).select_related("judge")
    }
    entry = next((c for c in (run.report or {}).get("cases", []) if c["case_id"] == case_id), None)
    previous, following = neighbours_for_case(run.report, case_id)
    return {
        "case": case,
        "reply_a": outputs.get("A"),
        "reply_b": outputs.get("B"),
        "ab": units.get("ab"),
        "ba": units.get("ba"),
        "entry": entry,
        "previous": previous,
        "next": following,
    }
