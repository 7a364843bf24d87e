"""What a ranker run does: make a ranklist's pending inserts under its lease (a batch rank, a CLI insert
and a worker serving the browser all run this loop, so two inserts at once are made one after the other
and neither is lost), perform a direct compare.

The strategy is the ranklist's: `seed` and `robust` make the pending insertions one at a time, in arrival
order; `tournament` takes every pending insertion in one round. A comparison that fails twice leaves its
candidate unplaced, with the reason, and the queue goes on; a judge that refuses every call (a bad key,
an unknown model) stops it, and so do several candidates in a row whose server was out of reach.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from judgeapp.judging.accounting import counts_of
from judgeapp.judging.judge_errors import JudgeUnavailable
from judgeapp.judging.leases import UNIT, Heartbeat
from judgeapp.judging.runkind import UNIT_REPORT_FIELDS
from judgeapp.judging.workers import worker_identity
from judgeapp.models import (
    ArtifactSet,
    Comparison,
    ComparisonStage,
    Insertion,
    InsertionOutcome,
    InsertionSource,
    InsertionStatus,
    Purpose,
    Ranklist,
    RanklistEntry,
    Run,
    RunStatus,
    Strategy,
)
from judgeapp.ranker import core
from judgeapp.ranker.core import robust, tournament
from judgeapp.ranker.core.evidence import Evidence
from judgeapp.ranker.runkind.comparator import ComparatorFailed, ComparatorSpec, ask_once, compare
from judgeapp.ranker.runkind.files import comparisons_sync, ranklist_file_write, ranklist_files_repair, ranklist_ids
from judgeapp.ranker.runkind.lease import LeaseLost, ranklist_lease_release, ranklist_lease_renew, ranklist_lease_try
from judgeapp.ranker.runkind.summary import ranklist_observations, ranklist_summary

__all__ = ["JudgeOutage", "RanklistBusy", "compare_report", "compare_set_perform", "ranklist_summary", "ranklist_work"]

POLL_SECONDS = 0.2
# How long an insert waits without seeing any progress on the ranklist before giving up.
WAIT_WITHOUT_PROGRESS_SECONDS = 900
OUTAGE_STREAK = 3  # candidates in a row left unplaced because the judge's server was out of reach
VERIFY_EVERY = 10  # robust: a verification pass after every 10th candidate, and when the queue is empty
OUTAGE = "outage"  # what _insertion_make returns for a candidate unplaced because the server was out of reach


class RanklistBusy(Exception):
    """Another process has held the ranklist for a long time without making progress."""


class JudgeOutage(JudgeUnavailable):
    """The judge's server stayed out of reach for several candidates in a row: the queue stops (to be
    resumed) instead of leaving every remaining candidate unplaced."""


# --- Inserting: the queue, one insertion (or one tournament round) per lease -----------------------------


def ranklist_work(
    *,
    ranklist_pk: int,
    until: Callable[[], bool] | None = None,
    on_progress: Callable[[], None] | None = None,
    wait_seconds: float | None = WAIT_WITHOUT_PROGRESS_SECONDS,
) -> None:
    """Make the ranklist's pending insertions, in arrival order, until none is left (or `until()`).

    When another process holds the ranklist, wait: it is making the same insertions in the same order.
    `wait_seconds`: give up (RanklistBusy) after that long without any insertion finishing.
    A judge that refuses every call (JudgeError) propagates and leaves the insertion pending, to be
    resumed; so does an outage (JudgeOutage) after OUTAGE_STREAK unplaced candidates in a row.
    """
    holder = worker_identity()
    repaired = False
    last_pending = None
    last_change = time.monotonic()
    outages = 0
    while True:
        if until is not None and until():
            return
        pending = Insertion.objects.filter(ranklist_id=ranklist_pk, status=InsertionStatus.PENDING).count()
        if not pending:
            return
        if pending != last_pending:
            last_pending, last_change = pending, time.monotonic()
            if on_progress:
                on_progress()
        token = ranklist_lease_try(ranklist_pk=ranklist_pk, holder=holder)
        if token is None:
            if wait_seconds is not None and time.monotonic() - last_change > wait_seconds:
                raise RanklistBusy(
                    f"ranklist {ranklist_pk} has been held by another process for {wait_seconds:.0f}s without progress"
                )
            time.sleep(POLL_SECONDS)
            continue
        try:
            # Renewed while the insertion runs: a judge call may outlast the lease.
            with Heartbeat(UNIT, Ranklist.objects.filter(pk=ranklist_pk), token, name="ranklist"):
                ranklist = Ranklist.objects.select_related("run", "artifact_set", "goal", "judge", "prompt").get(pk=ranklist_pk)
                if not repaired:
                    ranklist_files_repair(ranklist)  # a crash may have fallen between a commit and a file write
                    repaired = True
                queue = (
                    Insertion.objects.filter(ranklist=ranklist, status=InsertionStatus.PENDING)
                    .select_related("artifact", "artifact__artifact_set")
                    .order_by("sequence")
                )
                if ranklist.strategy == Strategy.TOURNAMENT:
                    waiting = list(queue)
                    status = _tournament_round(ranklist, waiting, token) if waiting else None
                else:
                    insertion = queue.first()
                    status = _insertion_make(ranklist, insertion, token) if insertion is not None else None
        except LeaseLost:
            continue  # another holder took over; it makes the same insertion
        finally:
            ranklist_lease_release(ranklist_pk=ranklist_pk, token=token)
        outages = outages + 1 if status == OUTAGE else 0
        if outages >= OUTAGE_STREAK:
            raise JudgeOutage(
                f"judge {ranklist.judge.name!r}: its server was out of reach for {outages} candidates in a row "
                f"(they are unplaced, with the reason); the rest wait: resume when it is back"
            )


def _insertion_make(ranklist: Ranklist, insertion: Insertion, token) -> str:
    """Make one pending insertion (seed, robust). Returns its status, or OUTAGE for a candidate left
    unplaced because the judge's server was out of reach."""
    run = ranklist.run
    if insertion.source == InsertionSource.BATCH and Run.objects.filter(pk=run.pk, status=RunStatus.CANCELLED).exists():
        # The batch was stopped: its remaining candidates stay registered but are not inserted.
        Insertion.objects.filter(
            ranklist=ranklist, source=InsertionSource.BATCH, status=InsertionStatus.PENDING
        ).update(status=InsertionStatus.CANCELLED, finished_at=timezone.now())
        return InsertionStatus.CANCELLED
    entries = list(RanklistEntry.objects.filter(ranklist=ranklist).select_related("artifact").order_by("position"))
    by_id = {e.artifact.artifact_id: e.artifact for e in entries}
    by_id[insertion.artifact.artifact_id] = insertion.artifact
    before = [e.artifact.artifact_id for e in entries]
    spec = _spec(ranklist)
    notes = dict(insertion.notes or {})
    try:
        if ranklist.strategy == Strategy.ROBUST:
            new_ids, result, verification = _robust_insert(ranklist, spec, insertion, token, before, by_id)
            if verification is not None:
                notes["verification"] = verification
        else:
            comparator = _seed_comparator(ranklist, spec, insertion, token, entries, by_id)
            result = core.insert(before, insertion.artifact.artifact_id, comparator, max_size=ranklist.max_size)
            new_ids = result.ranklist
    except ComparatorFailed as exc:
        notes.setdefault("failures", []).append(
            {"reason": exc.reason, "transport": exc.transport, "at": timezone.now().isoformat()}
        )
        failed = {"status": InsertionStatus.FAILED, "error": exc.reason, "list_length": len(before), "notes": notes}
        _round_finish(ranklist, token, [(insertion, failed)])
        if exc.unreachable and not Comparison.objects.filter(ranklist=ranklist).exists():
            # A server this ranklist never reached (a wrong base URL, a server that is down): the queue stops
            # now, as after an outage streak, and a command exits 2 (CONTRACT §3), not 1 for one unplaced file.
            raise JudgeOutage(
                f"judge {ranklist.judge.name!r}: its server cannot be reached ({exc.reason}); resume when it is back"
            )
        return OUTAGE if exc.transport else InsertionStatus.FAILED
    placed = {**_placement(result), "list_length": len(before), "notes": notes}
    _round_finish(ranklist, token, [(insertion, placed)], new_ids=new_ids, by_id=by_id)
    return InsertionStatus.DONE


