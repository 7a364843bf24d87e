"""Ranklists: batch rank (Mode 2), incremental insert (Mode 3), and the queue that serialises inserts.

Registering a candidate (its Artifact, its line in metadata.jsonl and a pending Insertion in arrival
order) is a short write. Inserting is done by whoever holds the ranklist's lease, one pending insertion
at a time in arrival order; a batch rank, a CLI insert and a worker serving the browser all run the
same loop, so two inserts at once are made one after the other and neither is lost.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Max

from judgeapp.judging import taskqueue
from judgeapp.judging.content import goal_get_or_create, prompt_register
from judgeapp.judging.costs import budget_check
from judgeapp.judging.errors import InputError
from judgeapp.judging.runs import run_create, run_enqueue
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
    Strategy,
)
from judgeapp.ranker import core as core
from judgeapp.ranker.core import tournament
from judgeapp.ranker.runkind.files import metadata_sync, ranklist_file_write
from judgeapp.ranker.services.inputs import Candidate, max_size_check, run_dir_check_fresh, set_name_check, unique_ids_check

log = logging.getLogger(__name__)

# --- Creating a batch rank (Mode 2) --------------------------------------------------------------------


def rank_run_create(
    *,
    candidates: list[Candidate],
    goal: str,
    judge: Judge,
    set_name: str,
    max_size: int = core.DEFAULT_MAX_SIZE,
    both_orders: bool = False,
    strategy: str = Strategy.SEED,
    budget: int | None = None,
    run_id: str | None = None,
    executor: str = Executor.CELERY,
    created_by=None,
    title: str = "",
    spend_budget=None,
) -> Run:
    """A queued batch-rank run: its ranklist (empty), every candidate registered in arrival order; a Celery run
    is sent to the workers once it is committed.

    Everything is checked (rank_check) before anything is written; the run's files start with metadata.jsonl
    and an empty ranklist. `strategy` is fixed for the ranklist's life; `budget` (tournament only): the most
    comparator calls the batch may make (default: tournament.default_budget). `spend_budget`: a spend cap in
    dollars (judging/costs.py; `rank --budget-usd`): no further candidate is placed once the calls have cost it.
    """
    spend_budget, strategy_options = rank_check(
        candidates=candidates, judge=judge, set_name=set_name, max_size=max_size, both_orders=both_orders,
        strategy=strategy, budget=budget, spend_budget=spend_budget,
    )
    ranklist = _rank_store(
        candidates=candidates, goal=goal, judge=judge, set_name=set_name, max_size=max_size, both_orders=both_orders,
        strategy=strategy, strategy_options=strategy_options, run_id=run_id, executor=executor, created_by=created_by,
        title=title, spend_budget=spend_budget,
    )
    # The files are written before the run is sent: until a worker holds the ranklist, its creator is their one writer.
    metadata_sync(ranklist)
    ranklist_file_write(ranklist)
    if executor == Executor.CELERY:
        run_enqueue(run=ranklist.run)
    return ranklist.run


def rank_check(
    *, candidates: list[Candidate], judge: Judge, set_name: str, max_size: int, both_orders: bool, strategy: str,
    budget: int | None, spend_budget,
) -> tuple[Decimal | None, dict]:
    """A batch rank's inputs checked before anything is written: (the spend cap, the strategy's settings), or
    InputError (one line). The goal, the run id and the run's directory are checked as the run is stored."""
    spend_budget = budget_check(budget=spend_budget, judges=[judge])
    set_name_check(set_name)
    max_size_check(max_size)
    if not candidates:
        raise InputError("no candidates to rank")
    unique_ids_check(candidates)
    strategy_options = strategy_options_check(
        strategy, budget=budget, both_orders=both_orders, candidates=len(candidates), max_size=max_size
    )
    return spend_budget, strategy_options


