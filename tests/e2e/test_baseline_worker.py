"""A real Celery worker runs a pointwise run's baseline stage: the released replies judged again the run's way."""

import pytest

from judgeapp.judging import runs
from judgeapp.models import Purpose, Run, RunStatus, UnitStatus
from judgeapp.releases.selectors import gate_for_run
from judgeapp.releases.services import release_mark
from tests.factories import RUBRIC_ONE, RUBRIC_TWO, pointwise_run
from tests.helpers import run_state, wait_for

pytestmark = pytest.mark.slow


def test_a_worker_judges_the_baseline_stage_and_the_gate_compares_like_for_like(worker_factory, make_judge, make_system, lead):
    judge, system = make_judge(), make_system("bot")
    released = runs.run_execute_inline(run=pointwise_run(judge=judge, n=6, rubric=RUBRIC_ONE, system=system, threshold=1.0))
    release_mark(run=released, actor=lead, label="v1.0")
    run = pointwise_run(judge=judge, n=6, rubric=RUBRIC_TWO, system=system, executor="celery", threshold=1.0)
    worker = worker_factory(concurrency=2)
    runs.run_enqueue(run=run)
    wait_for(
        lambda: Run.objects.get(pk=run.pk).is_finished, 60, message="the run to finish",
        explain=lambda: run_state(run.pk, worker),
    )

    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    baseline_units = run.judgments.filter(purpose=Purpose.BASELINE)
    assert baseline_units.count() == 12 and baseline_units.filter(status=UnitStatus.DONE).count() == 12
    assert run.total_units == 24 and run.done_units == 24
    baseline = run.report["baseline"]
    assert baseline["how"] == "rejudged" and baseline["run_id"] == released.run_id and baseline["cases"] == 6
    # The same replies (the factory's test set) judged the same way by the demo judge: nothing changed.
    assert baseline["diff"] == 0 and baseline["n_worse"] == 0
    assert run.report["judged"] == 12 and run.report["counts"]["units"] == 12
    assert gate_for_run(run=run)["passed"] is True