def _spec(ranklist: Ranklist) -> ComparatorSpec:
    return ComparatorSpec(
        run=ranklist.run, goal=ranklist.goal, prompt=ranklist.prompt, judge=ranklist.judge, both_orders=ranklist.both_orders
    )


def _placement(result: core.InsertResult) -> dict:
    return {
        "status": InsertionStatus.DONE,
        "outcome": InsertionOutcome.INSERTED if result.outcome == core.Outcome.INSERTED else InsertionOutcome.DISCARDED,
        "position": result.position,
        "dropped": result.dropped,
        "error": "",
    }


def _seed_comparator(ranklist, spec, insertion, token, entries, by_id):
    """The seed's comparator: the candidate as Artifact A, the incumbent as B (in both orders when the
    ranklist says so)."""
    index_of = {e.artifact.artifact_id: e.position for e in entries}

    def comparator(candidate_id: str, incumbent_id: str) -> str:
        position = index_of[incumbent_id]
        stage = "top" if position == 0 else "bottom" if position == len(entries) - 1 else "middle"
        comparison = compare(
            spec,
            a=by_id[candidate_id],
            b=by_id[incumbent_id],
            scope=ranklist.artifact_set.name,
            stage=stage,
            index=position,
            ranklist=ranklist,
            insertion=insertion,
        )
        ranklist_lease_renew(ranklist_pk=ranklist.pk, token=token)
        return comparison.winner

    return comparator


