"""Sequential runs: one task holds the whole run (batch rank) under a lease it renews while it works."""

from __future__ import annotations

import logging
import threading
import uuid

from django.conf import settings
from django.db import connections
from django.db.models import Q
from django.utils import timezone

from judgeapp.judging.client import JudgeError
from judgeapp.judging.errors import InputError
from judgeapp.judging.runkind import RunFailed, handler_for
from judgeapp.judging.runs.lifecycle import Progress, run_fail
from judgeapp.judging.workers import soft_time_limit, worker_identity
from judgeapp.models import Run, RunStatus

log = logging.getLogger(__name__)



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
