"""Runs: create, start, fan out into one task per unit, claim, record, advance, finalize, cancel, recover.

The database is the source of truth, not the broker. A unit (a Judgment row) is created once per run
(unique key), claimed with a conditional UPDATE before its judge is called, and recorded with another
conditional UPDATE that only the claim's holder can make. A killed worker therefore loses nothing: its
claims are released when its process is found dead (same host) or its lease runs out (elsewhere), and the
units go back to pending; and nothing is judged twice, because a unit is recorded at most once and the
response cache answers a repeated call without reaching the judge.
"""

from __future__ import annotations

import collections
import importlib
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from judgeapp.judging import shutdown, taskqueue
from judgeapp.judging.audit import audit_log_create
from judgeapp.judging.batches import batched, ids_in_order
from judgeapp.judging.client import JudgeError, JudgeRejected, JudgeUnreachable, StructuredOutputUnsupported, openai_preload
from judgeapp.judging.errors import InputError
from judgeapp.judging.limiters import before_waiting_for_a_slot
from judgeapp.judging.runkind import RunFailed, UnitResult, UnitSpec, handler_for
from judgeapp.judging.text import storable
from judgeapp.judging.workers import claimer_is_dead, soft_time_limit, worker_identity
from judgeapp.judging.writeturn import write_turn
from judgeapp.models import ACTIVE_UNIT_STATUSES, AuditLog, Executor, Judge, Judgment, Run, RunStatus, System, UnitStatus

log = logging.getLogger(__name__)

RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# Recovery re-sends a pending unit only when its run has made no progress for this long (the message
# may simply be waiting in a long queue).
STALL_SECONDS = 300
RUN_FATAL_STATUSES = (401, 403, 404)

Progress = Callable[[int, int], None]  # (finished units, total units)


def run_id_new() -> str:
    return f"{timezone.now():%Y%m%dT%H%M%SZ}_{uuid.uuid4().hex[:8]}"


def run_id_check(run_id: str) -> str:
    if not RUN_ID_PATTERN.match(run_id) or run_id in (".", ".."):
        raise InputError(f"run id {run_id!r}: use letters, digits, '.', '_' and '-' (at most 100)")
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
) -> Run:
    """A queued run with its configuration frozen: judges, system, options and the versions of its inputs."""
    run_id = run_id_check(run_id) if run_id else run_id_new()
    if len(title) > 300:  # a title made of long file names ("<a.jsonl> vs <b.jsonl>"); a user's is checked before
        title = title[:299] + "…"
    if Run.objects.filter(run_id=run_id).exists():
        raise InputError(f"run id {run_id!r} is already taken")
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
    )


# The columns a planned unit sets; every other column takes its field's default, converted once per stage.
_PLANNED_FIELDS = ("uuid", "key", "purpose", "case_id", "criterion_id", "judge_id", "system_id", "order", "payload")


def _units_create(run: Run, stage: int, specs: Iterable[UnitSpec]) -> int:
    """Create the units a plan gives, a batch at a time (a plan may be an iterator over 100,000 cases:
    never a list of every unit, nor a model instance per unit alive at once), and each unit once: a start
    replayed after a crash inserts nothing twice (ON CONFLICT on the run's unit key). A batch is one
    executemany with the columns every unit shares converted once (Django's bulk_create converted all 35
    columns of every row, a second of CPU for 500 units). Returns how many units the plan gave."""
    connection = connections[Judgment.objects.db]
    fields = [field for field in Judgment._meta.concrete_fields if not field.primary_key]
    now = timezone.now()
    prototype = Judgment(run=run, stage=stage, created_at=now, updated_at=now)
    shared = [field.get_db_prep_save(getattr(prototype, field.attname), connection) for field in fields]
    position = {field.attname: i for i, field in enumerate(fields) if field.attname in _PLANNED_FIELDS}
    uuid_field, payload_field = Judgment._meta.get_field("uuid"), Judgment._meta.get_field("payload")
    quote = connection.ops.quote_name
    unique = ", ".join(quote(Judgment._meta.get_field(name).column) for name in ("run", "key"))
    sql = (
        f"INSERT INTO {quote(Judgment._meta.db_table)} ({', '.join(quote(field.column) for field in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))}) ON CONFLICT ({unique}) DO NOTHING"
    )

    def row(spec: UnitSpec) -> list:
        values = list(shared)
        for name, value in (
            ("uuid", uuid_field.get_db_prep_save(uuid.uuid4(), connection)), ("key", spec.key), ("purpose", spec.purpose),
            ("case_id", spec.case_id), ("criterion_id", spec.criterion_id), ("judge_id", spec.judge_id),
            ("system_id", spec.system_id), ("order", spec.order), ("payload", payload_field.get_db_prep_save(spec.payload, connection)),
        ):
            values[position[name]] = value
        return values

    planned = 0
    with connection.cursor() as cursor:
        for batch in batched(specs):
            cursor.executemany(sql, [row(spec) for spec in batch])
            planned += len(batch)
    return planned


