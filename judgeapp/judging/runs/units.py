"""A unit's work: claim a batch of units (one conditional UPDATE, one token, a lease renewed while they are
judged), judge each one, record the results where the claim still holds, give back what was not started. A
database that refuses meanwhile is waited for (judging/outages.py), never counted against the judge."""

from __future__ import annotations

import logging
import time
import uuid
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from judgeapp.judging.costs import budget_reached, unit_cost
from judgeapp.judging.errors import ServiceUnavailable
from judgeapp.judging.judge_errors import JudgeError, JudgeRejected, JudgeUnreachable, StructuredOutputUnsupported
from judgeapp.judging.leases import UNIT, Heartbeat
from judgeapp.judging.limiters import before_waiting_for_a_slot
from judgeapp.judging.outages import is_service_error, through_outage
from judgeapp.judging.runkind import RunFailed, UnitResult, handler_for
from judgeapp.judging.runs.lifecycle import run_advance, run_budget_stop, run_dispatch, run_dispatch_next, run_fail
from judgeapp.judging.text import storable
from judgeapp.judging.workers import soft_time_limit, worker_identity
from judgeapp.judging.writeturn import write_turn
from judgeapp.models import ACTIVE_UNIT_STATUSES, Executor, Judge, Judgment, Run, RunStatus, System, UnitStatus

log = logging.getLogger(__name__)


RUN_FATAL_STATUSES = (401, 403, 404)


def judgments_claim(*, ids: list[int], worker: str) -> tuple[uuid.UUID, list[Judgment]]:
    """Claim the units of `ids` that are still free in one conditional UPDATE (one token for the batch, a lease
    of LEASE_SECONDS that its holder renews while it judges them: `judgments_execute`); return the token and the
    units this caller now holds, with what executing them reads (the run and its inputs once for the batch,
    not once per unit). The database out of reach is waited for (judging/outages.py)."""
    # One token for every try: a claim whose answer was lost takes again what it took (leases.Lease.take).
    token, claimed = through_outage(_units_take, ids, worker, UNIT.new_claim(worker), what=f"claiming {len(ids)} units")
    if not claimed:
        return token, []
    units = through_outage(_units_claimed, ids, token, what=f"reading {claimed} claimed units")
    return token, units


def _units_take(ids: list[int], worker: str, token: uuid.UUID) -> tuple[uuid.UUID, int]:
    # Free: pending, or claimed by a holder whose lease ran out.
    free = Q(status=UnitStatus.PENDING) | Q(status=UnitStatus.CLAIMED, lease_expires_at__lt=timezone.now())
    with write_turn():
        return UNIT.take(
            Judgment.objects.filter(pk__in=ids, run__status=RunStatus.RUNNING, run__stopped=""), holder=worker, free=free,
            claim=token, status=UnitStatus.CLAIMED,
        )


def _units_claimed(ids: list[int], token: uuid.UUID) -> list[Judgment]:
    units = list(Judgment.objects.filter(pk__in=ids, claim_token=token).select_related("case", "criterion").order_by("id"))
    _share_inputs(units)
    return units


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
    """Claim one unit: its token, or None when it is not free."""
    token, units = judgments_claim(ids=[judgment_id], worker=worker)
    return token if units else None


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
            running = Run.objects.filter(pk=self.run_pk, status=RunStatus.RUNNING)
            self.running = through_outage(running.exists, what="reading a run's status")
            self.checked = time.monotonic()
        return self.running


def claims_give_back(*, pks: list[int], token: uuid.UUID) -> None:
    """Units claimed and not started: pending again if their run goes on, else cancelled like its other
    pending units (none stays claimed)."""
    if not pks:
        return
    through_outage(_claims_give_back, pks, token, what=f"giving back {len(pks)} units")


def _claims_give_back(pks: list[int], token: uuid.UUID) -> None:
    held = Judgment.objects.filter(pk__in=pks, status=UnitStatus.CLAIMED)
    UNIT.release(held.filter(run__status=RunStatus.RUNNING, run__stopped=""), token, status=UnitStatus.PENDING)
    UNIT.release(held, token, status=UnitStatus.CANCELLED)


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
    except (ServiceUnavailable, *soft_time_limit()):
        raise  # a service that stayed out of reach: the caller gives the unit back, not failed
    except Exception as exc:  # noqa: BLE001 - a bug must fail this unit visibly, not loop through recovery
        if is_service_error(exc):
            # The database or Redis failed under the handler (a read, the response cache): not the unit's
            # failure. The caller waits for the service and judges the unit again (through_outage), its judge
            # reply answered from the response cache.
            raise
        log.exception("unit %s of run %s failed", unit.key, unit.run.run_id)
        result = UnitResult.failure(f"internal error: {type(exc).__name__}: {exc}")
    # When the judgment finished, not when its batch is recorded (a command's batch of 64 waits seconds).
    result.fields.setdefault("finished_at", timezone.now())
    return result, run_failure


