"""Sequential runs: one task holds the whole run (batch rank) under a lease it renews while it works
(judging/leases.py)."""

from __future__ import annotations

import logging

from django.conf import settings

from judgeapp.judging.errors import InputError
from judgeapp.judging.judge_errors import JudgeError
from judgeapp.judging.leases import UNIT, Heartbeat
from judgeapp.judging.runkind import RunFailed, handler_for
from judgeapp.judging.runs.lifecycle import Progress, run_fail
from judgeapp.judging.workers import soft_time_limit, worker_identity
from judgeapp.models import Run, RunStatus

log = logging.getLogger(__name__)



def run_sequential_execute(*, run_pk: int, worker: str | None = None, progress: Progress | None = None) -> bool:
    """Take the run's lease and run it here; False when another holder has it. The lease is short and renewed
    while the run goes on, so that when this holder's machine dies another machine's worker takes the run over
    within one lease (a lease as long as the run's time limit would be hours)."""
    rows = Run.objects.filter(pk=run_pk)
    token, claimed = UNIT.take(rows.filter(status=RunStatus.RUNNING), holder=worker or worker_identity())
    if not claimed:
        return False
    run = Run.objects.get(pk=run_pk)
    try:
        with Heartbeat(UNIT, rows, token, name="run"):
            handler_for(run.kind).run_sequential(run, progress=progress)
    except (RunFailed, JudgeError, InputError) as exc:
        run_fail(run_pk=run_pk, error=str(exc))
    except soft_time_limit():
        run_fail(run_pk=run_pk, error=f"time limit of {settings.RUN_SOFT_TIME_LIMIT}s exceeded")
    except Exception as exc:  # noqa: BLE001
        log.exception("run %s failed", run.run_id)
        run_fail(run_pk=run_pk, error=f"internal error: {type(exc).__name__}: {exc}")
    finally:
        UNIT.release(rows, token)
    return True
