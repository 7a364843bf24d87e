"""The Celery application. Settings come from Django's settings under the CELERY_ prefix."""

import os
from pathlib import Path

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "judgeapp.settings")
# filesystem:// (the embedded broker) with messages that appear only once written whole: judgeapp/broker.py.
TRANSPORT_ALIASES["filesystem"] = "judgeapp.broker:Transport"

app = Celery("judgeapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def _prepare_embedded_broker() -> None:
    """The embedded (filesystem) broker keeps its queue in folders under DATA_DIR; make sure they exist."""
    from django.conf import settings

    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        for key in ("data_folder_in", "data_folder_out", "control_folder", "processed_folder"):
            Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS[key]).mkdir(parents=True, exist_ok=True)


@app.on_after_configure.connect
def _on_configure(sender, **kwargs):
    _prepare_embedded_broker()
