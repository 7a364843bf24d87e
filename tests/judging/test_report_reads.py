"""The reports and the verdicts calibration reads take what they report, not every unit's prompt and every
reply: a run of 100,000 inputs holds a unit per order, juror or criterion for its report, and their prompts
(each with the input and the replies judged) came to gigabytes. What the queries select is checked, column
by column."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fakejudge import DemoBrain
from judgeapp.judging import runs
from judgeapp.judging.runkind import handler_for
from judgeapp.models import Output, Run, RunKind, RunStatus
from tests.factories import GOOD_REPLY, pointwise_run
from tests.pairwise.builders import jury_run, pairwise_run

pytestmark = pytest.mark.django_db

HEAVY = ['"judgeapp_judgment"."messages"', '"judgeapp_judgment"."raw_reply"', '"judgeapp_judgment"."transcript"',
         '"judgeapp_case"."input"', '"judgeapp_case"."output"']


def oracle(reply: str, message: str = "") -> float:
    return 1.0 if GOOD_REPLY in reply else 0.0


def heavy_reads(queries) -> list[str]:
    """Each heavy column a query selects; a reply's text only inside LENGTH(…) is fine. And each row read
    again by its id: a field left out of `only()` and read after, one query per unit (at 100,000 units the
    report took ten times as long)."""
    found = []
    for query in queries:
        sql = query["sql"].replace("`", '"')
        found += [column for column in HEAVY if column in sql]
        if re.search(r'(?<!LENGTH\()"judgeapp_output"\."text"', sql):
            found.append('"judgeapp_output"."text"')
        if re.search(r'WHERE "judgeapp_(judgment|case|output)"\."id" = \S+ LIMIT 21', sql):
            found.append(f"a row read again: {sql[:120]}")
    return found


def finished(run) -> Run:
    """The run judged in this process against the fake judge, read afresh."""
    runs.run_execute_inline(run=run)
    run = Run.objects.get(pk=run.pk)
    assert run.status == RunStatus.DONE
    return run


def test_the_pairwise_report_reads_no_prompt_input_or_reply_text(judge, fake_judge):
    fake_judge.action = DemoBrain(quality=oracle)
    run = finished(pairwise_run(judge=judge, n=6))
    with CaptureQueriesContext(connection) as queries:
        status, report = handler_for(RunKind.PAIRWISE).finalize(run)
    assert heavy_reads(queries.captured_queries) == []
    # The same report as the run's own (its replies' lengths included).
    assert status == RunStatus.DONE and report["winner"] == run.report["winner"] == "A"
    assert report["cases"] == run.report["cases"] and report["counts"] == run.report["counts"]
    lengths = {(o.case.case_id, o.slot): len(o.text) for o in Output.objects.filter(run=run).select_related("case")}
    assert all(
        (case["len_a"], case["len_b"]) == (lengths[case["case_id"], "A"], lengths[case["case_id"], "B"])
        for case in report["cases"]
    )
    with CaptureQueriesContext(connection) as queries:
        verdicts = handler_for(RunKind.PAIRWISE).verdicts(run)
    assert len(verdicts) == 6 and heavy_reads(queries.captured_queries) == []


def test_the_jury_report_reads_no_prompt_or_input(make_judge, fake_judge):
    fake_judge.action = DemoBrain(quality=oracle)
    panel = [make_judge(name, model=f"{name}-model", family=family) for name, family in
             (("juror-a", "meta"), ("juror-b", "mistral"), ("juror-c", "google"))]
    run = finished(jury_run(judges=panel, n=6))
    with CaptureQueriesContext(connection) as queries:
        status, report = handler_for(RunKind.JURY).finalize(run)
        verdicts = handler_for(RunKind.JURY).verdicts(run)
    assert heavy_reads(queries.captured_queries) == []
    assert report["judged"] == run.report["judged"] == 6 and report["cases"] == run.report["cases"]
    assert len(verdicts) == 6 * 4  # each juror's vote and the pooled one


def test_a_pointwise_runs_verdicts_read_no_prompt_input_or_reply(judge, fake_judge):
    """What calibration reads of a run (its corrected mean, its agreement with people); the pointwise report
    itself reads its units' scores only (tests/pointwise/test_memory.py)."""
    from judgeapp.judging.selectors import verdicts_for_run

    run = finished(pointwise_run(judge=judge, n=6))
    with CaptureQueriesContext(connection) as queries:
        verdicts = verdicts_for_run(run=run)
    selected = [query["sql"] for query in queries.captured_queries]
    assert heavy_reads(queries.captured_queries) == []
    assert not any('"judgeapp_judgment"."payload"' in sql for sql in selected)  # a pointwise unit's reply
    scores = dict(run.judgments.values_list("case__case_id", "parsed__score"))
    assert sorted((v.case_id, v.value) for v in verdicts) == sorted(scores.items())
    assert {v.judge for v in verdicts} == {judge.name} and {v.criterion for v in verdicts} == {"helpfulness"}


def test_the_judgments_page_reads_no_unit_twice(client, reviewer, judge, fake_judge):
    from django.urls import reverse

    run = finished(pointwise_run(judge=judge, n=12))
    client.force_login(reviewer)
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("pointwise:judgments", args=[run.run_id]))
    assert page.status_code == 200 and page.content.decode().count("c011") >= 1
    assert [found for found in heavy_reads(queries.captured_queries) if found.startswith("a row read again")] == []
