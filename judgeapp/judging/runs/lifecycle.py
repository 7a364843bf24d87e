"""A run's life: create, start (plan a stage's units), dispatch them to the workers, advance to the next
stage, finalize, fail, cancel, interrupt."""

from __future__ import annotations

import itertools
import logging
import re
import uuid
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from judgeapp.judging import taskqueue
from judgeapp.judging.accounting import counts_reason
from judgeapp.judging.audit import audit_log_create
from judgeapp.judging.batches import ROWS_AT_ONCE, batched, ids_in_order
from judgeapp.judging.client import call_deadline_seconds
from judgeapp.judging.costs import budget_report, run_usage, stopped_reason
from judgeapp.judging.endpoints import endpoint_config
from judgeapp.judging.errors import InputError
from judgeapp.judging.leases import UNIT
from judgeapp.judging.notify import run_ended_notify
from judgeapp.judging.outages import through_outage
from judgeapp.judging.runkind import RunFailed, UnitSpec, handler_for
from judgeapp.judging.workers import soft_time_limit, worker_identity
from judgeapp.judging.writeturn import write_turn
from judgeapp.models import ACTIVE_UNIT_STATUSES, AuditLog, Executor, Judgment, Run, RunStatus, StopReason, UnitStatus

log = logging.getLogger(__name__)


RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")

Progress = Callable[[int, int], None]  # (finished units, total units)

def run_id_new() -> str:
    return f"{timezone.now():%Y%m%dT%H%M%SZ}_{uuid.uuid4().hex[:8]}"


def run_id_check(run_id: str) -> str:
    if not RUN_ID_PATTERN.match(run_id) or run_id in (".", ".."):
        raise InputError(f"run id {run_id!r}: use letters, digits, '.', '_' and '-' (at most 100)")
    return run_id


def run_id_free_check(run_id: str) -> str:
    """A well-formed run id no run holds yet: checked by run_create, and early by a service that stages files first."""
    run_id_check(run_id)
    if Run.objects.filter(run_id=run_id).exists():
        raise InputError(f"run id {run_id!r} is already taken")
    return run_id


def endpoint_snapshots(*endpoints) -> dict:
    return {e.name: e.config_snapshot() | {"version": e.version} for e in endpoints if e is not None}


def run_create(
    *,
    kind: str,
    run_id: str | None = None,
    executor: str = Executor.CELERY,
    created_by=None,
    title: str = "",
    judge=None,
    judges=(),
    system=None,
    testset=None,
    rubric=None,
    prompt=None,
    options: dict | None = None,
    versions: dict | None = None,
    budget=None,
) -> Run:
    """A queued run with its configuration frozen: judges, system, options and the versions of its inputs.
    `budget`: its spend cap in dollars, checked (judging/costs.py: budget_check) by the mode's service."""
    run_id = run_id_free_check(run_id) if run_id else run_id_new()
    if len(title) > 300:  # a title made of long file names ("<a.jsonl> vs <b.jsonl>"); a user's is checked before
        title = title[:299] + "…"
    all_judges = [j for j in (judge, *judges) if j is not None]
    config = {
        "judges": endpoint_snapshots(*all_judges),
        "system": system.config_snapshot() | {"version": system.version} if system else None,
        "options": options or {},
    }
    base_versions = {
        "testset": testset.version if testset else None,
        "rubric": rubric.version if rubric else None,
        "prompt": prompt.version if prompt else None,
        "judge": judge.version if judge else None,
    }
    return Run.objects.create(
        run_id=run_id,
        kind=kind,
        executor=executor,
        created_by=created_by if getattr(created_by, "is_authenticated", False) else None,
        title=title,
        judge=judge,
        system=system,
        testset=testset,
        rubric=rubric,
        prompt=prompt,
        config=config,
        versions={**base_versions, **(versions or {})},
        budget=budget,
    )


# Units created per transaction while a stage is planned: each batch is committed (a planner cut off keeps
# what it made), renews the planner's lease and lets the workers start on it.
PLAN_BATCH = ROWS_AT_ONCE