def _stage_plan(handler, run: Run, stage: int) -> int | None:
    """Plan `stage` and create its units: how many, or None when the run has no more stages. A plan that
    fails while its units are created (it may be an iterator) leaves none of them."""
    specs = handler.plan(run, stage)
    if specs is None:
        return None
    with transaction.atomic():
        return _units_create(run, stage, specs)


def run_enqueue(*, run: Run) -> None:
    """Start a Celery run once the transaction that created it commits."""
    transaction.on_commit(lambda: taskqueue.send(taskqueue.START_RUN, run.pk))


def run_start(*, run_pk: int) -> bool:
    """queued -> running, with the first stage's units created and dispatched. Idempotent."""
    run = Run.objects.get(pk=run_pk)
    handler = handler_for(run.kind)
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_pk)
        if run.status != RunStatus.QUEUED:
            return False
        run.status = RunStatus.RUNNING
        run.started_at = timezone.now()
        if handler.sequential:
            run.save()
            if run.executor == Executor.CELERY:
                transaction.on_commit(lambda: taskqueue.send(taskqueue.EXECUTE_SEQUENTIAL_RUN, run.pk))
            return True
        try:
            planned = _stage_plan(handler, run, 0) or 0
        except (InputError, RunFailed) as exc:
            run.status = RunStatus.FAILED
            run.error = str(exc)
            run.finished_at = timezone.now()
            run.save()
            return True
        run.total_units = planned
        run.save()
        if planned and run.executor == Executor.CELERY:
            transaction.on_commit(lambda: run_dispatch(run_pk=run.pk))
    if not planned:
        run_advance(run_pk=run_pk)
    return True


