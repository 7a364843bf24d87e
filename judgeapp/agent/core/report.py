"""The agent judge's report: the share of requirements met, each verdict with its evidence, the
unverified ones listed with why, and every requirement's tool-call transcript (CONTRACT §4, agent)."""

from __future__ import annotations

from .loop import MET, NOT_MET, UNVERIFIED


def summarize(requirements: list[dict]) -> dict:
    """`requirements`: one dict per requirement, in checklist order, with at least id, text, verdict
    (met | not_met | unverified), evidence, reason and tool_calls (the list of calls)."""
    total = len(requirements)
    met = [r for r in requirements if r["verdict"] == MET]
    not_met = [r for r in requirements if r["verdict"] == NOT_MET]
    unverified = [r for r in requirements if r["verdict"] == UNVERIFIED]
    verified = len(met) + len(not_met)
    return {
        "requirements": requirements,
        # Unverified requirements count as not met: a share that skipped them would reward a judge for
        # giving up on the hard ones.
        "met_share": round(len(met) / total, 4) if total else None,
        "met_share_of_verified": round(len(met) / verified, 4) if verified else None,
        "counts": {"total": total, "met": len(met), "not_met": len(not_met), "unverified": len(unverified)},
        "failures": [{"id": r["id"], "text": r["text"], "evidence": r["evidence"]} for r in not_met],
        "unverified": [{"id": r["id"], "text": r["text"], "reason": r.get("reason", "")} for r in unverified],
    }
