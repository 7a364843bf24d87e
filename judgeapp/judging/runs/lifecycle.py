"""A run's life: create, start (plan a stage's units), dispatch them to the workers, advance to the next
stage, finalize, fail, cancel, interrupt."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from judgeapp.judging import taskqueue
from judgeapp.judging.audit import audit_log_create
from judgeapp.judging.batches import batched, ids_in_order
from judgeapp.judging.client import call_deadline_seconds
from judgeapp.judging.endpoints import endpoint_config
from judgeapp.judging.errors import InputError
from judgeapp.judging.runkind import RunFailed, UnitSpec, handler_for
from judgeapp.judging.workers import worker_identity
from judgeapp.models import ACTIVE_UNIT_STATUSES, AuditLog, Executor, Judgment, Run, RunStatus, UnitStatus

log = logging.getLogger(__name__)


RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")

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
                transaction.on_commit(lambda: run_task_send(run=run, task=taskqueue.EXECUTE_SEQUENTIAL_RUN))
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
    longest = max(call_deadline_seconds(endpoint_config(e)) for e in (run.judge, run.system) if e is not None)
    soft = min(ceiling, (calls + 1) * longest)
    return soft, soft + grace


def run_dispatch(*, run_pk: int, only: list[int] | None = None) -> int:
    """Send the pending units of the run's current stage (or of `only`), a batch of ids per task; how many
    units were sent. With the broker down the rest stay pending and the run is marked `awaiting_broker`: the
    workers' recovery sends them when the broker is back (never a unit's failure, whoever dispatched)."""
    run = Run.objects.select_related("judge", "system").get(pk=run_pk)
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
    soft, hard = unit_time_limits(run)
    sent = 0
    try:
        # One broker connection for the run's batches; the ids are read a page at a time (a run of 100,000
        # units is not one list of them).
        with taskqueue.producer() as producer:
            for batch in batched(ids_in_order(units), size):
                # The task's time limits grow with its batch: its units are judged one after another.
                taskqueue.send(
                    taskqueue.EXECUTE_JUDGMENTS,
                    batch,
                    producer=producer,
                    soft_time_limit=soft * len(batch),
                    time_limit=hard * len(batch),
                )
                sent += len(batch)
    except taskqueue.BrokerDown as exc:
        _broker_wait(run, f"{pending - sent} of {pending} units not sent", exc)
    return sent


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
