"""What a ranker run does: make a ranklist's pending inserts one at a time under its lease (a batch rank,
a CLI insert and a worker serving the browser all run this loop, so two inserts at once are made one after
the other and neither is lost), perform a direct compare, and sum a ranklist up for its report."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from judgeapp.judging.workers import worker_identity
from judgeapp.models import (
    ArtifactSet,
    Comparison,
    ComparisonStage,
    Insertion,
    InsertionOutcome,
    InsertionSource,
    InsertionStatus,
    Ranklist,
    RanklistEntry,
    Run,
    RunStatus,
)
from judgeapp.ranker import core
from judgeapp.ranker.runkind.comparator import ComparatorFailed, ComparatorSpec, compare
from judgeapp.ranker.runkind.files import comparisons_sync, ranklist_file_write, ranklist_files_repair
from judgeapp.ranker.runkind.lease import LeaseLost, ranklist_lease_release, ranklist_lease_renew, ranklist_lease_try

POLL_SECONDS = 0.2
# How long an insert waits without seeing any progress on the ranklist before giving up.
WAIT_WITHOUT_PROGRESS_SECONDS = 900


class RanklistBusy(Exception):
    """Another process has held the ranklist for a long time without making progress."""


# --- Inserting: the queue, one insertion per lease -----------------------------------------------------


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
    Judge outages (JudgeError) propagate and leave the insertion pending, to be resumed.
    """
    holder = worker_identity()
    repaired = False
    last_pending = None
    last_change = time.monotonic()
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
            ranklist = Ranklist.objects.select_related("run", "artifact_set", "goal", "judge", "prompt").get(pk=ranklist_pk)
            if not repaired:
                ranklist_files_repair(ranklist)  # a crash may have fallen between a commit and a file write
                repaired = True
            insertion = (
                Insertion.objects.filter(ranklist=ranklist, status=InsertionStatus.PENDING)
                .select_related("artifact", "artifact__artifact_set")
                .order_by("sequence")
                .first()
            )
            if insertion is not None:
                _insertion_make(ranklist, insertion, token)
        except LeaseLost:
            continue  # another holder took over; it makes the same insertion
        finally:
            ranklist_lease_release(ranklist_pk=ranklist_pk, token=token)


def _insertion_make(ranklist: Ranklist, insertion: Insertion, token) -> None:
    run = ranklist.run
    if insertion.source == InsertionSource.BATCH and Run.objects.filter(pk=run.pk, status=RunStatus.CANCELLED).exists():
        # The batch was stopped: its remaining candidates stay registered but are not inserted.
        Insertion.objects.filter(
            ranklist=ranklist, source=InsertionSource.BATCH, status=InsertionStatus.PENDING
        ).update(status=InsertionStatus.CANCELLED, finished_at=timezone.now())
        return
    entries = list(RanklistEntry.objects.filter(ranklist=ranklist).select_related("artifact").order_by("position"))
    by_id = {e.artifact.artifact_id: e.artifact for e in entries}
    by_id[insertion.artifact.artifact_id] = insertion.artifact
    spec = ComparatorSpec(run=run, goal=ranklist.goal, prompt=ranklist.prompt, judge=ranklist.judge, both_orders=ranklist.both_orders)
    index_of = {e.artifact.artifact_id: e.position for e in entries}

    def comparator(candidate_id: str, incumbent_id: str) -> str:
        stage = "top" if index_of[incumbent_id] == 0 else "bottom" if index_of[incumbent_id] == len(entries) - 1 else "middle"
        comparison = compare(
            spec,
            a=by_id[candidate_id],
            b=by_id[incumbent_id],
            scope=ranklist.artifact_set.name,
            stage=stage,
            index=index_of[incumbent_id],
            ranklist=ranklist,
            insertion=insertion,
        )
        ranklist_lease_renew(ranklist_pk=ranklist.pk, token=token)
        return comparison.winner

    before = [e.artifact.artifact_id for e in entries]
    try:
        result = core.insert(before, insertion.artifact.artifact_id, comparator, max_size=ranklist.max_size)
    except ComparatorFailed as exc:
        _insertion_finish(ranklist, insertion, token, status=InsertionStatus.FAILED, error=str(exc), list_length=len(before))
        return
    _insertion_finish(
        ranklist,
        insertion,
        token,
        status=InsertionStatus.DONE,
        result=result,
        list_length=len(before),
        new_ids=result.ranklist,
        by_id=by_id,
    )