class _PlannerReplaced(Exception):
    """The planner's lease was taken over (it went silent past its lease) or the run stopped meanwhile."""


def _units_create(run: Run, stage: int, specs: Iterable[UnitSpec], *, claim=None, skip: int = 0) -> int:
    """Create the units a plan gives, a batch per transaction (a plan may be an iterator over 100,000
    cases: never a list of every unit, nor a model instance per unit alive at once), and each unit once:
    a plan given again inserts nothing twice (units are unique per run and key). The first `skip` units of
    the plan are passed over: a planner cut off made them already. With `claim` (the planner's lease on
    the run) each batch renews it and is written only while it holds: a planner that lost the run stops.
    Returns how many units the plan gave, the skipped ones included.

    bulk_create, not a hand-written INSERT: planning is not per-judgment work, and 100,000 units took
    18-44 s either way on PostgreSQL (the raw executemany 20-32 s; a loaded two-core machine, three runs
    each), noise beside the hours 100,000 calls take at 0.2 s a call."""
    # A run stopped at its budget plans nothing more (its pending units were cancelled).
    runs = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING, stopped="")
    iterator = iter(specs)
    given = sum(1 for _ in itertools.islice(iterator, skip))
    base = Judgment.objects.filter(run_id=run.pk).count() if claim is not None else 0
    made = 0
    def write(batch: list[UnitSpec]) -> None:
        now = timezone.now()
        # SQLite's writers take their turn (judging/writeturn.py), as the workers recording units do.
        with write_turn(), transaction.atomic():
            Judgment.objects.bulk_create(
                [
                    Judgment(
                        run=run, stage=stage, key=spec.key, purpose=spec.purpose, case_id=spec.case_id,
                        criterion_id=spec.criterion_id, judge_id=spec.judge_id, system_id=spec.system_id,
                        order=spec.order, payload=spec.payload, created_at=now, updated_at=now,
                    )
                    for spec in batch
                ],
                ignore_conflicts=True,
            )
            # The run's row last, so that it is locked only while the batch commits (the workers recording
            # the first units write their counters there); a planner that lost the run writes nothing.
            if claim is not None and not UNIT.renew(runs, claim):
                raise _PlannerReplaced
            if claim is not None:  # progress while planning: the units made so far
                runs.update(total_units=base + made + len(batch), updated_at=now)

    while batch := list(itertools.islice(iterator, PLAN_BATCH)):  # read outside the transaction: a plan's cursor outlives it
        # A database out of reach (or busy) is waited for, the batch written again whole (it is one transaction,
        # and its units are inserted once whatever happens).
        through_outage(write, batch, what=f"planning {len(batch)} units of run {run.run_id}")
        made += len(batch)
        given += len(batch)
        if claim is not None:
            _dispatch_quietly(run)  # the workers start on the first batch, not after the last
    return given


def _dispatch_quietly(run: Run) -> None:
    """Send a Celery run's next units; a broker out of reach does not stop its planner (the units wait,
    pending, for the recovery to send them)."""
    if run.executor != Executor.CELERY:
        return
    try:
        through_outage(run_dispatch_next, run_pk=run.pk, what=f"sending the units of run {run.run_id}")
    except Exception:  # noqa: BLE001 - pending without a message: recovery sends a stalled run's units again
        log.exception("sending the units of run %s failed", run.run_id)


