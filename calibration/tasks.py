"""Celery tasks of calibration: thin, pass ids, the services keep the state in the models."""

from calibration.services import agreement
from judgeapp.celery import app


@app.task(name="calibration.tasks.compute_agreement", acks_late=True, soft_time_limit=300, time_limit=360)
def compute_agreement(sample_id: int) -> None:
    """Recompute one sample's judge–human agreement (a no-op when its labels have not changed)."""
    agreement.agreement_run(sample_pk=sample_id)


@app.task(name="calibration.tasks.refresh_agreements", acks_late=True, soft_time_limit=600, time_limit=660)
def refresh_agreements() -> None:
    """Catch up on every sample whose labels changed without a result (a task lost with its broker)."""
    agreement.agreements_refresh()
