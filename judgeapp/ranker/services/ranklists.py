"""Ranklists: batch rank (Mode 2), incremental insert (Mode 3), and the queue that serialises inserts.

Registering a candidate (its Artifact, its line in metadata.jsonl and a pending Insertion in arrival
order) is a short write. Inserting is done by whoever holds the ranklist's lease, one pending insertion
at a time in arrival order; a batch rank, a CLI insert and a worker serving the browser all run the
same loop, so two inserts at once are made one after the other and neither is lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone

from judgeapp.ranker import core as core
from judgeapp.judging.errors import InputError
from judgeapp.models import (
    Artifact,
    ArtifactSet,
    Comparison,
    Executor,
    Insertion,
    InsertionOutcome,
    InsertionSource,
    InsertionStatus,
    Judge,
    Ranklist,
    RanklistEntry,
    Run,
    RunKind,
    RunStatus,
)
from judgeapp.judging.content import goal_get_or_create, prompt_register
from judgeapp.judging.runs import run_create
from judgeapp.judging.workers import worker_identity

from judgeapp.ranker.runkind.comparator import ComparatorFailed, ComparatorSpec, compare
from judgeapp.ranker.runkind.files import comparisons_sync, metadata_sync, ranklist_file_write, ranklist_files_repair
from judgeapp.ranker.services.inputs import Candidate, max_size_check, run_dir_check_fresh, set_name_check, unique_ids_check
from judgeapp.ranker.runkind.lease import LeaseLost, ranklist_lease_release, ranklist_lease_renew, ranklist_lease_try

POLL_SECONDS = 0.2
# How long an insert waits without seeing any progress on the ranklist before giving up.
WAIT_WITHOUT_PROGRESS_SECONDS = 900


class RanklistBusy(Exception):
    """Another process has held the ranklist for a long time without making progress."""


# --- Creating a batch rank (Mode 2) --------------------------------------------------------------------


def rank_create(
    *,
    candidates: list[Candidate],
    goal: str,
    judge: Judge,
    set_name: str,
    max_size: int = core.DEFAULT_MAX_SIZE,
    both_orders: bool = False,
    run_id: str | None = None,
    executor: str = Executor.CELERY,
    created_by=None,
    title: str = "",
) -> Run:
    """A queued batch-rank run: its ranklist (empty), every candidate registered in arrival order.

    Everything is checked before anything is written; the run's files start with metadata.jsonl and an
    empty ranklist.
    """
    set_name_check(set_name)
    max_size_check(max_size)
    if not candidates:
        raise InputError("no candidates to rank")
    unique_ids_check(candidates)
    with transaction.atomic():
        goal_row = goal_get_or_create(text=goal)
        run = run_create(
            kind=RunKind.RANK,
            run_id=run_id,
            executor=executor,
            created_by=created_by,
            title=title or f"Rank {len(candidates)} candidates: {goal_row.text}"[:300],
            judge=judge,
            prompt=prompt_register(prompt="ranker"),
            options={"goal": goal_row.text, "set": set_name, "max_size": max_size, "both_orders": both_orders},
            versions={"goal": goal_row.content_hash[:12]},
        )
        run_dir_check_fresh(run)  # rolls the new run back
        artifact_set = ArtifactSet.objects.create(run=run, name=set_name)
        ranklist = Ranklist.objects.create(
            run=run,
            artifact_set=artifact_set,
            goal=goal_row,
            prompt=run.prompt,
            judge=judge,
            judge_version=judge.version,
            max_size=max_size,
            both_orders=both_orders,
        )
        for sequence, candidate in enumerate(candidates):
            artifact = _artifact_create(artifact_set, candidate)
            Insertion.objects.create(ranklist=ranklist, artifact=artifact, sequence=sequence, source=InsertionSource.BATCH)
        run.total_units = len(candidates)
        run.save(update_fields=["total_units", "updated_at"])
    metadata_sync(ranklist)
    ranklist_file_write(ranklist)
    return run


def _artifact_create(artifact_set: ArtifactSet, candidate: Candidate) -> Artifact:
    return Artifact.objects.create(
        artifact_set=artifact_set,
        artifact_id=candidate.artifact_id,
        relative_path=candidate.relative_path,
        content_hash=candidate.digest,
        size=candidate.size,
        content=candidate.text,
    )


# --- Registering one more candidate (Mode 3) -----------------------------------------------------------


def ranklist_from_path(path: str | Path) -> Ranklist:
    """The ranklist whose file is `path` (DATA_DIR/sst-llm-judge-ranker/<run-id>/ranking_state/<set>.ranklist.json)."""
    resolved = Path(path).resolve()
    suffix = ".ranklist.json"
    known = None
    if resolved.name.endswith(suffix) and resolved.parent.name == "ranking_state":
        known = (
            Ranklist.objects.select_related("run", "artifact_set", "goal", "judge", "prompt")
            .filter(run__run_id=resolved.parent.parent.name, artifact_set__name=resolved.name[: -len(suffix)])
            .first()
        )
    if known is None or known.path.resolve() != resolved:
        raise InputError(
            f"{path}: not a ranklist judgeapp has built (expected {settings.DATA_DIR}/sst-llm-judge-ranker/"
            f"<run-id>/ranking_state/<set>.ranklist.json, made by `rank`)"
        )
    return known


def goal_check(ranklist: Ranklist, goal: str | None) -> None:
    if goal is None:
        return
    wanted = " ".join(goal.split())
    if wanted != ranklist.goal.text:
        raise InputError(
            f"this ranklist was built for the goal {ranklist.goal.text!r}, not {wanted!r}; a ranklist is valid "
            f"for one goal only: rebuild it with `rank DIR --goal {wanted!r}` instead of mixing goals"
        )


def judge_check(ranklist: Ranklist, judge_name: str | None) -> None:
    if judge_name and judge_name != ranklist.judge.name:
        raise InputError(
            f"this ranklist's comparator is judge {ranklist.judge.name!r}; one comparator per ranklist: "
            f"rebuild the ranklist to rank with {judge_name!r}"
        )


def insertion_register(
    *,
    ranklist: Ranklist,
    candidate: Candidate,
    goal: str | None = None,
    judge_name: str | None = None,
    max_size: int | None = None,
    requested_by: str = "",
) -> tuple[Insertion, bool]:
    """Queue `candidate` for insertion. Returns (insertion, queued). An artifact ID already registered in
    the ranklist is not registered again: when its insertion is finished it is skipped (queued False,
    nothing is judged); when it is still pending (an insert that was interrupted), it is resumed."""
    goal_check(ranklist, goal)
    judge_check(ranklist, judge_name)
    if max_size is not None:
        max_size_check(max_size)
    existing = Insertion.objects.filter(ranklist=ranklist, artifact__artifact_id=candidate.artifact_id).first()
    if existing is not None:
        return existing, existing.status == InsertionStatus.PENDING
    try:
        with transaction.atomic():
            # Serialises the sequence numbers of two registrations at once (a row lock on PostgreSQL; on
            # SQLite the write transaction itself).
            locked = Ranklist.objects.select_for_update().get(pk=ranklist.pk)
            if max_size is not None and max_size != locked.max_size:
                Ranklist.objects.filter(pk=locked.pk).update(max_size=max_size)
            sequence = (locked.insertions.aggregate(last=Max("sequence"))["last"] or -1) + 1
            artifact = _artifact_create(locked.artifact_set, candidate)
            insertion = Insertion.objects.create(
                ranklist=locked, artifact=artifact, sequence=sequence, source=InsertionSource.INSERT, requested_by=requested_by
            )
    except IntegrityError:
        # The same ID registered by someone else a moment ago.
        existing = Insertion.objects.filter(ranklist=ranklist, artifact__artifact_id=candidate.artifact_id).first()
        if existing is None:
            raise
        return existing, existing.status == InsertionStatus.PENDING
    metadata_sync(ranklist)
    return insertion, True


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
