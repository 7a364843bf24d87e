"""What the rest of the app asks calibration. judgeapp's gate and reports call these; nothing else of
calibration's is imported outside it."""

from judgeapp.models import Run


def gate_lock_reasons(*, run: Run) -> list[str]:
    """Reasons the release gate of `run` is locked by calibration, e.g. ["judge not calibrated: …"].

    Empty while no agreement level applies to the run's judge configuration.
    """
    return []


def agreement_for_run(*, run: Run) -> dict | None:
    """The agreement of the run's judge with the latest human-scored sample, for the report's
    `agreement` key; None when people have not scored a sample for that judge configuration."""
    return None
