"""The Celery application. Settings come from Django's settings under the CELERY_ prefix."""

import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "judgeapp.settings")

app = Celery("judgeapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Every package with a tasks module (the run machinery's, the ranker's inserts, calibration's agreement):
# imported by a worker when it starts, not by Django (judgeapp/judging/taskqueue.py sends a task by its
# name). So are the worker's signal handlers (CELERY_IMPORTS in the settings).
app.autodiscover_tasks(["judgeapp.judging", "judgeapp.ranker", "calibration"])


def _prepare_embedded_broker() -> None:
    """The embedded (filesystem) broker keeps its queue in folders under DATA_DIR; make sure they exist."""
    from django.conf import settings

    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        for key in ("data_folder_in", "data_folder_out", "control_folder", "processed_folder"):
            Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS[key]).mkdir(parents=True, exist_ok=True)


@app.on_after_configure.connect
def _on_configure(sender, **kwargs):
    _prepare_embedded_broker()
