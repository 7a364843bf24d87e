"""Sending a Celery task by its name, so that the services which enqueue work need not import the task
modules that call them back (a task module imports its services; a service never imports a task module).

Celery is imported only when a task is first sent or looked up: a command that never sends one (`gate`,
every `--help`) does not pay for Celery's start-up. The module that registers a task is imported then
too; a worker imports them all when it starts (judgeapp/celery.py).
"""

from importlib import import_module

EXECUTE_JUDGMENT = "judgeapp.tasks.execute_judgment"
EXECUTE_JUDGMENTS = "judgeapp.tasks.execute_judgments"
START_RUN = "judgeapp.tasks.start_run"
EXECUTE_SEQUENTIAL_RUN = "judgeapp.tasks.execute_sequential_run"
RECOVER_RUNS = "judgeapp.tasks.recover_runs"
RANKLIST_WORK = "judgeapp.tasks.ranklist_work"
COMPUTE_AGREEMENT = "calibration.tasks.compute_agreement"
REFRESH_AGREEMENTS = "calibration.tasks.refresh_agreements"


# Each task's module, imported before the task is looked up by name.
_MODULES = {
    EXECUTE_JUDGMENT: "judgeapp.judging.tasks",
    EXECUTE_JUDGMENTS: "judgeapp.judging.tasks",
    START_RUN: "judgeapp.judging.tasks",
    EXECUTE_SEQUENTIAL_RUN: "judgeapp.judging.tasks",
    RECOVER_RUNS: "judgeapp.judging.tasks",
    RANKLIST_WORK: "judgeapp.ranker.tasks",
    COMPUTE_AGREEMENT: "calibration.tasks",
    REFRESH_AGREEMENTS: "calibration.tasks",
}


def task(name: str):
    """The registered task called `name` (a KeyError names a task no module registers)."""
    from judgeapp.celery import app

    import_module(_MODULES[name])
    return app.tasks[name]


def tasks_load() -> None:
    """Import Celery and every task module now (the web process does at start, so no request waits on it)."""
    for name in _MODULES:
        task(name)


def send(name: str, *args) -> None:
    task(name).delay(*args)
