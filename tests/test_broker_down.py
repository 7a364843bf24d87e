"""The broker down: a run started from a page or the API is stored and queued, the answer says it waits for
the broker (never a 500), and the workers' recovery starts it at its first pass once the broker is back.
Units whose message could not be sent stay pending and are sent by that pass too (never a unit's failure).

The broker is made unreachable by pointing the Celery app at a port on the loopback that nothing listens on; it is "back"
when the app points at the configured broker again, with tasks run in this process (eager) so that the
test sees the run start and finish.
"""

import logging
import socket
import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from judgeapp.api.services import api_token_create
from judgeapp.judging import runs, signals, taskqueue
from judgeapp.models import Run, RunStatus, UnitStatus
from tests import factories
from tests.factories import GOOD_REPLY, RUBRIC_ONE, pointwise_run
from tests.helpers import support_inputs_stored

NOTICE = "queued — will start when the broker is back"


class Broker:
    """Points this process's Celery app at a port nothing listens on (`down`), or back at the configured
    broker with tasks run in this process (`back`)."""

    def __init__(self, celery_broker, monkeypatch):
        self.point, self.monkeypatch = celery_broker, monkeypatch
        # A port this test holds and never listens on: refused, and no other process can take it meanwhile.
        self.closed_port = socket.socket()
        self.closed_port.bind(("127.0.0.1", 0))

    def down(self) -> None:
        self.point(f"redis://127.0.0.1:{self.closed_port.getsockname()[1]}/0")

    def back(self) -> None:
        from judgeapp.celery import app

        self.point(None)
        self.monkeypatch.setitem(app.conf, "task_always_eager", True)


@pytest.fixture
def broker(celery_broker, monkeypatch):
    broker = Broker(celery_broker, monkeypatch)
    yield broker
    broker.closed_port.close()


def warnings_logged(caplog) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.levelno >= logging.WARNING]


def assert_one_clear_line(caplog, run: Run) -> None:
    logged = warnings_logged(caplog)
    assert len(logged) == 1, [r.getMessage() for r in logged]
    line = logged[0].getMessage()
    assert run.run_id in line and "waits for the broker" in line and "\n" not in line
    assert logged[0].exc_info is None  # a line, not a traceback


def test_the_api_answers_202_queued_with_the_broker_down_and_recovery_starts_the_run_once_it_is_back(
    transactional_db, reviewer, judge, fake_judge, broker, caplog
):
    api = Client(headers={"Authorization": f"Bearer {api_token_create(user=reviewer)[1]}"})
    broker.down()
    with caplog.at_level(logging.WARNING):
        response = api.post(
            "/api/v1/runs/pointwise",
            {"testset": SimpleUploadedFile("support.jsonl", factories.testset_bytes(3, output=lambda i: GOOD_REPLY)),
             "rubric": SimpleUploadedFile("rubric.toml", RUBRIC_ONE), "judge": judge.name},
        )
    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["status"], body["notice"]) == ("queued", NOTICE)
    run = Run.objects.get(run_id=body["run_id"])
    assert run.status == RunStatus.QUEUED and run.awaiting_broker
    assert_one_clear_line(caplog, run)
    assert api.get(f"/api/v1/runs/{run.run_id}").json()["notice"] == NOTICE

    broker.back()
    counts = runs.runs_recover()  # an ordinary pass, seconds after the run was created
    run.refresh_from_db()
    assert counts["started"] == 1 and run.status == RunStatus.DONE and not run.awaiting_broker
    assert len(fake_judge.chat_requests) == 3
    assert api.get(f"/api/v1/runs/{run.run_id}").json()["notice"] == ""


def test_the_form_redirects_to_the_run_page_which_says_it_waits_for_the_broker(
    transactional_db, client, reviewer, judge, broker, caplog
):
    client.force_login(reviewer)
    broker.down()
    with caplog.at_level(logging.WARNING):
        response = client.post(
            reverse("pointwise:new"),
            {"judge": judge.pk, "threshold": "3.5", **support_inputs_stored().form},
        )
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("run_detail", args=[run.run_id])
    assert run.status == RunStatus.QUEUED and run.awaiting_broker
    assert_one_clear_line(caplog, run)
    assert NOTICE in client.get(response["Location"]).content.decode()


def test_units_that_could_not_be_sent_stay_pending_and_the_next_recovery_pass_sends_them(judge, fake_judge, broker, caplog):
    run = pointwise_run(judge=judge, n=3, executor="celery")
    runs.run_start(run_pk=run.pk)  # its dispatch waits for the commit, which this test's transaction never makes
    broker.down()
    with caplog.at_level(logging.WARNING):
        assert runs.run_dispatch(run_pk=run.pk) == 0  # a worker giving back units, or advancing a stage
    run.refresh_from_db()
    assert run.awaiting_broker and run.broker_notice.startswith("waiting for the broker")
    assert set(run.judgments.values_list("status", flat=True)) == {UnitStatus.PENDING}
    assert_one_clear_line(caplog, run)

    broker.back()
    counts = runs.runs_recover()
    run.refresh_from_db()
    assert counts["dispatched"] == 3 and not run.awaiting_broker
    assert set(run.judgments.values_list("status", flat=True)) == {UnitStatus.DONE}
    assert len(fake_judge.chat_requests) == 3


@pytest.mark.parametrize(
    ("brokers", "full_passes"),
    [
        (["redis-1", "redis-1", "redis-1"], [True, False, False]),
        (["redis-1", None, "redis-1"], [True, True]),  # out of reach: no pass, then a full one
        (["redis-1", "redis-2", "redis-2"], [True, True, False]),  # restarted empty: a new run_id
    ],
)
def test_the_recovery_loop_sends_everything_again_after_the_broker_was_out_of_reach_or_restarted(brokers, full_passes):
    answers, passes, stop = list(brokers), [], threading.Event()

    def broker_identity():
        identity = answers.pop(0)
        if not answers:
            stop.set()
        return identity

    signals.recovery_loop(lambda full: passes.append(full) or True, stop, 0, broker_identity=broker_identity)
    assert passes == full_passes


def test_a_send_the_broker_refuses_is_one_line_naming_the_broker_error(broker):
    broker.down()
    with pytest.raises(taskqueue.BrokerDown, match=r"^the broker cannot be reached \(.*Connection refused"):
        taskqueue.send(taskqueue.START_RUN, 0)
    with pytest.raises(taskqueue.BrokerDown):
        taskqueue.broker_identity()