def _insertion_finish(ranklist, insertion, token, *, status, list_length, result=None, error="", new_ids=None, by_id=None) -> None:
    with transaction.atomic():
        locked = Ranklist.objects.select_for_update().get(pk=ranklist.pk)
        if locked.claim_token != token:
            raise LeaseLost(f"lost the lease on ranklist {ranklist.pk} before writing")
        if new_ids is not None:
            RanklistEntry.objects.filter(ranklist=ranklist).delete()
            RanklistEntry.objects.bulk_create(
                RanklistEntry(ranklist=ranklist, artifact=by_id[artifact_id], position=i) for i, artifact_id in enumerate(new_ids)
            )
        Insertion.objects.filter(pk=insertion.pk).update(
            status=status,
            outcome=(InsertionOutcome.INSERTED if result.outcome == core.Outcome.INSERTED else InsertionOutcome.DISCARDED) if result else "",
            position=result.position if result else None,
            dropped=result.dropped if result else [],
            comparisons=Comparison.objects.filter(insertion=insertion).count(),
            list_length=list_length,
            error=error,
            finished_at=timezone.now(),
        )
        Ranklist.objects.filter(pk=ranklist.pk).update(version=F("version") + 1)
        if insertion.source == InsertionSource.BATCH:
            counter = "done_units" if status == InsertionStatus.DONE else "failed_units"
            Run.objects.filter(pk=ranklist.run_id).update(**{counter: F(counter) + 1}, updated_at=timezone.now())
    ranklist_file_write(ranklist)
    comparisons_sync(ranklist.run, insertion=insertion)


# --- Reading a ranklist for a report --------------------------------------------------------------------


def ranklist_summary(ranklist: Ranklist) -> dict:
    """What the report of a rank run (and the pages) say about a ranklist."""
    entries = list(RanklistEntry.objects.filter(ranklist=ranklist).select_related("artifact").order_by("position"))
    insertions = list(ranklist.insertions.select_related("artifact").order_by("sequence"))
    finished = [i for i in insertions if i.status in (InsertionStatus.DONE, InsertionStatus.FAILED)]
    comparisons = Comparison.objects.filter(ranklist=ranklist).count()
    orders = 2 if ranklist.both_orders else 1
    worst = sum(core.seed_worst_case(i.list_length or 0) for i in finished)
    return {
        "ranklist": str(ranklist.path),
        "artifact_set": ranklist.artifact_set.name,
        "goal": ranklist.goal.text,
        "max_size": ranklist.max_size,
        "both_orders": ranklist.both_orders,
        "ranking": [e.artifact.artifact_id for e in entries],
        "top": [{"id": e.artifact.artifact_id, "preview": e.artifact.preview} for e in entries[:3]],
        "candidates": len(insertions),
        "inserted": sum(1 for i in insertions if i.outcome == InsertionOutcome.INSERTED),
        "discarded": sum(1 for i in insertions if i.outcome == InsertionOutcome.DISCARDED),
        "pending": sum(1 for i in insertions if i.status == InsertionStatus.PENDING),
        "failed": [{"id": i.artifact.artifact_id, "error": i.error} for i in insertions if i.status == InsertionStatus.FAILED],
        "comparisons": comparisons,
        "comparator_calls": comparisons * orders,
        # The seed's bound, 2 + log2 N calls per insert into a list of N (both orders double the calls made).
        "seed_worst_case": round(worst, 1),
        "judge": {"name": ranklist.judge.name, "model": ranklist.judge.model, "version": ranklist.judge_version},
        "prompt_version": ranklist.prompt.version,
    }


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
        return {"run_id": run.run_id, "kind": run.kind, "winner": None}
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
        "versions": {k: run.versions.get(k) for k in ("prompt", "judge", "goal")},
    }
