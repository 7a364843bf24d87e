"""A large run is stored, planned and reported a batch at a time: what it holds in memory at once does not
grow with its cases (bench/memory.py prints the resident memory at 10k and 100k cases)."""

import weakref

import pytest

from judgeapp.judging import runs
from judgeapp.judging.batches import ROWS_AT_ONCE
from judgeapp.judging.runkind import handler_for
from judgeapp.models import Case, Judgment, Output, RunKind, UnitStatus
from judgeapp.pointwise import core
from tests.factories import RUBRIC_TWO, pointwise_run

CASES = 3 * ROWS_AT_ONCE  # 6,000 units on two criteria: three batches of cases, six of units


class Alive:
    """The most instances of each class alive at once: counted from their __init__ until they are freed."""

    def __init__(self, monkeypatch, *classes):
        self.now = dict.fromkeys(classes, 0)
        self.peak = dict.fromkeys(classes, 0)
        for cls in classes:
            monkeypatch.setattr(cls, "__init__", self._counting(cls, cls.__init__))

    def _counting(self, cls, init):
        def counted(instance, *args, **kwargs):
            init(instance, *args, **kwargs)
            self.now[cls] += 1
            self.peak[cls] = max(self.peak[cls], self.now[cls])
            weakref.finalize(instance, self._freed, cls)

        return counted

    def _freed(self, cls):
        self.now[cls] -= 1


@pytest.fixture
def large_run(judge):
    return pointwise_run(judge=judge, n=CASES, rubric=RUBRIC_TWO)


def test_a_large_test_set_is_stored_a_batch_of_cases_at_a_time(judge, monkeypatch):
    alive = Alive(monkeypatch, Case)
    run = pointwise_run(judge=judge, n=CASES, rubric=RUBRIC_TWO)
    assert run.testset.cases.count() == CASES
    assert alive.peak[Case] <= ROWS_AT_ONCE


def test_planning_a_large_run_holds_a_batch_of_units_not_every_case(large_run, monkeypatch):
    alive = Alive(monkeypatch, Case, Output, Judgment)
    runs.run_start(run_pk=large_run.pk)
    large_run.refresh_from_db()
    assert large_run.total_units == Judgment.objects.filter(run=large_run).count() == 2 * CASES
    assert Output.objects.filter(run=large_run).count() == CASES
    assert alive.peak[Judgment] <= ROWS_AT_ONCE
    assert alive.peak[Output] <= ROWS_AT_ONCE
    assert alive.peak[Case] <= ROWS_AT_ONCE


def test_the_report_of_a_large_run_counts_every_unit_holding_a_batch_of_them(large_run, monkeypatch):
    runs.run_start(run_pk=large_run.pk)
    units = Judgment.objects.filter(run=large_run)
    units.filter(criterion__name="helpfulness").update(status=UnitStatus.DONE, parsed={"score": 4, "reasoning": "fine"})
    units.filter(criterion__name="tone").update(status=UnitStatus.DONE, parsed={"score": 2, "reasoning": "curt"})
    units.filter(case__case_id="c007", criterion__name="tone").update(
        status=UnitStatus.FAILED, parsed=None, parse_error="no JSON object",
    )
    alive = Alive(monkeypatch, core.ScoredItem, Judgment)
    status, report = handler_for(RunKind.POINTWISE).finalize(large_run)
    assert report["total"] == 2 * CASES and report["judged"] == 2 * CASES - 1 and report["parse_failures"] == 1
    assert report["per_criterion_n"] == {"helpfulness": CASES, "tone": CASES - 1}
    assert report["histogram"] == {"1": 0, "2": CASES - 1, "3": 0, "4": CASES, "5": 0}
    assert [(item["case_id"], item["score"]) for item in report["lowest"][:2]] == [("c000", 2), ("c001", 2)]
    # The lowest few and one batch of items at most, never an item per unit; no unit as a model instance.
    assert alive.peak[core.ScoredItem] <= ROWS_AT_ONCE + core.LOWEST_N + 1
    assert alive.peak[Judgment] == 0
