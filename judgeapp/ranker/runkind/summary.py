"""What a ranklist's report, sidecar file, pages and command summaries say about it: the ranking, how
well each adjacent pair is supported by the comparisons stored for the ranklist (both orders), the
unplaced candidates and why, and the judge calls really made (HTTP requests; cache hits apart)."""

from __future__ import annotations

from django.db.models import Count, Q, Sum

from judgeapp.judging.accounting import counts_of
from judgeapp.models import Comparison, InsertionOutcome, InsertionStatus, Judgment, Ranklist, RanklistEntry, Strategy
from judgeapp.ranker import core
from judgeapp.ranker.core.evidence import Observation
from judgeapp.ranker.core.support import Vote, adjacent_support, support_summary


def ranklist_votes(ranklist: Ranklist) -> list[Vote]:
    """Every verdict stored for the ranklist, one per judge call and order, from the first shown's side."""
    votes = []
    rows = Comparison.objects.filter(ranklist=ranklist).values_list(
        "artifact_a__artifact_id", "artifact_b__artifact_id", "winner", "verdicts"
    )
    for a, b, winner, verdicts in rows:
        if verdicts:  # the seed's --both-orders: one row, two calls
            votes.append(Vote(a, b, verdicts.get("ab", winner)))
            if "ba" in verdicts:
                votes.append(Vote(b, a, core.swap(verdicts["ba"])))
        else:
            votes.append(Vote(a, b, winner))
    return votes


def ranklist_observations(ranklist: Ranklist) -> list[Observation]:
    """The stored verdicts as the strategies' evidence (replayed, never asked again)."""
    return [Observation(v.first, v.second, v.winner) for v in ranklist_votes(ranklist)]


def judge_calls(ranklist: Ranklist) -> dict:
    """The comparator's calls for this ranklist: HTTP requests really made (retries included, failures
    too) and the verdicts the response cache answered without a request."""
    calls = Judgment.objects.filter(run=ranklist.run, key__startswith=f"{ranklist.artifact_set.name}/").aggregate(
        http=Sum("attempts"), cached=Count("id", filter=Q(cached=True))
    )
    return {"http": calls["http"] or 0, "cached": calls["cached"] or 0}


def ranklist_summary(ranklist: Ranklist) -> dict:
    """What the report of a rank run (and the pages, the sidecar, the CLI) say about a ranklist."""
    entries = list(RanklistEntry.objects.filter(ranklist=ranklist).select_related("artifact").order_by("position"))
    kept = entries[: ranklist.max_size]
    ranking = [e.artifact.artifact_id for e in kept]
    insertions = list(ranklist.insertions.select_related("artifact").order_by("sequence"))
    finished = [i for i in insertions if i.status in (InsertionStatus.DONE, InsertionStatus.FAILED)]
    comparisons = Comparison.objects.filter(ranklist=ranklist).count()
    worst = sum(core.seed_worst_case(i.list_length or 0) for i in finished)
    pairs = adjacent_support(ranking, ranklist_votes(ranklist))
    unplaced = [
        {"id": i.artifact.artifact_id, "reason": i.error, "at": i.finished_at.isoformat() if i.finished_at else None}
        for i in insertions
        if i.status == InsertionStatus.FAILED
    ]
    calls = judge_calls(ranklist)
    units = Judgment.objects.filter(run=ranklist.run, key__startswith=f"{ranklist.artifact_set.name}/").only(
        "status", "parse_error", "error", "truncated"
    )
    summary = {
        "ranklist": str(ranklist.path),
        "artifact_set": ranklist.artifact_set.name,
        "goal": ranklist.goal.text,
        "strategy": ranklist.strategy,
        "strategy_options": ranklist.strategy_options,
        "max_size": ranklist.max_size,
        "both_orders": ranklist.both_orders,
        "ranking": ranking,
        "reserve": [e.artifact.artifact_id for e in entries[ranklist.max_size :]],
        "top": [{"id": e.artifact.artifact_id, "preview": e.artifact.preview} for e in kept[:3]],
        "candidates": len(insertions),
        "inserted": sum(1 for i in insertions if i.outcome == InsertionOutcome.INSERTED),
        "discarded": sum(1 for i in insertions if i.outcome == InsertionOutcome.DISCARDED),
        "pending": sum(1 for i in insertions if i.status == InsertionStatus.PENDING),
        "waiting": [i.artifact.artifact_id for i in insertions if i.status == InsertionStatus.PENDING],
        # Registered and never placed: the batch was cancelled or stopped at its spend cap first.
        "not_placed": [i.artifact.artifact_id for i in insertions if i.status == InsertionStatus.CANCELLED],
        "unplaced": unplaced,
        # Kept from before "unplaced" had a name: the same candidates, {id, error}.
        "failed": [{"id": u["id"], "error": u["reason"]} for u in unplaced],
        "comparisons": comparisons,
        "judge_calls": calls,
        "comparator_calls": calls["http"],
        # Every comparator judgment (CONTRACT §6); a comparison that failed and was asked again counts once.
        "counts": counts_of(units),
        # The seed's bound, 2 + log2 N calls per insert into a list of N.
        "seed_worst_case": round(worst, 1),
        "support": {**support_summary(pairs), "adjacent": [p.as_dict() for p in pairs]},
        "judge": {"name": ranklist.judge.name, "model": ranklist.judge.model, "version": ranklist.judge_version},
        "prompt_version": ranklist.prompt.version,
    }
    if ranklist.strategy == Strategy.TOURNAMENT:
        last = next((i.notes["tournament"] for i in reversed(insertions) if "tournament" in (i.notes or {})), None)
        summary["tournament"] = last
    if ranklist.strategy == Strategy.ROBUST:
        summary["repairs"] = sum(len((i.notes or {}).get("verification", {}).get("repairs", [])) for i in insertions)
    return summary