def endpoint_has_replied(*, unit: Judgment) -> bool:
    """Whether the unit's judge (or system) has answered any recorded unit of its run, usable or not."""
    answered = Judgment.objects.filter(run_id=unit.run_id, judge_id=unit.judge_id, system_id=unit.system_id)
    return answered.filter(Q(status=UnitStatus.DONE) | ~Q(raw_reply="")).exists()


def budget_spent(run: Run, unrecorded: list[tuple[Judgment, UnitResult]]) -> bool:
    """Whether `run` has a budget and its units have cost it: those recorded and `unrecorded`, the ones this
    caller judged and holds. Then the run is stopped (lifecycle.run_budget_stop). With several workers the
    spend may pass the cap by the units in flight elsewhere and those judged but not yet recorded there
    (at most a second's worth: results are recorded at least every RECORD_EVERY_SECONDS)."""
    if run.budget is None:
        return False
    pending = sum((unit_cost(unit, result.fields) for unit, result in unrecorded), start=Decimal(0))
    if not through_outage(budget_reached, run.pk, pending, what="reading a run's spend"):
        return False
    through_outage(run_budget_stop, run_pk=run.pk, what="stopping a run at its budget")
    return True


def judgment_execute(*, judgment_id: int, worker: str | None = None) -> bool:
    """Claim one unit, judge it, record it. False when the unit was not this caller's to do."""
    return judgments_execute(ids=[judgment_id], worker=worker) > 0


# Results are recorded at least this often while a batch is judged, so a slow judge's progress shows.
RECORD_EVERY_SECONDS = 1.0


def judgments_execute(*, ids: list[int], worker: str | None = None) -> int:
    """Claim the units of `ids` in one round trip, judge them one after another, record them in batches.
    Returns how many units this caller claimed. A unit another caller holds is skipped; a unit the soft
    time limit cut off fails with the reason, and the units after it go back to pending and are sent again.

    The claim's lease is renewed while the batch is judged (a Heartbeat): it never has to cover the batch,
    and a holder gone silent loses its units within one lease. A holder that could not renew (its database
    out of reach for a whole lease, or its units taken over) starts no further unit: it records what it has
    judged (the claims still its own) and gives the rest back.

    When a call finds every slot of its judge busy (more worker processes than the judge's limit), the
    units after it go back to pending and are sent again at once, for the processes that have nothing to
    judge: this one would hold them while it waits for its slot."""
    token, units = judgments_claim(ids=ids, worker=worker or worker_identity())
    if not units:
        return 0
    with Heartbeat(UNIT, Judgment.objects.filter(pk__in=[unit.pk for unit in units]), token, name="units") as beat:
        _units_judge(units, token, beat)
    return len(units)


