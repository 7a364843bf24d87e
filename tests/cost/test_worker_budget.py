"""The budget on the workers' path (judging/runs/units.py: judgments_execute, what a Celery task runs): the
spend is read before each unit is started, and at the cap the rest of the batch is given back cancelled and
the run finalized invalid with `stopped: "budget"`."""

from decimal import Decimal

import pytest

from judgeapp.judging import runs, taskqueue
from judgeapp.models import Run, RunStatus, UnitStatus
from tests.factories import pointwise_run

pytestmark = pytest.mark.django_db


def test_a_worker_s_batch_stops_at_the_run_s_budget_and_the_run_ends_invalid(make_judge, fake_judge, monkeypatch):
    monkeypatch.setattr(taskqueue, "send", lambda name, *args, **options: None)  # nothing reaches a broker
    # $1 a thousand tokens: each call of these cases costs about 20 cents; 50 cents buys three.
    judge = make_judge("dear", input_price_per_million=Decimal("1000"), output_price_per_million=Decimal("1000"))
    run = pointwise_run(judge=judge, n=10, executor="celery")
    Run.objects.filter(pk=run.pk).update(budget=Decimal("0.5"))
    runs.run_start(run_pk=run.pk)
    ids = list(run.judgments.order_by("pk").values_list("pk", flat=True))
    runs.judgments_execute(ids=ids)

    run.refresh_from_db()
    judged = run.judgments.filter(status=UnitStatus.DONE).count()
    assert 0 < judged < 10 and len(fake_judge.chat_requests) == judged
    assert run.judgments.filter(status=UnitStatus.CANCELLED).count() == 10 - judged
    assert run.status == RunStatus.INVALID and run.stopped == "budget"
    assert run.report["stopped"] == "budget" and run.report["usage"]["calls"] == judged
    assert Decimal("0.5") <= run.spent < Decimal("0.5") + run.spent / judged
    assert run.report["budget"]["units_judged"] == judged and run.report["budget"]["units_not_judged"] == 10 - judged
