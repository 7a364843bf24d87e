"""Mode 1, direct compare: two files, one goal, one comparator call (two with both orders)."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from judgeapp.judging.content import goal_get_or_create, prompt_register
from judgeapp.judging.errors import InputError
from judgeapp.judging.runs import run_create, run_enqueue
from judgeapp.models import Artifact, ArtifactSet, Comparison, Executor, Judge, Run, RunKind
from judgeapp.ranker.core import DEFAULT_GOAL
from judgeapp.ranker.runkind.comparator import ComparatorSpec
from judgeapp.ranker.runkind.work import compare_set_perform
from judgeapp.ranker.services.inputs import Candidate, run_dir_check_fresh

RANKER_KINDS = (RunKind.RANK, RunKind.COMPARE)


@transaction.atomic
def compare_run_create(
    *,
    a: Candidate,
    b: Candidate,
    judge: Judge,
    goal: str | None = None,
    both_orders: bool = False,
    run_id: str | None = None,
    executor: str = Executor.CELERY,
    created_by=None,
    write_files: bool = True,
) -> Run:
    """A queued direct-compare run holding both files; a Celery run is sent to the workers once it is committed.
    `write_files`: keep comparisons.jsonl in its run directory (the seed writes it when a run id is in scope).

    No check step of its own: the two files were checked as they were read, and what is left (the goal, the
    run id, the run's directory) is checked here, the run rolled back on a refusal."""
    goal_row = goal_get_or_create(text=goal or DEFAULT_GOAL)
    run = run_create(
        kind=RunKind.COMPARE,
        run_id=run_id,
        executor=executor,
        created_by=created_by,
        title=f"{a.artifact_id} vs {b.artifact_id}: {goal_row.text}"[:300],
        judge=judge,
        prompt=prompt_register(prompt="ranker"),
        options={"goal": goal_row.text, "both_orders": both_orders, "files": write_files},
        versions={"goal": goal_row.content_hash[:12]},
    )
    run_dir_check_fresh(run)  # rolls the new run back
    _compare_set(run, a, b)
    run.total_units = 1
    run.save(update_fields=["total_units", "updated_at"])
    if executor == Executor.CELERY:
        run_enqueue(run=run)
    return run


def compare_into_run(
    *,
    run: Run,
    a: Candidate,
    b: Candidate,
    judge: Judge,
    goal: str | None = None,
    both_orders: bool = False,
) -> Comparison:
    """Compare now and record the comparison in an existing ranker run (its comparisons.jsonl)."""
    if run.kind not in RANKER_KINDS:
        raise InputError(
            f"run {run.run_id!r} is a {run.get_kind_display()} run; comparisons go into ranker runs (rank or compare)"
        )

    goal_row = goal_get_or_create(text=goal or DEFAULT_GOAL)
    for _attempt in range(3):
        try:
            with transaction.atomic():
                artifact_set = _compare_set(run, a, b)
            break
        except IntegrityError:  # a set of the same number made by a concurrent compare
            continue
    else:
        raise InputError(f"run {run.run_id!r} is busy with other comparisons; try again")
    spec = ComparatorSpec(run=run, goal=goal_row, prompt=prompt_register(prompt="ranker"), judge=judge, both_orders=both_orders)
    return compare_set_perform(spec, artifact_set=artifact_set, write_files=True)


def _compare_set(run: Run, a: Candidate, b: Candidate) -> ArtifactSet:
    number = ArtifactSet.objects.filter(run=run, name__startswith="compare-").count() + 1
    artifact_set = ArtifactSet.objects.create(run=run, name=f"compare-{number}")
    a_id, b_id = a.artifact_id, b.artifact_id
    if a_id == b_id:  # report.md of two versions: keep them apart
        a_id, b_id = f"{a_id} (A)", f"{b_id} (B)"
    for artifact_id, candidate in ((a_id, a), (b_id, b)):
        Artifact.objects.create(
            artifact_set=artifact_set,
            artifact_id=artifact_id[:255],
            relative_path=candidate.relative_path,
            content_hash=candidate.digest,
            size=candidate.size,
            content=candidate.text,
        )
    return artifact_set
