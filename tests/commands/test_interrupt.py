"""A signal asks a command to stop; the work drains (judgeapp/judging/shutdown.py): units in flight finish
and are recorded, no new unit is claimed, the run is failed with the reason, the exit status is 128 + the
signal. A second signal stops at once. Both as a shell sends them, to a real `manage.py` process."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.judging import runs, shutdown
from judgeapp.models import Judgment, Run, RunStatus, UnitStatus
from tests import factories
from tests.factories import RUBRIC_ONE, pointwise_run
from tests.helpers import database_url_for_subprocess, wait_for

ROOT = Path(__file__).resolve().parents[2]
CASES = 40


@pytest.fixture
def judges_file():
    """The judges file a test process and its children read (tests/settings.py puts it in DATA_DIR)."""
    path = Path(os.environ["JUDGES_FILE"])
    yield path
    path.unlink(missing_ok=True)


def start_evaluation(
    tmp_path: Path, judges_file: Path, server: FakeJudgeServer, run_id: str, stderr=subprocess.PIPE
) -> subprocess.Popen:
    """`manage.py evaluate pointwise` against the slow judge, named only in the judges file."""
    judges_file.write_text(f'[judges.slow]\nmodel = "fake-judge"\nfamily = "scripted"\nbase_url = "{server.url}"\n')
    (tmp_path / "support.jsonl").write_bytes(factories.testset_bytes(CASES))
    (tmp_path / "rubric.toml").write_bytes(RUBRIC_ONE)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": database_url_for_subprocess(),
        "PYTHONUNBUFFERED": "1",
    }
    return subprocess.Popen(
        [sys.executable, "manage.py", "evaluate", "pointwise", "--testset", str(tmp_path / "support.jsonl"),
         "--rubric", str(tmp_path / "rubric.toml"), "--judge", "slow", "--concurrency", "4", "--run-id", run_id],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True,
    )


def in_flight(server: FakeJudgeServer, at_least: int) -> bool:
    return len(server.chat_requests) >= at_least


def test_sigterm_drains_the_units_in_flight_and_fails_the_run_with_exit_143(transactional_db, tmp_path, judges_file):
    with FakeJudgeServer(DemoBrain(), latency=0.6) as server:
        process = start_evaluation(tmp_path, judges_file, server, "drained")
        try:
            # The first four calls are in flight (concurrency 4, 0.6 s each): stop now.
            wait_for(lambda: process.poll() is not None or in_flight(server, 4), 60, message="four calls in flight")
            assert process.poll() is None, process.communicate()
            process.send_signal(signal.SIGTERM)
            _out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
        asked = len(server.chat_requests)
    assert process.returncode == 128 + signal.SIGTERM == 143, err
    assert "interrupted (SIGTERM); stopped cleanly" in err and "Traceback" not in err
    run = Run.objects.get(run_id="drained")
    assert run.status == RunStatus.FAILED and run.error == "interrupted by SIGTERM before it finished"
    units = Judgment.objects.filter(run=run)
    statuses = list(units.values_list("status", flat=True))
    assert len(statuses) == CASES and UnitStatus.CLAIMED not in statuses  # none left claimed
    recorded = units.filter(status__in=[UnitStatus.DONE, UnitStatus.FAILED])
    # Every call the judge received was a unit in flight, finished and recorded once; then nothing more.
    assert 4 <= recorded.count() == asked < CASES
    assert set(units.exclude(pk__in=recorded).values_list("status", flat=True)) == {UnitStatus.CANCELLED}
    assert run.done_units + run.failed_units == recorded.count()  # each counted once
    assert all(unit.raw_reply for unit in recorded)


@pytest.mark.slow
def test_a_second_sigterm_stops_at_once_and_leaves_no_unit_claimed(transactional_db, tmp_path, judges_file):
    err_path = tmp_path / "stderr.txt"
    with FakeJudgeServer(DemoBrain(), latency=8) as server, open(err_path, "w") as err_file:
        process = start_evaluation(tmp_path, judges_file, server, "hurried", stderr=err_file)
        try:
            wait_for(lambda: process.poll() is not None or in_flight(server, 4), 60, message="four calls in flight")
            assert process.poll() is None, err_path.read_text()
            process.send_signal(signal.SIGTERM)
            # The first one is handled (it only asks: the command says so), then the second.
            wait_for(
                lambda: "stopping once the work in flight is recorded" in err_path.read_text(), 10, message="the first signal",
            )
            stopped_at = time.monotonic()
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
            waited = time.monotonic() - stopped_at
        finally:
            if process.poll() is None:
                process.kill()
    err = err_path.read_text()
    assert waited < 8, err  # it did not wait for the 8 s calls in flight
    assert process.returncode == 143, err
    run = Run.objects.get(run_id="hurried")
    assert run.status == RunStatus.FAILED and run.error == "interrupted by SIGTERM before it finished"
    statuses = set(Judgment.objects.filter(run=run).values_list("status", flat=True))
    assert statuses == {UnitStatus.CANCELLED}  # the four in flight were given up, not left claimed


def test_a_stop_asked_mid_run_lets_every_lane_finish_its_unit_and_claims_no_more(transactional_db, judge, fake_judge):
    """In process: the judge itself asks for the stop while four calls are in flight."""
    brain = DemoBrain()

    def answer_then_stop(request):
        shutdown.request(signal.SIGTERM)
        return brain(request)

    fake_judge.action = answer_then_stop
    run = pointwise_run(judge=judge, n=12)
    try:
        with pytest.raises(shutdown.Interrupted) as stopped:
            runs.run_execute_inline(run=run, concurrency=4)
    finally:
        shutdown.clear()
    assert stopped.value.exit_status == 143
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error == "interrupted by SIGTERM before it finished"
    done = run.judgments.filter(status=UnitStatus.DONE).count()
    assert 1 <= done <= 4 and done == len(fake_judge.chat_requests)  # at most one per lane, then none
    assert run.judgments.filter(status=UnitStatus.CANCELLED).count() == 12 - done


@pytest.mark.django_db
def test_a_stop_asked_before_the_run_starts_judges_nothing(judge, fake_judge):
    run = pointwise_run(judge=judge, n=3)
    shutdown.request(signal.SIGHUP)
    try:
        with pytest.raises(shutdown.Interrupted):
            runs.run_execute_inline(run=run)
    finally:
        shutdown.clear()
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error == "interrupted by SIGHUP before it finished"
    assert fake_judge.chat_requests == []


def test_the_handlers_ask_once_then_stop_and_leave_an_ignored_signal_ignored():
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with shutdown.handled():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN  # as under nohup
            os.kill(os.getpid(), signal.SIGTERM)
            assert shutdown.requested() == signal.SIGTERM  # asked, nothing raised
            with pytest.raises(shutdown.Interrupted):
                os.kill(os.getpid(), signal.SIGTERM)
        assert shutdown.requested() is None
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, previous)
