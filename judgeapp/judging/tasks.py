"""Celery tasks: thin. They pass ids, and the services do the work (and keep the state in the models).

Task names stay those of the first release (`judgeapp.tasks.*`), so messages already queued by an older
worker are still understood after an upgrade."""

import logging

from django.conf import settings

from judgeapp.celery import app
from judgeapp.judging import judges, notify, runs
from judgeapp.judging.audit import SYSTEM
from judgeapp.judging.errors import InputError

log = logging.getLogger(__name__)


@app.task(
    name="judgeapp.tasks.execute_judgment", acks_late=True, soft_time_limit=settings.UNIT_SOFT_TIME_LIMIT,
    time_limit=settings.UNIT_HARD_TIME_LIMIT
)
def execute_judgment(judgment_id: int) -> None:
    runs.judgment_execute(judgment_id=judgment_id)


# Limits for a batch of one; run_dispatch sends each batch with limits that grow with its size.
@app.task(
    name="judgeapp.tasks.execute_judgments", acks_late=True, soft_time_limit=settings.UNIT_SOFT_TIME_LIMIT,
    time_limit=settings.UNIT_HARD_TIME_LIMIT
)
def execute_judgments(judgment_ids: list[int]) -> None:
    runs.judgments_execute(ids=judgment_ids)


# Planning a stage of a large test set takes minutes: the planner renews its lease on the run while it
# works, and a planner cut off anyway is continued by the next (judging/runs/lifecycle.py, run_start).
@app.task(
    name="judgeapp.tasks.start_run", acks_late=True, soft_time_limit=settings.RUN_SOFT_TIME_LIMIT,
    time_limit=settings.RUN_HARD_TIME_LIMIT
)
def start_run(run_pk: int) -> None:
    runs.run_start(run_pk=run_pk)


@app.task(
    name="judgeapp.tasks.execute_sequential_run", acks_late=True, soft_time_limit=settings.RUN_SOFT_TIME_LIMIT,
    time_limit=settings.RUN_HARD_TIME_LIMIT
)
def execute_sequential_run(run_pk: int) -> None:
    runs.run_sequential_execute(run_pk=run_pk)


@app.task(name="judgeapp.tasks.recover_runs", acks_late=True, soft_time_limit=120, time_limit=180)
def recover_runs(redispatch_pending: bool = False) -> None:
    runs.runs_recover(redispatch_pending=redispatch_pending)


@app.task(name="judgeapp.tasks.load_judges_file", acks_late=True, soft_time_limit=60, time_limit=90)
def load_judges_file() -> None:
    """A worker starting loads the judges file. A bad file is logged, and the rows of the last good load
    stay (the judges page says the file differs, and why it does not load)."""
    try:
        judges.judges_sync(actor=SYSTEM)
    except InputError as exc:
        log.error("judges file not loaded: %s", exc)


# One POST of at most WEBHOOK_TIMEOUT_SECONDS per socket wait (connect, send, read); retries are new
# messages with a countdown, never a task held while it waits (judging/notify.py).
@app.task(name="judgeapp.tasks.deliver_webhook", acks_late=True, soft_time_limit=settings.WEBHOOK_TIMEOUT_SECONDS * 3 + 20,
          time_limit=settings.WEBHOOK_TIMEOUT_SECONDS * 3 + 30)
def deliver_webhook(delivery_pk: int) -> None:
    notify.webhook_delivery_attempt(delivery_pk=delivery_pk)