def batch_size_for(run: Run, pending: int) -> int:
    """How many units one task claims and judges: enough to spread the round trips (claim, record, count)
    over several judgments, few enough that every judge slot still has work until the end (about four
    batches per slot of the judge's limit)."""
    slots = max(1, run.judge.max_concurrency if run.judge_id else 4)
    return max(1, min(settings.UNIT_BATCH_SIZE, -(-pending // (4 * slots))))


def run_dispatch(*, run_pk: int, only: list[int] | None = None) -> int:
    """Send the pending units of the run's current stage (or of `only`), a batch of ids per task."""
    execute_judgments = taskqueue.task(taskqueue.EXECUTE_JUDGMENTS)
    run = Run.objects.select_related("judge").get(pk=run_pk)
    if run.status != RunStatus.RUNNING or run.executor != Executor.CELERY:
        return 0
    units = Judgment.objects.filter(run_id=run_pk, stage=run.stage, status=UnitStatus.PENDING)
    if only is not None:
        units = units.filter(pk__in=only)
    pending = units.count()
    if not pending:
        return 0
    units.update(enqueued_at=timezone.now())
    size = batch_size_for(run, pending)
    sent = 0
    # The ids are read a page at a time (a run of 100,000 units is not one list of them).
    with execute_judgments.app.producer_or_acquire() as producer:
        for batch in batched(ids_in_order(units), size):
            # The task's time limits grow with its batch: its units are judged one after another.
            execute_judgments.apply_async(
                (batch,),
                producer=producer,
                soft_time_limit=settings.UNIT_SOFT_TIME_LIMIT * len(batch),
                time_limit=settings.UNIT_HARD_TIME_LIMIT * len(batch),
            )
            sent += len(batch)
    return sent


def judgments_claim(*, ids: list[int], worker: str) -> tuple[uuid.UUID, list[Judgment]]:
    """Claim the units of `ids` that are still free in one conditional UPDATE (one token for the batch);
    return the token and the units this caller now holds, with what executing them reads (the run and its
    inputs once for the batch, not once per unit)."""
    token = uuid.uuid4()
    now = timezone.now()
    # The lease covers the batch judged one unit after another; a dead process on this host is found at once.
    lease = timezone.timedelta(seconds=settings.UNIT_HARD_TIME_LIMIT * len(ids) + 60)
    with write_turn():
        claimed = Judgment.objects.filter(
            Q(status=UnitStatus.PENDING) | Q(status=UnitStatus.CLAIMED, lease_expires_at__lt=now),
            pk__in=ids,
            run__status=RunStatus.RUNNING,
        ).update(status=UnitStatus.CLAIMED, claim_token=token, claimed_by=worker, lease_expires_at=now + lease)
    if not claimed:
        return token, []
    units = list(Judgment.objects.filter(pk__in=ids, claim_token=token).select_related("case", "criterion").order_by("id"))
    _share_inputs(units)
    return token, units


def _share_inputs(units: list[Judgment]) -> None:
    """The batch's runs (with their test set, rubric and prompt), judges and systems, read once for the
    batch and shared by its units, and one object per criterion: what a handler caches on them (the
    prompt, the parsed rubric) is computed once, and the claim's SELECT does not carry a copy of the run,
    its inputs and its judge in every row (on PostgreSQL a third of the claim's cost)."""
    runs = Run.objects.select_related("testset", "rubric", "prompt").in_bulk({unit.run_id for unit in units})
    judges = Judge.objects.in_bulk({unit.judge_id for unit in units if unit.judge_id})
    systems = System.objects.in_bulk({unit.system_id for unit in units if unit.system_id})
    criteria: dict[int, object] = {}
    for unit in units:
        unit.run = runs[unit.run_id]
        unit.judge = judges.get(unit.judge_id)
        unit.system = systems.get(unit.system_id)
        if unit.criterion is not None:
            unit.criterion = criteria.setdefault(unit.criterion_id, unit.criterion)


def judgment_claim(*, judgment_id: int, worker: str) -> uuid.UUID | None:
    token = uuid.uuid4()
    now = timezone.now()
    lease = timezone.timedelta(seconds=settings.UNIT_HARD_TIME_LIMIT + 60)
    claimed = (
        Judgment.objects.filter(
            Q(status=UnitStatus.PENDING) | Q(status=UnitStatus.CLAIMED, lease_expires_at__lt=now),
            pk=judgment_id,
            run__status=RunStatus.RUNNING,
        ).update(status=UnitStatus.CLAIMED, claim_token=token, claimed_by=worker, lease_expires_at=now + lease)
    )
    return token if claimed else None


# While a batch is judged, the run's status is read again before a unit when this long has passed since
# the last look: a cancelled or failed run stops its workers within a unit or two, at no cost per
# judgment when the judge answers fast.
RUN_STATUS_CHECK_SECONDS = 0.25


class _RunWatch:
    def __init__(self, run_pk: int):
        self.run_pk = run_pk
        self.checked = time.monotonic()
        self.running = True

    def still_running(self) -> bool:
        if self.running and time.monotonic() - self.checked >= RUN_STATUS_CHECK_SECONDS:
            self.running = Run.objects.filter(pk=self.run_pk, status=RunStatus.RUNNING).exists()
            self.checked = time.monotonic()
        return self.running


def claims_give_back(*, pks: list[int], token: uuid.UUID) -> None:
    """Units claimed and not started: pending again if their run goes on, else cancelled like its other
    pending units (none stays claimed)."""
    if not pks:
        return
    held = Judgment.objects.filter(pk__in=pks, claim_token=token, status=UnitStatus.CLAIMED)
    held.filter(run__status=RunStatus.RUNNING).update(status=UnitStatus.PENDING, claim_token=None, claimed_by="", lease_expires_at=None)
    held.update(status=UnitStatus.CANCELLED, claim_token=None, lease_expires_at=None)


def unit_judge(unit: Judgment) -> tuple[UnitResult, str | None]:
    """Judge one claimed unit (outside any transaction): its result, and the run's failure if the error
    fails the whole run."""
    handler = handler_for(unit.run.kind)
    run_failure = None
    try:
        result = handler.execute(unit)
    except (RunFailed, StructuredOutputUnsupported) as exc:
        run_failure = str(exc)
        result = UnitResult.failure(run_failure)
    except JudgeRejected as exc:
        # A refused key, a forbidden or unknown model: every other unit would be refused the same way. A 400
        # (a prompt past the model's context, say) is this unit's own failure.
        if exc.status in RUN_FATAL_STATUSES:
            run_failure = str(exc)
        result = UnitResult.failure(str(exc), attempts=min(exc.attempts, 32767))
    except JudgeUnreachable as exc:
        # A server no unit of this run has reached (a wrong base URL, a server that is down): every other unit
        # would wait through the same retries to fail the same way, so the run fails now, and a command exits 2
        # (CONTRACT §3), not 1 as an invalid run would. Once the server has answered in this run, a lost
        # connection (a restart) fails only its unit, and a panel leaves an unreachable judge out.
        if not handler.leaves_out_failed_judges and not endpoint_has_replied(unit=unit):
            run_failure = str(exc)
        result = UnitResult.failure(str(exc), attempts=min(exc.attempts, 32767))
    except JudgeError as exc:
        result = UnitResult.failure(str(exc), attempts=min(exc.attempts, 32767))
    except soft_time_limit():
        raise
    except Exception as exc:  # noqa: BLE001 - a bug must fail this unit visibly, not loop through recovery
        log.exception("unit %s of run %s failed", unit.key, unit.run.run_id)
        result = UnitResult.failure(f"internal error: {type(exc).__name__}: {exc}")
    # When the judgment finished, not when its batch is recorded (a command's batch of 64 waits seconds).
    result.fields.setdefault("finished_at", timezone.now())
    return result, run_failure


def endpoint_has_replied(*, unit: Judgment) -> bool:
    """Whether the unit's judge (or system) has answered any recorded unit of its run, usable or not."""
    answered = Judgment.objects.filter(run_id=unit.run_id, judge_id=unit.judge_id, system_id=unit.system_id)
    return answered.filter(Q(status=UnitStatus.DONE) | ~Q(raw_reply="")).exists()


def judgment_execute(*, judgment_id: int, worker: str | None = None) -> bool:
    """Claim one unit, judge it, record it. False when the unit was not this caller's to do."""
    return judgments_execute(ids=[judgment_id], worker=worker) > 0


# Results are recorded at least this often while a batch is judged, so a slow judge's progress shows.
RECORD_EVERY_SECONDS = 1.0
LANE_UNITS_AT_ONCE = 4  # a command's batch: this many units per lane (_execute_units)


def judgments_execute(*, ids: list[int], worker: str | None = None) -> int:
    """Claim the units of `ids` in one round trip, judge them one after another, record them in batches.
    Returns how many units this caller claimed. A unit another caller holds is skipped; a unit the soft
    time limit cut off fails with the reason, and the units after it go back to pending and are sent again.

    When a call finds every slot of its judge busy (more worker processes than the judge's limit), the
    units after it go back to pending and are sent again at once, for the processes that have nothing to
    judge: this one would hold them while it waits for its slot."""
    token, units = judgments_claim(ids=ids, worker=worker or worker_identity())
    done: list[tuple[Judgment, UnitResult]] = []
    run_failure = None
    last_record = time.monotonic()
    watch = _RunWatch(units[0].run_id) if units else None
    end = len(units)  # the units after `end` were given back
    index = 0

    def give_back_the_rest() -> None:
        nonlocal end
        rest = [u.pk for u in units[index + 1 : end]]
        if not rest:
            return
        try:
            claims_give_back(pks=rest, token=token)
        except Exception:  # noqa: BLE001 - the units are still this caller's: it judges them itself
            log.exception("giving back %d units of run %s failed", len(rest), units[0].run_id)
            return
        end = index + 1
        try:
            run_dispatch(run_pk=units[0].run_id, only=rest)
        except Exception:  # noqa: BLE001 - pending without a message: recovery sends a stalled run's units again
            log.exception("sending %d given-back units of run %s failed", len(rest), units[0].run_id)

    with before_waiting_for_a_slot(give_back_the_rest):
        while index < end:
            unit = units[index]
            if index and not watch.still_running():
                judgments_record(results=done, token=token)
                claims_give_back(pks=[u.pk for u in units[index:end]], token=token)
                return len(units)
            try:
                result, run_failure = unit_judge(unit)
            except soft_time_limit():
                limit = settings.UNIT_SOFT_TIME_LIMIT
                done.append((unit, UnitResult.failure(f"time limit of {limit}s exceeded")))
                judgments_record(results=done, token=token)
                give_back_the_rest()
                return len(units)
            done.append((unit, result))
            if run_failure:
                break
            if time.monotonic() - last_record >= RECORD_EVERY_SECONDS:
                judgments_record(results=done, token=token)
                done, last_record = [], time.monotonic()
            index += 1
    judgments_record(results=done, token=token)
    if run_failure:
        run_fail(run_pk=units[0].run_id, error=run_failure)
    return len(units)


def judgment_record(*, unit: Judgment, token: uuid.UUID, result: UnitResult) -> bool:
    """Write a unit's result, only if this caller still holds its claim; then advance the run if the
    stage is complete."""
    return judgments_record(results=[(unit, result)], token=token) > 0


_RECORD_FIELDS = ("status", "claim_token", "lease_expires_at", "finished_at")


def _units_write(units: list[Judgment], names: list[str]) -> None:
    """One parametrised UPDATE per row, sent as one executemany: Django's bulk_update builds a CASE per
    field per row, and compiling it cost more than the judge call it records."""
    connection = connections[Judgment.objects.db]
    fields = [Judgment._meta.get_field(name) for name in names]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields)
    sql = f"UPDATE {quote(Judgment._meta.db_table)} SET {assignments} WHERE {quote(Judgment._meta.pk.column)} = %s"
    rows = [[field.get_db_prep_save(getattr(unit, field.attname), connection) for field in fields] + [unit.pk] for unit in units]
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def judgments_record(*, results: list[tuple[Judgment, UnitResult]], token: uuid.UUID) -> int:
    """Write the results of the units this caller still holds under `token` (the others were released
    and are someone else's now), run each handler's side effects, move the run's counters: one
    transaction and a handful of statements for the whole batch. Then advance each run whose stage is
    complete. Returns how many results were written."""
    if not results:
        return 0
    now = timezone.now()
    with write_turn(), transaction.atomic():
        # Locks the rows (PostgreSQL; SQLite's IMMEDIATE transaction holds the write lock already), so a
        # recovery cannot release a unit between this check and the write.
        held = set(
            Judgment.objects.select_for_update()
            .filter(pk__in=[unit.pk for unit, _ in results], claim_token=token, status=UnitStatus.CLAIMED)
            .values_list("pk", flat=True)
        )
        written = [(unit, result) for unit, result in results if unit.pk in held]
        if not written:
            return 0
        fields = set(_RECORD_FIELDS)
        for unit, result in written:
            unit.status = UnitStatus.DONE if result.ok else UnitStatus.FAILED
            unit.claim_token, unit.lease_expires_at, unit.finished_at = None, None, now
            # A reply is the judge's (or the system's) text: a NUL or a lone surrogate in it must not keep
            # the batch from being recorded.
            result.fields = storable(result.fields)
            for name, value in result.fields.items():
                setattr(unit, name, value)
            fields.update(result.fields)
        _units_write([unit for unit, _ in written], sorted(fields))
        counts: dict[tuple[int, int], list[int]] = {}
        for unit, result in written:
            handler_for(unit.run.kind).on_unit_done(unit, result)
            counts.setdefault((unit.run_id, unit.stage), [0, 0])[0 if result.ok else 1] += 1
        for (run_pk, _stage), (ok, failed) in counts.items():
            Run.objects.filter(pk=run_pk).update(done_units=F("done_units") + ok, failed_units=F("failed_units") + failed, updated_at=now)
    for run_pk, stage in counts:
        if not Judgment.objects.filter(run_id=run_pk, stage=stage, status__in=ACTIVE_UNIT_STATUSES).exists():
            run_advance(run_pk=run_pk)
    return len(written)


def run_advance(*, run_pk: int) -> None:
    """When the current stage has no active unit: plan the next stage, or finalize the run."""
    while True:
        with transaction.atomic():
            run = Run.objects.select_for_update().get(pk=run_pk)
            if run.status != RunStatus.RUNNING:
                return
            if Judgment.objects.filter(run=run, stage=run.stage, status__in=ACTIVE_UNIT_STATUSES).exists():
                return
            handler = handler_for(run.kind)
            try:
                planned = _stage_plan(handler, run, run.stage + 1)
            except (InputError, RunFailed) as exc:
                run.status, run.error, run.finished_at = RunStatus.FAILED, str(exc), timezone.now()
                run.save()
                return
            if planned is None:
                break
            run.stage += 1
            run.total_units += planned
            run.save()
            if planned:
                if run.executor == Executor.CELERY:
                    transaction.on_commit(lambda: run_dispatch(run_pk=run_pk))
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
    run_finish(run_pk=run_pk, status=status, report=report, error=error, stage=stage)


def run_finish(*, run_pk: int, status: str, report: dict | None, error: str = "", stage: int | None = None) -> bool:
    filters = {"pk": run_pk, "status": RunStatus.RUNNING}
    if stage is not None:
        filters["stage"] = stage
    now = timezone.now()
    return bool(
        Run.objects.filter(**filters).update(status=status, report=report, error=error, finished_at=now, updated_at=now)
    )


def _units_cancel(run_pk: int) -> None:
    Judgment.objects.filter(run_id=run_pk, status=UnitStatus.PENDING).update(status=UnitStatus.CANCELLED)


def run_fail(*, run_pk: int, error: str) -> None:
    now = timezone.now()
    updated = Run.objects.filter(pk=run_pk, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).update(
        status=RunStatus.FAILED, error=error, finished_at=now, updated_at=now
    )
    if updated:
        _units_cancel(run_pk)


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
        _units_cancel(run.pk)
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


# --- Sequential runs (one task holds the whole run) ------------------------------------------------------


# A sequential run's holder renews a short lease while it works, so that when its machine dies another
# machine's worker takes the run over within minutes (a lease as long as the run's time limit would be hours).
RUN_LEASE_SECONDS = 300


def _lease_heartbeat(run_pk: int, token: uuid.UUID, stop: threading.Event) -> None:
    try:
        while not stop.wait(RUN_LEASE_SECONDS / 5):
            Run.objects.filter(pk=run_pk, claim_token=token).update(
                lease_expires_at=timezone.now() + timezone.timedelta(seconds=RUN_LEASE_SECONDS)
            )
    finally:
        connections.close_all()


def run_sequential_execute(*, run_pk: int, worker: str | None = None, progress: Progress | None = None) -> bool:
    token = uuid.uuid4()
    now = timezone.now()
    lease = timezone.timedelta(seconds=RUN_LEASE_SECONDS)
    claimed = Run.objects.filter(
        Q(claim_token__isnull=True) | Q(lease_expires_at__lt=now), pk=run_pk, status=RunStatus.RUNNING
    ).update(claim_token=token, claimed_by=worker or worker_identity(), lease_expires_at=now + lease)
    if not claimed:
        return False
    run = Run.objects.get(pk=run_pk)
    stop = threading.Event()
    threading.Thread(target=_lease_heartbeat, args=(run_pk, token, stop), name="run-lease", daemon=True).start()
    try:
        handler_for(run.kind).run_sequential(run, progress=progress)
    except (RunFailed, JudgeError, InputError) as exc:
        run_fail(run_pk=run_pk, error=str(exc))
    except soft_time_limit():
        run_fail(run_pk=run_pk, error=f"time limit of {settings.RUN_SOFT_TIME_LIMIT}s exceeded")
    except Exception as exc:  # noqa: BLE001
        log.exception("run %s failed", run.run_id)
        run_fail(run_pk=run_pk, error=f"internal error: {type(exc).__name__}: {exc}")
    finally:
        stop.set()
        Run.objects.filter(pk=run_pk, claim_token=token).update(claim_token=None, claimed_by="", lease_expires_at=None)
    return True


# --- In the calling process (the CLI) -------------------------------------------------------------------


def run_execute_inline(*, run: Run, concurrency: int = 1, progress: Progress | None = None) -> Run:
    """Run every stage in this process: the same claims and records as a worker, on a thread pool.

    With concurrency 1 everything happens in the calling thread (and its database transaction). When the
    command is asked to stop (judgeapp/judging/shutdown.py) no new unit is claimed; the units in flight
    finish and are recorded; then the run is failed "interrupted by SIGTERM before it finished" and
    `shutdown.Interrupted` is raised. A run that finished meanwhile is returned as it is.
    """
    _stop_if_asked(run)
    handler = handler_for(run.kind)
    _preload(handler)
    run_start(run_pk=run.pk)
    run.refresh_from_db()
    if handler.sequential:
        run_sequential_execute(run_pk=run.pk, progress=progress)
        run.refresh_from_db()
        if not run.is_finished:
            _stop_if_asked(run)
        return run
    worker = worker_identity()
    while True:
        run.refresh_from_db()
        if run.is_finished:
            return run
        _stop_if_asked(run)
        # As many lanes as there are units to start with, up to the concurrency (a count that stops there).
        lanes = Judgment.objects.filter(run=run, stage=run.stage, status=UnitStatus.PENDING)[:concurrency].count()
        if not lanes:
            # Nothing pending and the run is not finished: the stage's last units are claimed elsewhere, or
            # nothing advanced it yet.
            run_advance(run_pk=run.pk)
            run.refresh_from_db()
            if not run.is_finished and not Judgment.objects.filter(run=run, stage=run.stage, status=UnitStatus.PENDING).exists():
                return run
            continue
        _execute_units(worker=worker, concurrency=concurrency, lanes=lanes, run=run, progress=progress)


def _preload(handler) -> None:
    """Import what the run will need (the judge client's library, the report's) in a thread, while the
    units are planned and the first ones judged: a command starts without them (bench/startup.py)."""

    threading.Thread(target=modules_preload, args=([handler],), name="judgeapp-preload", daemon=True).start()


def modules_preload(handlers) -> None:
    """Import the judge client's library and what these run kinds' reports need (`preload_modules`)."""
    openai_preload()
    for name in sorted({name for handler in handlers for name in handler.preload_modules}):
        importlib.import_module(name)


def _stop_if_asked(run: Run) -> None:
    """Where stopping is safe (no claim held, no transaction open): fail the run and raise, if asked."""
    signum = shutdown.requested()
    if signum is not None:
        run_interrupt(run_pk=run.pk, signal_name=shutdown.requested_name())
        raise shutdown.Interrupted(signum)


class _Claims:
    """The pending units of a run's stage, claimed from the database a batch at a time (the next ids, then
    one claim for them) by whichever lane runs out of work first, then handed out one by one. Nothing is
    held of the units not yet claimed: a run of 100,000 units is not a list of their ids here."""

    def __init__(self, run: Run, size: int):
        self.watch = _RunWatch(run.pk)
        self.pending = Judgment.objects.filter(run_id=run.pk, stage=run.stage, status=UnitStatus.PENDING)
        self.size = size
        self.ready: collections.deque[tuple[Judgment, uuid.UUID]] = collections.deque()
        self.lock = threading.Lock()
        self.stopped = False

    def next(self, worker: str) -> tuple[Judgment, uuid.UUID] | None:
        with self.lock:
            if self.stopped or shutdown.requested() is not None or not self.watch.still_running():
                return None
            while not self.ready:
                batch = list(self.pending.order_by("id").values_list("pk", flat=True)[: self.size])
                if not batch:
                    return None
                # Another process may claim some of them first: the claim takes what is still free, and the
                # next read finds the pending units after them.
                token, units = judgments_claim(ids=batch, worker=worker)
                self.ready.extend((unit, token) for unit in units)
            return self.ready.popleft()

    def release(self) -> None:
        """Give back what was claimed and not started (a stop request, a failed run)."""
        with self.lock:
            self.stopped = True
            left, self.ready = list(self.ready), collections.deque()
        by_token: dict[uuid.UUID, list[int]] = {}
        for unit, token in left:
            by_token.setdefault(token, []).append(unit.pk)
        for token, pks in by_token.items():
            claims_give_back(pks=pks, token=token)


class _Recorder:
    """Results wait here and are written a batch at a time (judgments_record), by the lane that fills the
    batch, while the other lanes go on judging."""

    def __init__(self, run: Run, size: int, progress: Progress | None):
        self.run_pk = run.pk
        self.finished = run.done_units + run.failed_units
        self.size = size
        self.progress = progress
        self.buffer: list[tuple[Judgment, UnitResult, uuid.UUID]] = []
        self.lock = threading.Lock()
        self.writing = threading.Lock()
        self.last = time.monotonic()
        self.run_failure: str | None = None

    def add(self, unit: Judgment, result: UnitResult, token: uuid.UUID, run_failure: str | None) -> None:
        with self.lock:
            self.buffer.append((unit, result, token))
            if run_failure and not self.run_failure:
                self.run_failure = run_failure
            due = len(self.buffer) >= self.size or time.monotonic() - self.last >= RECORD_EVERY_SECONDS or run_failure
        if due:
            self.flush()

    def flush(self) -> None:
        with self.writing:
            with self.lock:
                items, self.buffer, self.last = self.buffer, [], time.monotonic()
            if not items:
                return
            by_token: dict[uuid.UUID, list[tuple[Judgment, UnitResult]]] = {}
            for unit, result, token in items:
                by_token.setdefault(token, []).append((unit, result))
            for token, results in by_token.items():
                judgments_record(results=results, token=token)
            self.finished += len(items)
            if self.progress:
                total = Run.objects.filter(pk=self.run_pk).values_list("total_units", flat=True).first() or 0
                self.progress(self.finished, total)


def _forget_queries() -> None:
    """With DEBUG (a developer's command) Django keeps the last 9,000 statements of each connection: a lane's
    would hold tens of megabytes of prompts. A capture in progress (force_debug_cursor: a test, a bench)
    keeps them."""
    connection = connections["default"]
    if connection.queries_logged and not connection.force_debug_cursor and len(connection.queries_log) > 100:
        connection.queries_log.clear()


def _execute_units(*, worker: str, concurrency: int, lanes: int, run: Run, progress: Progress | None) -> None:
    """Claim, judge and record the pending units of the run's stage on `lanes` threads (in the calling
    thread when the concurrency is 1), claiming and recording in batches; a stop request ends the
    claiming, not the units in flight (what was claimed and not started goes back to pending)."""
    # No other process judges this run's units, so nobody waits on a larger batch: four units a lane are
    # claimed in one round trip and recorded in one transaction (64 for 16 lanes: 15% more judgments a
    # second than 16 at zero latency, bench/overhead.py); the recorder still writes every
    # RECORD_EVERY_SECONDS, so progress moves as often with a slow judge.
    size = max(settings.UNIT_BATCH_SIZE, LANE_UNITS_AT_ONCE * lanes)
    claims = _Claims(run, size)
    recorder = _Recorder(run, size, progress)

    def lane(identity: str) -> None:
        while recorder.run_failure is None:
            _forget_queries()
            claimed = claims.next(identity)
            if claimed is None:
                return
            unit, token = claimed
            try:
                result, run_failure = unit_judge(unit)
            except soft_time_limit():  # not raised in process; kept for symmetry with the worker's path
                result, run_failure = UnitResult.failure(f"time limit of {settings.UNIT_SOFT_TIME_LIMIT}s exceeded"), None
            recorder.add(unit, result, token, run_failure)

    def finish() -> None:
        claims.release()
        recorder.flush()
        if recorder.run_failure:
            run_fail(run_pk=run.pk, error=recorder.run_failure)

    if concurrency <= 1:
        try:
            lane(worker)
        finally:
            finish()
        return

    errors: list[BaseException] = []

    def threaded_lane() -> None:
        try:
            lane(f"{worker}:{threading.get_ident()}")
        except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=threaded_lane, daemon=True) for _ in range(lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    finish()
    if errors:
        raise errors[0]


# --- Recovery -------------------------------------------------------------------------------------------


def runs_recover(*, redispatch_pending: bool = False) -> dict:
    """Put a crashed worker's work back in the queue.

    - units claimed by a dead process (same host) or whose lease ran out go back to pending;
    - a sequential run whose holder died is sent again;
    - queued Celery runs are started (their start message may have been lost);
    - pending units are sent again: all of them when `redispatch_pending` (a worker starting: the broker
      may have lost what a killed worker had prefetched), else only those of runs that stalled;
    - a run whose stage has no active unit left is advanced (a crash between the last unit and the report).
    Sending a unit twice is harmless: only one claim succeeds.
    """
    execute_sequential_run, start_run = taskqueue.task(taskqueue.EXECUTE_SEQUENTIAL_RUN), taskqueue.task(taskqueue.START_RUN)

    now = timezone.now()
    counts = {"released": 0, "dispatched": 0, "started": 0, "advanced": 0, "resumed": 0}
    in_flight = Run.objects.filter(status=RunStatus.RUNNING)

    released_runs: set[int] = set()
    for unit in Judgment.objects.filter(status=UnitStatus.CLAIMED, run__status=RunStatus.RUNNING).only(
        "pk", "run_id", "claim_token", "claimed_by", "lease_expires_at"
    ):
        if (unit.lease_expires_at and unit.lease_expires_at < now) or claimer_is_dead(unit.claimed_by):
            if Judgment.objects.filter(pk=unit.pk, claim_token=unit.claim_token, status=UnitStatus.CLAIMED).update(
                status=UnitStatus.PENDING, claim_token=None, claimed_by="", lease_expires_at=None
            ):
                counts["released"] += 1
                released_runs.add(unit.run_id)

    for run in in_flight.filter(claim_token__isnull=False).only("pk", "claimed_by", "lease_expires_at", "claim_token", "executor"):
        if (run.lease_expires_at and run.lease_expires_at < now) or claimer_is_dead(run.claimed_by):
            if Run.objects.filter(pk=run.pk, claim_token=run.claim_token).update(claim_token=None, claimed_by="", lease_expires_at=None):
                if run.executor == Executor.CELERY:
                    execute_sequential_run.delay(run.pk)
                    counts["resumed"] += 1

    for run in Run.objects.filter(status=RunStatus.QUEUED, executor=Executor.CELERY).only("pk", "created_at"):
        if redispatch_pending or run.created_at < now - timezone.timedelta(seconds=60):
            start_run.delay(run.pk)
            counts["started"] += 1

    stall_cutoff = now - timezone.timedelta(seconds=STALL_SECONDS)
    for run in in_flight.filter(executor=Executor.CELERY):
        handler = handler_for(run.kind)
        if handler.sequential:
            if run.claim_token is None and (redispatch_pending or run.updated_at < stall_cutoff):
                execute_sequential_run.delay(run.pk)
                counts["resumed"] += 1
            continue
        active = Judgment.objects.filter(run=run, stage=run.stage, status__in=ACTIVE_UNIT_STATUSES)
        if not active.exists():
            run_advance(run_pk=run.pk)
            counts["advanced"] += 1
        elif redispatch_pending or run.pk in released_runs or run.updated_at < stall_cutoff:
            # All the pending units, not only the released ones: a killed worker's prefetched messages
            # may be lost with it (sending a unit twice is harmless, one claim wins).
            counts["dispatched"] += run_dispatch(run_pk=run.pk)
    return counts
