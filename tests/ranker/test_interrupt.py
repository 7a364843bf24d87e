"""A batch rank asked to stop (SIGTERM to `manage.py rank`, judgeapp/judging/shutdown.py) finishes the insert
in flight and makes no more: the run fails with the reason, the rest of its candidates are cancelled."""

import signal

import pytest

from judgeapp.judging import runs, shutdown
from judgeapp.models import Insertion, InsertionStatus, Judgment, RunStatus, UnitStatus
from judgeapp.ranker.services import candidates_in_dir, rank_run_create


def test_a_stop_asked_mid_batch_lets_the_insert_in_flight_finish_and_starts_no_other(
    transactional_db, oracle_judge, oracle, fake_judge, tmp_path
):
    oracle.write(tmp_path / "c", 8)
    brain = fake_judge.action
    calls = []

    def stop_at_the_fifth_call(request):
        calls.append(request)
        if len(calls) == 5:  # inside an insert into a list of three or four
            shutdown.request(signal.SIGTERM)
        return brain(request)

    fake_judge.action = stop_at_the_fifth_call
    run = rank_run_create(
        candidates=candidates_in_dir(tmp_path / "c"), goal="quality", judge=oracle_judge, set_name="c", executor="inline",
    )
    try:
        with pytest.raises(shutdown.Interrupted):
            runs.run_execute_inline(run=run)
    finally:
        shutdown.clear()
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error == "interrupted by SIGTERM before it finished"
    insertions = list(Insertion.objects.filter(ranklist__run=run).order_by("sequence"))
    statuses = [i.status for i in insertions]
    done = statuses.count(InsertionStatus.DONE)
    assert 2 <= done < 8 and statuses == [InsertionStatus.DONE] * done + [InsertionStatus.CANCELLED] * (8 - done)
    # The insert in flight when the stop came asked every comparison it needed, and nothing came after it.
    assert sum(i.comparisons for i in insertions) == len(calls)
    assert not Judgment.objects.filter(run=run, status=UnitStatus.CLAIMED).exists()