def _asker(ranklist, spec, insertion, token, by_id, positions: dict[str, int] | None = None):
    """The strategies' ask(first, second, stage): one judge call, `first` shown as Artifact A, stored."""

    def ask(first: str, second: str, *, stage: str) -> str:
        comparison = ask_once(
            spec,
            first=by_id[first],
            second=by_id[second],
            scope=ranklist.artifact_set.name,
            stage=stage,
            ranklist=ranklist,
            insertion=insertion,
            index=(positions or {}).get(second),
        )
        ranklist_lease_renew(ranklist_pk=ranklist.pk, token=token)
        return comparison.winner

    return ask


def _robust_insert(ranklist, spec, insertion, token, before, by_id):
    """Robust's insert, then (every VERIFY_EVERY candidates and when the queue is empty) its
    verification pass over the whole kept list, and when the queue is empty the settling of the cut."""
    reserve = int(ranklist.strategy_options.get("reserve", robust.DEFAULT_RESERVE))
    positions = {artifact_id: i for i, artifact_id in enumerate(before)}
    evidence = Evidence(_asker(ranklist, spec, insertion, token, by_id, positions), known=ranklist_observations(ranklist))
    candidate = insertion.artifact.artifact_id
    result = robust.robust_insert(before, candidate, evidence, max_size=ranklist.max_size, reserve=reserve)
    new_ids, verification = result.ranklist, None
    others_waiting = Insertion.objects.filter(ranklist=ranklist, status=InsertionStatus.PENDING).exclude(pk=insertion.pk).exists()
    if not others_waiting or (insertion.sequence + 1) % VERIFY_EVERY == 0:
        inserting = evidence.calls
        checked = robust.robust_verify(new_ids, evidence)
        new_ids = checked.ranklist
        verification = {"checked": checked.checked, "repairs": [vars(r) for r in checked.repairs], "skipped": checked.skipped}
        if not others_waiting:
            # The queue is empty: settle the cut (a round robin around it when its pairs are in doubt).
            cut = robust.robust_settle_cut(new_ids, evidence, max_size=ranklist.max_size)
            new_ids = cut.ranklist
            verification |= {"cut_window": cut.window, "skipped": checked.skipped + cut.skipped}
        verification["calls"] = evidence.calls - inserting
        if result.outcome == core.Outcome.INSERTED:
            result.position = new_ids.index(candidate)
    return new_ids, result, verification


def _tournament_round(ranklist: Ranklist, pending: list[Insertion], token) -> str:
    """Every pending insertion at once: the tournament over every candidate registered in the ranklist
    (the comparisons stored are replayed for free), within the round's budget."""
    leader = pending[0]  # the round's comparisons are filed under its first candidate
    placed = [i for i in ranklist.insertions.select_related("artifact").order_by("sequence") if i.status == InsertionStatus.DONE]
    by_id = {i.artifact.artifact_id: i.artifact for i in placed + pending}
    before = ranklist_ids(ranklist)
    options = ranklist.strategy_options or {}
    if any(i.source == InsertionSource.BATCH for i in pending):
        budget = int(options.get("budget") or tournament.default_budget(len(pending), ranklist.max_size))
    else:
        budget = sum(int((i.notes or {}).get("budget") or tournament.default_budget(1, ranklist.max_size)) for i in pending)
    spent = Comparison.objects.filter(ranklist=ranklist, insertion=leader).count()  # a resumed round's calls so far
    evidence = Evidence(
        _asker(ranklist, _spec(ranklist), leader, token, by_id), known=ranklist_observations(ranklist),
        budget=max(budget - spent, 0),
    )
    result = tournament.tournament(
        list(by_id),
        evidence,
        k=ranklist.max_size,
        confidence=float(options.get("confidence", tournament.DEFAULT_CONFIDENCE)),
        seed=0,  # deterministic: a resumed round asks the same questions first
    )
    kept = set(result.ranking)
    updates = []
    for insertion in pending:
        artifact_id = insertion.artifact.artifact_id
        involved = Comparison.objects.filter(
            Q(artifact_a=insertion.artifact) | Q(artifact_b=insertion.artifact), ranklist=ranklist
        ).count()
        fields = {"list_length": len(before), "comparisons": involved, "error": ""}
        if artifact_id in result.unplaced:
            fields |= {"status": InsertionStatus.FAILED, "error": result.unplaced[artifact_id]}
        elif artifact_id in kept:
            fields |= {
                "status": InsertionStatus.DONE, "outcome": InsertionOutcome.INSERTED,
                "position": result.ranking.index(artifact_id),
            }

        else:
            fields |= {"status": InsertionStatus.DONE, "outcome": InsertionOutcome.DISCARDED, "position": None}
        updates.append((insertion, fields))
    updates[0][1]["notes"] = {
        **(leader.notes or {}),
        "tournament": {
            "stopped": result.stopped,
            "confident": result.confident,
            "budget": budget,
            "calls": spent + result.calls,
            "candidates": len(result.order),
            "uncertain": result.uncertain,
            "in_top_probability": {a: result.in_top_probability.get(a) for a in result.order[: ranklist.max_size + 5]},
        },
    }
    updates[0][1]["dropped"] = [a for a in before if a not in kept]
    _round_finish(ranklist, token, updates, new_ids=result.ranking, by_id=by_id, comparisons_counted=True)
    return InsertionStatus.DONE