@transaction.atomic
def _rank_store(
    *, candidates: list[Candidate], goal: str, judge: Judge, set_name: str, max_size: int, both_orders: bool, strategy: str,
    strategy_options: dict, run_id: str | None, executor: str, created_by, title: str, spend_budget,
) -> Ranklist:
    """The run, its artifact set, its empty ranklist and a pending insertion per candidate, in arrival order."""
    goal_row = goal_get_or_create(text=goal)
    run = run_create(
        kind=RunKind.RANK,
        run_id=run_id,
        executor=executor,
        created_by=created_by,
        title=title or f"Rank {len(candidates)} candidates: {goal_row.text}"[:300],
        judge=judge,
        prompt=prompt_register(prompt="ranker"),
        budget=spend_budget,
        options={
            "goal": goal_row.text, "set": set_name, "max_size": max_size, "both_orders": both_orders, "strategy": strategy,
            **strategy_options,
        },
        versions={"goal": goal_row.content_hash[:12]},
    )
    run_dir_check_fresh(run)  # rolls the new run back
    artifact_set = ArtifactSet.objects.create(run=run, name=set_name)
    ranklist = Ranklist.objects.create(
        run=run, artifact_set=artifact_set, goal=goal_row, prompt=run.prompt, judge=judge, judge_version=judge.version,
        max_size=max_size, both_orders=both_orders, strategy=strategy, strategy_options=strategy_options,
    )
    for sequence, candidate in enumerate(candidates):
        artifact = _artifact_create(artifact_set, candidate)
        Insertion.objects.create(ranklist=ranklist, artifact=artifact, sequence=sequence, source=InsertionSource.BATCH)
    run.total_units = len(candidates)
    run.save(update_fields=["total_units", "updated_at"])
    return ranklist


def strategy_options_check(strategy: str, *, budget: int | None, both_orders: bool, candidates: int, max_size: int) -> dict:
    """The strategy's settings as the ranklist keeps them; bad combinations are bad input."""
    if strategy not in Strategy.values:
        raise InputError(f"unknown strategy {strategy!r}: choose {', '.join(Strategy.values)}")
    if budget is not None and strategy != Strategy.TOURNAMENT:
        raise InputError(
            "--budget is a limit of --strategy tournament; the other strategies place each candidate within their own bound"
        )
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise InputError(f"budget must be a positive number of comparator calls, got {budget!r}")
    if both_orders and strategy != Strategy.SEED:
        raise InputError(f"--both-orders goes with binary insertion; --strategy {strategy} chooses its own orders")
    if strategy == Strategy.TOURNAMENT:
        return {"budget": budget or tournament.default_budget(candidates, max_size), "confidence": tournament.DEFAULT_CONFIDENCE}
    if strategy == Strategy.ROBUST:
        from judgeapp.ranker.core import robust

        return {"reserve": robust.DEFAULT_RESERVE}
    return {}


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


def strategy_check(ranklist: Ranklist, strategy: str | None) -> None:
    if strategy and strategy != ranklist.strategy:
        raise InputError(
            f"this ranklist is ranked with --strategy {ranklist.strategy}; one strategy per ranklist: "
            f"rebuild it with `rank DIR --strategy {strategy}` instead of mixing strategies"
        )


def judge_check(ranklist: Ranklist, judge_name: str | None) -> None:
    if judge_name and judge_name != ranklist.judge.name:
        raise InputError(
            f"this ranklist's comparator is judge {ranklist.judge.name!r}; one comparator per ranklist: "
            f"rebuild the ranklist to rank with {judge_name!r}"
        )


def insertion_create(
    *,
    ranklist: Ranklist,
    candidate: Candidate,
    goal: str | None = None,
    judge_name: str | None = None,
    max_size: int | None = None,
    strategy: str | None = None,
    budget: int | None = None,
    requested_by: str = "",
    executor: str = Executor.CELERY,
) -> tuple[Insertion, bool]:
    """Queue `candidate` for insertion. Returns (insertion, queued). An artifact ID already registered in
    the ranklist is not registered again: when it is placed (or discarded) it is skipped (queued False,
    nothing is judged); when it is still pending (an insert that was interrupted), it is resumed; when it
    was left unplaced (a comparison failed twice), it is queued again, with the content it was registered
    with. `budget`: the most calls a tournament may make for it. With the Celery executor a worker is sent
    to make the queued insert once it is committed; the CLI (inline) makes it itself."""
    insertion_check(ranklist=ranklist, goal=goal, judge_name=judge_name, max_size=max_size, strategy=strategy, budget=budget)
    insertion, queued = _insertion_existing(ranklist=ranklist, candidate=candidate, budget=budget)
    if insertion is None:
        try:
            insertion = _insertion_store(
                ranklist=ranklist, candidate=candidate, max_size=max_size, budget=budget, requested_by=requested_by
            )
        except IntegrityError:
            # The same ID registered by someone else a moment ago.
            insertion = Insertion.objects.filter(ranklist=ranklist, artifact__artifact_id=candidate.artifact_id).first()
            if insertion is None:
                raise
            queued = insertion.status == InsertionStatus.PENDING
        else:
            metadata_sync(ranklist)
            queued = True
    if queued and executor == Executor.CELERY:
        ranklist_work_enqueue(ranklist=ranklist)
    return insertion, queued


