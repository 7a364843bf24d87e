"""The "Check up" button on real Celery workers: the run fans out, finishes, and its figures are the oracle's."""

import pytest
from django.urls import reverse

from fakejudge import FakeJudgeServer
from judgeapp.models import Run, RunKind, RunStatus
from tests.checkup.oracles import LabelOracle
from tests.helpers import wait_for

pytestmark = pytest.mark.slow


def test_the_check_up_button_runs_on_the_workers(worker_factory, make_judge, make_user, client):
    with FakeJudgeServer(LabelOracle(), latency=0.05) as server:
        make_judge("oracle", server=server, max_concurrency=4)
        worker_factory(concurrency=4)
        client.force_login(make_user("rita", "reviewer"))
        response = client.post(reverse("checkup:start", args=["oracle"]), {"sample": "6", "sets": ["mt-bench-human", "pandalm"]})
        run = Run.objects.get(kind=RunKind.CHECKUP)
        assert response["Location"] == reverse("run_detail", args=[run.run_id])
        wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, 120, message="the check-up to finish")
        run.refresh_from_db()
        assert run.status == RunStatus.DONE, run.error
        for entry in run.report["sets"].values():
            assert entry["figures"]["accuracy_all"]["value"] == 1.0 and entry["figures"]["position_consistency"]["value"] == 1.0
        assert run.report["calls"]["called"] == 24 and len(server.chat_requests) == 24
        html = client.get(reverse("judges")).content.decode()
        assert run.run_id in html and "never checked up" not in html