def _units_judge(units: list[Judgment], token: uuid.UUID, beat: Heartbeat) -> None:
    done: list[tuple[Judgment, UnitResult]] = []
    run_failure = None
    last_record = time.monotonic()
    watch = _RunWatch(units[0].run_id)
    end = len(units)  # the units after `end` were given back
    index = 0

    def give_back(start: int) -> None:
        nonlocal end
        rest = [u.pk for u in units[start:end]]
        if not rest:
            return
        try:
            claims_give_back(pks=rest, token=token)
        except Exception:  # noqa: BLE001 - the units are still this caller's: it judges them itself
            log.exception("giving back %d units of run %s failed", len(rest), units[0].run_id)
            return
        end = start
        try:
            run_dispatch(run_pk=units[0].run_id, only=rest)
        except Exception:  # noqa: BLE001 - pending without a message: recovery sends a stalled run's units again
            log.exception("sending %d given-back units of run %s failed", len(rest), units[0].run_id)

    with before_waiting_for_a_slot(lambda: give_back(index + 1)):
        while index < end:
            unit = units[index]
            if budget_spent(unit.run, done):
                judgments_record(results=done, token=token)
                claims_give_back(pks=[u.pk for u in units[index:end]], token=token)
                through_outage(run_advance, run_pk=unit.run_id, what=f"finalizing run {unit.run_id}")
                return
            if index and (beat.lost.is_set() or not watch.still_running()):
                if beat.lost.is_set():
                    log.warning(
                        "run %s: the lease on %d units was lost; giving back the ones not started", unit.run.run_id, end - index
                    )
                judgments_record(results=done, token=token)
                claims_give_back(pks=[u.pk for u in units[index:end]], token=token)
                return
            try:
                result, run_failure = through_outage(unit_judge, unit, what=f"judging unit {unit.key}")
            except soft_time_limit():
                limit = settings.UNIT_SOFT_TIME_LIMIT
                done.append((unit, UnitResult.failure(f"time limit of {limit}s exceeded")))
                judgments_record(results=done, token=token)
                give_back(index + 1)
                return
            except ServiceUnavailable as exc:
                # The database or Redis stayed out of reach past the wait: this unit and the rest go back to
                # pending, unjudged and not failed (what cannot be given back now lapses by its lease).
                log.warning("run %s: %s; %d unit(s) given back", units[0].run_id, exc, end - index)
                judgments_record(results=done, token=token)
                give_back(index)
                return
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


def judgment_record(*, unit: Judgment, token: uuid.UUID, result: UnitResult) -> bool:
    """Write a unit's result, only if this caller still holds its claim; then advance the run if the
    stage is complete."""
    return judgments_record(results=[(unit, result)], token=token) > 0


_RECORD_FIELDS = ("status", "claim_token", "lease_expires_at", "finished_at")


def judgments_record(*, results: list[tuple[Judgment, UnitResult]], token: uuid.UUID) -> int:
    """Write the results of the units this caller still holds under `token` (the others were released
    and are someone else's now: their results are dropped, and their new holder's judge call is answered
    from the response cache), run each handler's side effects, move the run's counters: one transaction
    and a handful of statements for the whole batch. Then advance each run whose stage is complete.
    Returns how many results were written.

    While the database is out of reach the results wait here, in memory, until it is back (judging/outages.py): a
    database fault never fails a unit, and nothing is judged again."""
    if not results:
        return 0
    written = through_outage(_results_write, results, token, what=f"recording {len(results)} results")
    for run_pk, stage, executor in sorted({(unit.run_id, unit.stage, unit.run.executor) for unit, _ in results}):
        through_outage(_stage_advance_or_dispatch, run_pk, stage, executor, what=f"advancing run {run_pk}")
    return written


def _results_write(results: list[tuple[Judgment, UnitResult]], token: uuid.UUID) -> int:
    """One transaction: a committed write is whole, so a retry after a lost connection finds the units it
    wrote no longer held and writes nothing twice."""
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
        # One UPDATE per row, in this transaction: bulk_update's CASE per field per row cost several times more
        # to build (docs/speed.md, "The batch's record").
        for unit, _ in written:
            Judgment.objects.filter(pk=unit.pk).update(**{name: getattr(unit, name) for name in fields})
        counts: dict[int, list] = {}
        for unit, result in written:
            handler_for(unit.run.kind).on_unit_done(unit, result)
            tally = counts.setdefault(unit.run_id, [0, 0, Decimal(0)])
            tally[0 if result.ok else 1] += 1
            tally[2] += unit_cost(unit, result.fields)  # what the run has spent, for its budget
        for run_pk, (ok, failed, cost) in counts.items():
            Run.objects.filter(pk=run_pk).update(
                done_units=F("done_units") + ok, failed_units=F("failed_units") + failed, spent=F("spent") + cost, updated_at=now
            )
    return len(written)


def _stage_advance_or_dispatch(run_pk: int, stage: int, executor: str) -> None:
    """The stage complete: advance the run. Else room opened in the run's window: its next units go to the
    queue, behind those of the runs started meanwhile (lifecycle.run_dispatch)."""
    if not Judgment.objects.filter(run_id=run_pk, stage=stage, status__in=ACTIVE_UNIT_STATUSES).exists():
        run_advance(run_pk=run_pk)
    elif executor == Executor.CELERY:
        run_dispatch_next(run_pk=run_pk)
