"""A unit's work: claim a batch of units (one conditional UPDATE, one token, a lease), judge each one, record
the results where the claim still holds, give back what was not started."""

from __future__ import annotations

import logging
import time
import uuid

from django.conf import settings
from django.db import connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from judgeapp.judging.client import JudgeError, JudgeRejected, JudgeUnreachable, StructuredOutputUnsupported
from judgeapp.judging.limiters import before_waiting_for_a_slot
from judgeapp.judging.runkind import RunFailed, UnitResult, handler_for
from judgeapp.judging.runs.lifecycle import run_advance, run_dispatch, run_dispatch_next, run_fail
from judgeapp.judging.text import storable
from judgeapp.judging.workers import soft_time_limit, worker_identity
from judgeapp.judging.writeturn import write_turn
from judgeapp.models import ACTIVE_UNIT_STATUSES, Executor, Judge, Judgment, Run, RunStatus, System, UnitStatus

log = logging.getLogger(__name__)


RUN_FATAL_STATUSES = (401, 403, 404)

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
    executors = {unit.run_id: unit.run.executor for unit, _ in written}
    for run_pk, stage in counts:
        if not Judgment.objects.filter(run_id=run_pk, stage=stage, status__in=ACTIVE_UNIT_STATUSES).exists():
            run_advance(run_pk=run_pk)
        elif executors[run_pk] == Executor.CELERY:
            # Room opened in the run's window: its next units go to the queue, behind those of the runs
            # started meanwhile (lifecycle.run_dispatch).
            run_dispatch_next(run_pk=run_pk)
    return len(written)
