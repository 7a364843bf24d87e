"""Issue 28: a kind's count of a unit in SQL (RunHandler.unit_accounting, what the scorecard sums over many
runs) is the count its report makes in Python (accounting.judgment_category; the agent's own reading)."""

import itertools

import pytest

from judgeapp.agent.runkind import _accounting as agent_accounting
from judgeapp.judging.accounting import judgment_category
from judgeapp.judging.runkind import handler_for
from judgeapp.models import Judgment, Run, RunKind, UnitStatus

pytestmark = pytest.mark.django_db

STATUSES = (UnitStatus.DONE, UnitStatus.FAILED, UnitStatus.CANCELLED, UnitStatus.PENDING)


def units_of_every_shape(kind: str) -> Run:
    run = Run.objects.create(run_id=f"shapes-{kind}", kind=kind)
    shapes = itertools.product(STATUSES, ("", "no JSON object"), ("", "HTTP 400"), (False, True),
                               (None, {}, {"reply_problem": ""}, {"reply_problem": "unparsable"}, {"reply_problem": "truncated"}))
    Judgment.objects.bulk_create(
        Judgment(run=run, key=f"u{i}", status=status, parse_error=parse_error, error=error, truncated=truncated, parsed=parsed)
        for i, (status, parse_error, error, truncated, parsed) in enumerate(shapes)
    )
    return run


@pytest.mark.parametrize("kind", [RunKind.POINTWISE, RunKind.PAIRWISE, RunKind.JURY, RunKind.CHECKUP, RunKind.BLIND])
def test_the_sql_count_of_a_unit_is_its_reports_count(kind):
    run = units_of_every_shape(kind)
    counted = dict(run.judgments.annotate(category=handler_for(kind).unit_accounting()).values_list("key", "category"))
    assert counted == {unit.key: judgment_category(unit) for unit in run.judgments.all()}
    assert set(counted.values()) == {"parsed", "parse_failures", "truncated", "no_reply"}


def test_the_sql_count_of_an_agent_unit_is_the_agent_reports_count():
    run = units_of_every_shape(RunKind.AGENT)
    counted = dict(run.judgments.annotate(category=handler_for(RunKind.AGENT).unit_accounting()).values_list("key", "category"))
    assert counted == {unit.key: agent_accounting(unit) for unit in run.judgments.all()}
    assert set(counted.values()) == {"parsed", "parse_failures", "truncated", "no_reply"}
