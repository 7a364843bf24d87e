"""Sending a Celery task by its name, so that the services which enqueue work need not import the task
modules that call them back (a task module imports its services; a service never imports a task module).

Every task module is imported when Django starts (judgeapp/apps.py), so the names are always registered.
"""

from celery import current_app

EXECUTE_JUDGMENT = "judgeapp.tasks.execute_judgment"
EXECUTE_JUDGMENTS = "judgeapp.tasks.execute_judgments"
START_RUN = "judgeapp.tasks.start_run"
EXECUTE_SEQUENTIAL_RUN = "judgeapp.tasks.execute_sequential_run"
RECOVER_RUNS = "judgeapp.tasks.recover_runs"
RANKLIST_WORK = "judgeapp.tasks.ranklist_work"
COMPUTE_AGREEMENT = "calibration.tasks.compute_agreement"
REFRESH_AGREEMENTS = "calibration.tasks.refresh_agreements"


def task(name: str):
    """The registered task called `name` (a KeyError names a task no module registered)."""
    return current_app.tasks[name]


def send(name: str, *args) -> None:
    task(name).delay(*args)