def _stage_plan(*, run_pk: int, claim) -> bool:
    """Create the units of the run's current stage under the planner's lease (`claim`), then release it
    and send the first of them. A planner cut off before the end (its time limit, a kill) leaves its
    lease to lapse with the stage part planned; the next one (run_start, sent again by the recovery)
    takes the lease and continues after the units already made. Returns whether the stage has units left
    to judge (False: the caller advances the run)."""
    runs = Run.objects.filter(pk=run_pk)
    run = Run.objects.get(pk=run_pk)
    handler = handler_for(run.kind)
    stage_units = Judgment.objects.filter(run_id=run_pk, stage=run.stage)
    try:
        # Units are made in the plan's order, a committed batch at a time: those already there are a first
        # part of the plan, passed over rather than inserted again.
        already = stage_units.count()
        given = _units_create(run, run.stage, handler.plan(run, run.stage) or (), claim=claim, skip=already)
        if already and stage_units.count() < given:
            # The plan gave its units in another order than the planner cut off: all of it again, once
            # (what is there is kept).
            _units_create(run, run.stage, handler.plan(run, run.stage) or (), claim=claim)
    except (InputError, RunFailed) as exc:
        run_fail(run_pk=run_pk, error=str(exc))
        UNIT.release(runs, claim)
        return True
    except _PlannerReplaced:
        UNIT.release(runs, claim)  # a run that stopped: nothing more to plan (a planner that took over holds another claim)
        # Stopped at its budget: the caller finalizes it once its units in flight are recorded.
        return not runs.filter(status=RunStatus.RUNNING).exclude(stopped="").exists()
    except soft_time_limit():
        # Hand over at once: the next planner continues where this one stopped, in a task of its own.
        UNIT.expire(runs, claim)
        if run.executor == Executor.CELERY:
            run_task_send(run=run, task=taskqueue.START_RUN)
        raise
    def release() -> int:
        total = Judgment.objects.filter(run_id=run_pk).count()
        return UNIT.release(runs, claim, total_units=total, updated_at=timezone.now())

    if not through_outage(release, what=f"ending the plan of run {run.run_id}"):
        return True  # another planner took the run over: it finishes the stage
    _dispatch_quietly(run)
    return stage_units.filter(status__in=ACTIVE_UNIT_STATUSES).exists()


def run_enqueue(*, run: Run) -> None:
    """Start a Celery run once the transaction that created it commits. With the broker down the run stays
    queued, marked `awaiting_broker` (and so is `run`): the workers' recovery starts it when the broker is back."""
    transaction.on_commit(lambda: run_task_send(run=run, task=taskqueue.START_RUN))


def run_task_send(*, run: Run, task: str) -> bool:
    """Send the run's `task` (taskqueue's START_RUN or EXECUTE_SEQUENTIAL_RUN). False when the broker is
    down: the run is marked `awaiting_broker` for the recovery, and a line says so (sending twice is
    harmless: run_start is idempotent, and a sequential run is claimed once)."""
    try:
        taskqueue.send(task, run.pk)
    except taskqueue.BrokerDown as exc:
        _broker_wait(run, f"{task.rsplit('.', 1)[-1]} not sent", exc)
        return False
    return True


def _broker_wait(run: Run, what: str, exc: Exception) -> None:
    log.warning("run %s waits for the broker (%s): %s; the workers send it when the broker is back", run.run_id, what, exc)
    Run.objects.filter(pk=run.pk).update(awaiting_broker=True)
    run.awaiting_broker = True


def run_start(*, run_pk: int) -> bool:
    """queued -> running, with the first stage's units created and dispatched as they are made. Idempotent,
    and one planner per run: the planner holds the run's lease while it plans (a second one returns at
    once), and a planner started after one was cut off continues where it stopped."""
    run = Run.objects.get(pk=run_pk)
    handler = handler_for(run.kind)
    now = timezone.now()
    if handler.sequential:
        if not Run.objects.filter(pk=run_pk, status=RunStatus.QUEUED).update(
            status=RunStatus.RUNNING, started_at=now, updated_at=now
        ):
            return False
        if run.executor == Executor.CELERY:
            transaction.on_commit(lambda: run_task_send(run=run, task=taskqueue.EXECUTE_SEQUENTIAL_RUN))
        return True
    holder = worker_identity()
    # One claim for every try: a start whose answer was lost finds the run it started (leases.Lease.take).
    claim = UNIT.new_claim(holder)
    queued = Run.objects.filter(pk=run_pk).filter(Q(status=RunStatus.QUEUED) | UNIT.mine(claim))
    claim, taken = through_outage(
        UNIT.take, queued, holder=holder, claim=claim, status=RunStatus.RUNNING, started_at=now, updated_at=now,
        what=f"starting run {run.run_id}",
    )
    if not taken:
        # A running run whose planner was cut off (its token is still set, its lease ran out).
        claim, taken = through_outage(
            UNIT.take, Run.objects.filter(pk=run_pk, status=RunStatus.RUNNING, claim_token__isnull=False), holder=holder,
            claim=claim, what=f"starting run {run.run_id}",
        )
        if not taken:
            return False
    if not _stage_plan(run_pk=run_pk, claim=claim):
        run_advance(run_pk=run_pk)
    return True