def insertion_check(
    *, ranklist: Ranklist, goal: str | None, judge_name: str | None, max_size: int | None, strategy: str | None,
    budget: int | None,
) -> None:
    """An insert's options against the ranklist's own (one goal, judge and strategy per ranklist), or InputError."""
    goal_check(ranklist, goal)
    judge_check(ranklist, judge_name)
    strategy_check(ranklist, strategy)
    if max_size is not None:
        max_size_check(max_size)
    if budget is not None:
        strategy_options_check(ranklist.strategy, budget=budget, both_orders=False, candidates=1, max_size=ranklist.max_size)


def _insertion_existing(*, ranklist: Ranklist, candidate: Candidate, budget: int | None) -> tuple[Insertion | None, bool]:
    """The candidate's insertion when its ID is registered already, and whether it is queued (an unplaced one
    is queued again); (None, False) for a new ID."""
    existing = (
        Insertion.objects.filter(ranklist=ranklist, artifact__artifact_id=candidate.artifact_id)
        .select_related("artifact")
        .first()
    )
    if existing is None:
        return None, False
    if existing.status == InsertionStatus.FAILED:
        if existing.artifact.content_hash != candidate.digest:
            raise InputError(
                f"{candidate.artifact_id} is registered in this ranklist with other content (unplaced: {existing.error}); "
                f"it is retried with the content it was registered with: insert that file, or this one under another name"
            )
        unplaced_requeue(ranklist=ranklist, insertions=[existing], budget=budget)
        existing.refresh_from_db()
        return existing, True
    return existing, existing.status == InsertionStatus.PENDING


@transaction.atomic
def _insertion_store(
    *, ranklist: Ranklist, candidate: Candidate, max_size: int | None, budget: int | None, requested_by: str
) -> Insertion:
    """The candidate's artifact and a pending insertion after the ranklist's last one."""
    # Serialises the sequence numbers of two registrations at once (a row lock on PostgreSQL; on
    # SQLite the write transaction itself).
    locked = Ranklist.objects.select_for_update().get(pk=ranklist.pk)
    if max_size is not None and max_size != locked.max_size:
        Ranklist.objects.filter(pk=locked.pk).update(max_size=max_size)
    sequence = (locked.insertions.aggregate(last=Max("sequence"))["last"] or -1) + 1
    artifact = _artifact_create(locked.artifact_set, candidate)
    return Insertion.objects.create(
        ranklist=locked,
        artifact=artifact,
        sequence=sequence,
        source=InsertionSource.INSERT,
        requested_by=requested_by,
        notes={"budget": budget} if budget else {},
    )


def ranklist_work_enqueue(*, ranklist: Ranklist) -> None:
    """Send a worker to make the ranklist's queued inserts once the transaction commits."""
    def send() -> None:
        try:
            taskqueue.send(taskqueue.RANKLIST_WORK, ranklist.pk)
        except taskqueue.BrokerDown as exc:  # the inserts are stored; Resume hands them to a worker later
            log.warning("ranklist %s: its queued inserts wait for the broker: %s", ranklist.pk, exc)

    transaction.on_commit(send)


def unplaced_requeue(*, ranklist: Ranklist, insertions=None, budget: int | None = None) -> int:
    """Queue unplaced candidates again (all of the ranklist's, or those given): they wait in their arrival
    order, their earlier reasons kept in their notes. Returns how many."""
    rows = list(insertions) if insertions is not None else list(ranklist.insertions.filter(status=InsertionStatus.FAILED))
    for insertion in rows:
        notes = dict(insertion.notes or {})
        if insertion.error and not any(f.get("reason") == insertion.error for f in notes.get("failures", [])):
            notes.setdefault("failures", []).append({"reason": insertion.error})
        if budget:
            notes["budget"] = budget
        Insertion.objects.filter(pk=insertion.pk, status=InsertionStatus.FAILED).update(
            status=InsertionStatus.PENDING, error="", finished_at=None, notes=notes
        )
        if insertion.source == InsertionSource.BATCH:
            # Its earlier failure no longer counts against the batch: it is waiting again.
            Run.objects.filter(pk=ranklist.run_id, failed_units__gt=0).update(failed_units=F("failed_units") - 1)
    return len(rows)
