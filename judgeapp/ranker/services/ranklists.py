"""Ranklists: batch rank (Mode 2), incremental insert (Mode 3), and the queue that serialises inserts.

Registering a candidate (its Artifact, its line in metadata.jsonl and a pending Insertion in arrival
order) is a short write. Inserting is done by whoever holds the ranklist's lease, one pending insertion
at a time in arrival order; a batch rank, a CLI insert and a worker serving the browser all run the
same loop, so two inserts at once are made one after the other and neither is lost.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max

from judgeapp.judging.content import goal_get_or_create, prompt_register
from judgeapp.judging.errors import InputError
from judgeapp.judging.runs import run_create
from judgeapp.models import (
    Artifact,
    ArtifactSet,
    Executor,
    Insertion,
    InsertionSource,
    InsertionStatus,
    Judge,
    Ranklist,
    Run,
    RunKind,
)
from judgeapp.ranker import core as core
from judgeapp.ranker.runkind.files import metadata_sync, ranklist_file_write
from judgeapp.ranker.services.inputs import Candidate, max_size_check, run_dir_check_fresh, set_name_check, unique_ids_check

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