# Batches of a run in the queue per slot of its judge's limit: enough that every slot has its next batch
# waiting when one ends, few enough that a run started later is not queued behind a whole big run.
WINDOW_BATCHES_PER_SLOT = 4


def _slots(run: Run) -> int:
    return max(1, run.judge.max_concurrency if run.judge_id else 4)


def batch_size_for(run: Run, pending: int) -> int:
    """How many units one task claims and judges: enough to spread the round trips (claim, record, count)
    over several judgments, few enough that every judge slot still has work until the end (about four
    batches per slot of the judge's limit)."""
    return max(1, min(settings.UNIT_BATCH_SIZE, -(-pending // (WINDOW_BATCHES_PER_SLOT * _slots(run)))))


def unit_time_limits(run: Run) -> tuple[float, float]:
    """(soft, hard) time limits of one unit of `run`: as long as its calls can take, each bounded by the
    judge's call deadline (judging/client.py: call_deadline_seconds), and once more for the wait for a
    slot; never above UNIT_SOFT_TIME_LIMIT, which a run without one judge, or a kind that cannot count
    its calls, gets. A generation unit calls the system under test, so the longer of the two counts."""
    ceiling = settings.UNIT_SOFT_TIME_LIMIT
    grace = settings.UNIT_HARD_TIME_LIMIT - settings.UNIT_SOFT_TIME_LIMIT
    calls = handler_for(run.kind).calls_per_unit
    if run.judge is None or calls is None:
        return ceiling, ceiling + grace
    calls *= run.options.get("trials") or 1  # --trials K: every trial is a verdict and its one parse retry
    longest = max(call_deadline_seconds(endpoint_config(e)) for e in (run.judge, run.system) if e is not None)
    soft = min(ceiling, (calls + 1) * longest)
    return soft, soft + grace


def _send(run: Run, ids: list[int], size: int) -> int:
    """Send `ids` to the workers, `size` per task, through one broker connection; how many were sent. With
    the broker down the rest stay pending and the run is marked `awaiting_broker`: the workers' recovery
    sends them when the broker is back (never a unit's failure, whoever dispatched)."""
    if not ids:
        return 0
    soft, hard = unit_time_limits(run)
    sent = 0
    try:
        with taskqueue.producer() as producer:
            for batch in batched(ids, size):
                # The task's time limits grow with its batch: its units are judged one after another.
                taskqueue.send(
                    taskqueue.EXECUTE_JUDGMENTS, batch, producer=producer, soft_time_limit=soft * len(batch),
                    time_limit=hard * len(batch)
                )
                sent += len(batch)
    except taskqueue.BrokerDown as exc:
        _broker_wait(run, f"{len(ids) - sent} of {len(ids)} units not sent", exc)
    return sent


def _window_fill(run_pk: int, *, again: bool, only: list[int] | None = None) -> int:
    """Send the run's next units, up to its window (WINDOW_BATCHES_PER_SLOT batches per judge slot in the
    queue or being judged); with `again`, first the units sent before and still pending (a message the
    broker or a killed worker lost); `only`: just these pending units again (a batch given back)."""
    with write_turn(), transaction.atomic():
        # The run's row is locked while its window is counted and moved: two workers recording at once
        # do not both fill the same room.
        run = Run.objects.select_for_update(of=("self",)).select_related("judge", "system").get(pk=run_pk)
        if run.status != RunStatus.RUNNING or run.executor != Executor.CELERY:
            return 0
        pending = Judgment.objects.filter(run_id=run_pk, stage=run.stage, status=UnitStatus.PENDING)
        remaining = max(1, run.total_units - run.done_units - run.failed_units)
        size = batch_size_for(run, remaining)
        if only is not None:
            resent, new = list(pending.filter(pk__in=only).order_by("pk").values_list("pk", flat=True)), []
        else:
            resent = list(ids_in_order(pending.filter(pk__lte=run.dispatched_through))) if again else []
            window = size * WINDOW_BATCHES_PER_SLOT * _slots(run)
            in_flight = max(0, run.dispatched_units - run.done_units - run.failed_units)
            room = window - in_flight
            # Whole batches, unless nothing is in flight (the stage's last few units).
            room = room - room % size if room >= size else (room if not in_flight else 0)
            new = list(
                pending.filter(pk__gt=run.dispatched_through).order_by("pk").values_list("pk", flat=True)[:room]
            ) if room > 0 else []
            if new:
                Run.objects.filter(pk=run_pk).update(
                    dispatched_units=F("dispatched_units") + len(new), dispatched_through=new[-1]
                )
                Judgment.objects.filter(pk__in=new).update(enqueued_at=timezone.now())
    # Sent once the window's move is committed (a worker that records a unit of it reads the counters).
    return _send(run, resent, size) + _send(run, new, size)


def run_dispatch(*, run_pk: int, only: list[int] | None = None) -> int:
    """Send the run's window again: its units sent before and still pending (their message may be lost:
    the recovery calls this), then new ones up to the window. `only`: just these units again (a batch given
    back). Sending a unit twice is harmless: one claim wins. Returns how many units were sent."""
    return _window_fill(run_pk, again=only is None, only=only)


def run_dispatch_next(*, run_pk: int) -> int:
    """Send the run's next units as room opens in its window (a batch recorded, a stage's batch planned)."""
    return _window_fill(run_pk, again=False)



def run_advance(*, run_pk: int) -> None:
    """When the current stage has no active unit: plan the next stage, or finalize the run. Not while a
    stage is still being planned (its planner advances the run when it ends, if nothing is left)."""
    while True:
        with transaction.atomic():
            run = Run.objects.select_for_update().get(pk=run_pk)
            if run.status != RunStatus.RUNNING or run.claim_token is not None:
                return
            if Judgment.objects.filter(run=run, stage=run.stage, status__in=ACTIVE_UNIT_STATUSES).exists():
                return
            handler = handler_for(run.kind)
            if run.stopped:
                break  # stopped at its budget: no further stage, the report of what was judged
            try:
                last_stage = handler.plan(run, run.stage + 1) is None  # the plan itself is made again by its planner
            except (InputError, RunFailed) as exc:
                run.status, run.error, run.finished_at = RunStatus.FAILED, str(exc), timezone.now()
                run.save()
                run_ended_notify(run_pk=run_pk)
                return
            if last_stage:
                break
            claim, _ = UNIT.take(Run.objects.filter(pk=run_pk), holder=worker_identity(), free=Q(), stage=run.stage + 1)
        if _stage_plan(run_pk=run_pk, claim=claim):
            return
    # Finalizing can take a while (bootstrap intervals); it runs outside the lock, and only the first
    # of two racing finalizers writes its report.
    stage = run.stage
    try:
        status, report = handler.finalize(run)
        error = ""
    except Exception as exc:  # noqa: BLE001 - a report that cannot be built fails the run with the reason
        log.exception("report of run %s failed", run.run_id)
        status, report, error = RunStatus.FAILED, None, f"building the report failed: {type(exc).__name__}: {exc}"
    if run.stopped and report is not None:
        status = RunStatus.INVALID if status != RunStatus.FAILED else status
        report["stopped"] = run.stopped
        report["invalid"] = True
        # The units the budget left unjudged are not replies that never came: the cap is the reason.
        unjudged = counts_reason(report["counts"]) if isinstance(report.get("counts"), dict) else None
        reasons = [reason for reason in report.get("invalid_reasons") or [] if reason != unjudged]
        report["invalid_reasons"] = [*reasons, stopped_reason(run)]
    run_finish(run_pk=run_pk, status=status, report=report, error=error, stage=stage)


def run_finish(*, run_pk: int, status: str, report: dict | None, error: str = "", stage: int | None = None) -> bool:
    filters = {"pk": run_pk, "status": RunStatus.RUNNING}
    if stage is not None:
        filters["stage"] = stage
    now = timezone.now()
    if report is not None:
        # Every kind's report says what its judge calls used and cost (CONTRACT §6, `usage`), and its budget.
        run = Run.objects.get(pk=run_pk)
        budget = budget_report(run=run)
        if budget is not None and isinstance(report.get("budget"), dict):
            budget.update(report["budget"])  # what the kind adds (the ranker: the candidates not placed)
        report = {**report, "usage": run_usage(run=run), "budget": budget, "stopped": report.get("stopped")}
    with transaction.atomic():
        finished = bool(
            Run.objects.filter(**filters).update(status=status, report=report, error=error, finished_at=now, updated_at=now)
        )
        if finished:
            run_ended_notify(run_pk=run_pk)  # failed, invalid, the gate: the webhooks' events, once per run
    return finished


# Pending units cancelled per statement when a run stops.
CANCEL_BATCH = 10_000


def units_cancel(run_pk: int) -> None:
    """Cancel the run's pending units, a batch at a time in id order, passing over those a worker is
    claiming this moment (it sees the run stopped and gives them back cancelled). One UPDATE of every
    pending unit of a large run locked them in its own order while workers' claims locked theirs in
    another: PostgreSQL found a deadlock and aborted the cancel or the claim."""
    pending = Judgment.objects.filter(run_id=run_pk, status=UnitStatus.PENDING)
    with transaction.atomic():
        while ids := list(pending.select_for_update(skip_locked=True).order_by("pk").values_list("pk", flat=True)[:CANCEL_BATCH]):
            Judgment.objects.filter(pk__in=ids, status=UnitStatus.PENDING).update(status=UnitStatus.CANCELLED)


def run_budget_stop(*, run_pk: int) -> bool:
    """The run's budget is spent: it starts no further unit. Its pending units are cancelled (those claimed
    and not started are cancelled when they are given back, runs/units.py); once the units in flight are
    recorded the run is finalized with what was judged: invalid, its report `stopped: "budget"`
    (`run_advance`). Returns whether this call stopped it."""
    with transaction.atomic():
        stopped = Run.objects.filter(pk=run_pk, status=RunStatus.RUNNING, stopped="").update(stopped=StopReason.BUDGET)
        if stopped:
            units_cancel(run_pk)
    if stopped:
        log.info("run %s reached its budget: no further unit is judged", run_pk)
    return bool(stopped)


def run_fail(*, run_pk: int, error: str) -> None:
    now = timezone.now()
    with transaction.atomic():
        updated = Run.objects.filter(pk=run_pk, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).update(
            status=RunStatus.FAILED, error=error, finished_at=now, updated_at=now
        )
        if updated:
            run_ended_notify(run_pk=run_pk)
    if updated:
        units_cancel(run_pk)


def run_cancel(*, run: Run, actor, reason: str = "") -> bool:
    """Stop a run: no pending unit is judged after this; units in flight finish and are kept. `actor`:
    a user, or a label (judgeapp/judging/audit.py)."""
    now = timezone.now()
    with transaction.atomic():
        updated = Run.objects.filter(pk=run.pk, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).update(
            status=RunStatus.CANCELLED, finished_at=now, updated_at=now
        )
        if not updated:
            return False
        units_cancel(run.pk)
        audit_log_create(action=AuditLog.Action.RUN_CANCELLED, actor=actor, run=run, subject=run.run_id, reason=reason)
    return True


def run_interrupt(*, run_pk: int, signal_name: str) -> None:
    """A command stopped by a signal: its run fails with the reason, its pending units are cancelled, and
    so are the units this process still holds (only a second signal, which does not wait for them, leaves
    any): none stays claimed, and none can be recorded late (the claim token is gone)."""
    run_fail(run_pk=run_pk, error=f"interrupted by {signal_name} before it finished")
    this_process = ":".join(worker_identity().split(":")[:3]) + ":"
    Judgment.objects.filter(run_id=run_pk, status=UnitStatus.CLAIMED, claimed_by__startswith=this_process).update(
        status=UnitStatus.CANCELLED, claim_token=None, lease_expires_at=None
    )
