"""A page of many runs asks each calibration question once (judgeapp/judging/memo.py): the dashboard's
queries grow by the run's own reads (its release baseline, a lead's decision), not by the judge's status
read again for every run. Outside a GET request nothing is shared, so a change is seen at once."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from calibration.models import CalibrationPolicy
from calibration.selectors.policy import policy_get
from calibration.selectors.status import status_for_scope
from judgeapp.judging import runs
from judgeapp.judging.memo import reads_shared
from tests.factories import pointwise_run

pytestmark = pytest.mark.django_db


def _dashboard_queries(client, count: int, judge, system, prefix: str) -> int:
    for i in range(count):
        run = pointwise_run(judge=judge, n=2, run_id=f"{prefix}-{i}", system=system, threshold=1.0)
        runs.run_execute_inline(run=run)
    client.get(reverse("runs"))
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("runs"))
    assert page.content.decode().count("gate passed") >= count
    return len(queries.captured_queries)


def test_the_dashboard_reads_a_judges_calibration_once_not_per_run(client, reviewer, judge, make_system):
    system = make_system("support-bot")
    client.force_login(reviewer)
    five = _dashboard_queries(client, 5, judge, system, "first")
    twenty_five = _dashboard_queries(client, 20, judge, system, "more")
    # Each further run costs its own baseline and lead-decision reads; before, nine queries a run.
    assert (twenty_five - five) / 20 <= 3, (five, twenty_five)


def test_reads_are_shared_only_inside_the_scope_and_each_caller_gets_its_own_copy(judge):
    with reads_shared():
        first = status_for_scope(judge_name=judge.name, judge_version=judge.version)
        first["line"] = "changed by a caller"
        with CaptureQueriesContext(connection) as queries:
            again = status_for_scope(judge_name=judge.name, judge_version=judge.version)
        assert queries.captured_queries == [] and again["line"] != "changed by a caller"
    CalibrationPolicy.objects.create(not_calibrated="block")
    assert policy_get().not_calibrated == "block"  # outside the scope: read now


def test_a_post_is_not_served_shared_reads(rf):
    from judgeapp.judging.memo import SharedReadsMiddleware, _memo

    seen = {}
    middleware = SharedReadsMiddleware(lambda request: seen.setdefault(request.method, _memo.get()))
    middleware(rf.get("/"))
    middleware(rf.post("/"))
    assert seen["GET"] == {} and seen["POST"] is None