def _round_finish(ranklist, token, updates, *, new_ids=None, by_id=None, comparisons_counted=False) -> None:
    """Write a round's outcome in one short transaction if this process still holds the lease; then the files."""
    with transaction.atomic():
        locked = Ranklist.objects.select_for_update().get(pk=ranklist.pk)
        if locked.claim_token != token:
            raise LeaseLost(f"lost the lease on ranklist {ranklist.pk} before writing")
        if new_ids is not None:
            RanklistEntry.objects.filter(ranklist=ranklist).delete()
            RanklistEntry.objects.bulk_create(
                RanklistEntry(ranklist=ranklist, artifact=by_id[artifact_id], position=i) for i, artifact_id in enumerate(new_ids)
            )
        for insertion, fields in updates:
            if not comparisons_counted:
                fields["comparisons"] = Comparison.objects.filter(insertion=insertion).count()
            Insertion.objects.filter(pk=insertion.pk).update(finished_at=timezone.now(), **fields)
            counter = "done_units" if fields["status"] == InsertionStatus.DONE else "failed_units"
            counters = {counter: F(counter) + 1}
            if insertion.source != InsertionSource.BATCH:
                counters["total_units"] = F("total_units") + 1  # an insert after the batch: one unit more of its run
            Run.objects.filter(pk=ranklist.run_id).update(**counters, updated_at=timezone.now())
        Ranklist.objects.filter(pk=ranklist.pk).update(version=F("version") + 1)
    ranklist_file_write(ranklist)
    comparisons_sync(ranklist.run, ranklist=ranklist)
    if any(insertion.source != InsertionSource.BATCH for insertion, _ in updates):
        _run_report_refresh(ranklist)


def _run_report_refresh(ranklist) -> None:
    """A finished batch's report after an insert into its ranklist: the ranking, the unplaced and the counts as
    they are now, not as the batch left them."""
    run = Run.objects.get(pk=ranklist.run_id)
    if run.is_finished and (run.report or {}).get("ranklist"):
        Run.objects.filter(pk=run.pk).update(report={**run.report, **ranklist_summary(ranklist)}, updated_at=timezone.now())


# --- Mode 1, a direct compare ----------------------------------------------------------------------


def compare_set_perform(spec: ComparatorSpec, *, artifact_set: ArtifactSet, write_files: bool) -> Comparison:
    first, second = artifact_set.artifacts.order_by("id")
    comparison = compare(spec, a=first, b=second, scope=f"compare/{artifact_set.name}", stage=ComparisonStage.DIRECT)
    if write_files:
        comparisons_sync(spec.run)
    return comparison


def compare_report(run: Run) -> dict:
    comparison = (
        Comparison.objects.filter(run=run, stage=ComparisonStage.DIRECT)
        .select_related("artifact_a", "artifact_b", "goal", "judgment", "judgment_swapped")
        .order_by("id")
        .last()
    )
    if comparison is None:
        return {
            "run_id": run.run_id, "kind": run.kind, "winner": None,
            "counts": counts_of(run.judgments.filter(purpose=Purpose.JUDGE).only(*UNIT_REPORT_FIELDS)),
        }

    return {
        "run_id": run.run_id,
        "kind": run.kind,
        "goal": comparison.goal.text,
        "a": comparison.artifact_a.artifact_id,
        "b": comparison.artifact_b.artifact_id,
        "winner": comparison.winner,
        "rationale": comparison.rationale,
        "both_orders": comparison.judgment_swapped_id is not None,
        "verdicts": comparison.verdicts or None,
        "comparator_calls": 2 if comparison.judgment_swapped_id else 1,
        "counts": counts_of(run.judgments.filter(purpose=Purpose.JUDGE).only(*UNIT_REPORT_FIELDS)),
        "versions": {k: run.versions.get(k) for k in ("prompt", "judge", "goal")},
    }
