"""Jury runs through the run machinery, against the fake judge server over real HTTP."""


import pytest

from fakejudge import DemoBrain, FakeJudgeServer, Reply, Status, When
from judgeapp.judging import content, runs
from judgeapp.judging.errors import InputError
from judgeapp.judging.selectors import label_kind_for_run, verdicts_for_run
from judgeapp.models import Executor, Run, RunKind, RunStatus, UnitStatus
from judgeapp.models import TestSet as StoredTestSet
from tests import factories
from tests.factories import GOOD_REPLY, RUBRIC_ONE
from tests.pairwise.builders import case_ids, jury_run

pytestmark = pytest.mark.django_db

PANEL = [("juror-llama", "llama-3.1-8b-instruct", "meta"), ("juror-mistral", "mistral-7b-instruct", "mistral"),
         ("juror-gemma", "gemma-2-9b-it", "google"), ("juror-qwen", "qwen2.5-7b-instruct", "qwen"),
         ("juror-phi", "phi-3-mini", "microsoft")]


def oracle(reply: str, message: str = "") -> float:
    return 1.0 if GOOD_REPLY in reply else 0.0


@pytest.fixture
def panel(make_judge):
    def make(size=3, **fields):
        return [make_judge(name, model=model, family=family, **fields) for name, model, family in PANEL[:size]]

    return make


def down(model: str, otherwise):
    """Every call to `model` answers 503: its server is down."""
    return When(lambda r: r.model == model, Status(503), otherwise)


def unchecked_jury_run(judges, n):
    """A jury run built without the panel check: the CLI and the web refuse an even panel, but the pooling
    rule must hold whatever the number of answers."""
    return runs.run_create(
        kind=RunKind.JURY,
        executor=Executor.INLINE,
        judges=judges,
        testset=content.testset_store(data=factories.testset_bytes(n), name="support.jsonl"),
        rubric=content.rubric_store(data=RUBRIC_ONE, name="rubric.toml"),
        prompt=content.prompt_register(prompt="juror"),
        options={"judge_ids": [j.pk for j in judges], "warnings": []},
    )


def test_every_juror_judges_every_output_with_the_identical_prompt(panel, fake_judge):
    fake_judge.action = DemoBrain(quality=oracle)
    judges = panel(3)
    run = jury_run(judges=judges, n=4)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert set(run.judgments.values_list("key", flat=True)) == {f"{c}/{j.name}" for c in case_ids(4) for j in judges}
    by_case = {}
    for request in fake_judge.chat_requests:
        by_case.setdefault(request.prompt, set()).add(request.model)
    assert len(by_case) == 4 and all(models == {j.model for j in judges} for models in by_case.values())
    report = run.report
    assert [c["pooled"] for c in report["cases"]] == ["pass", "fail", "pass", "fail"]
    assert report["pass_rate"] == 0.5 and report["unjudged"] == 0
    assert report["per_judge_agreement"] == {j.name: 1.0 for j in judges}


def test_a_dissenting_juror_is_recorded_beside_the_pooled_verdict(panel, fake_judge):
    judges = panel(3)
    fake_judge.action = When(lambda r: r.model == judges[2].model, Reply('{"reasoning": "Too short.", "verdict": "fail"}'),
                             DemoBrain(quality=oracle))
    run = jury_run(judges=judges, n=2, output=lambda i: GOOD_REPLY)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    case = run.report["cases"][0]
    assert case["pooled"] == "pass" and case["dissent"] == ["juror-gemma"]
    assert case["votes"] == {"juror-llama": "pass", "juror-mistral": "pass", "juror-gemma": "fail"}
    assert case["reasoning"]["juror-gemma"] == "Too short."
    assert run.report["per_judge_agreement"]["juror-gemma"] == 0.0
    assert [r["judge"] for r in run.report["review"]] == ["juror-gemma"]


def test_a_judge_answering_503_is_left_out_and_the_other_three_still_pool(panel, fake_judge):
    judges = panel(4)
    fake_judge.action = down(judges[3].model, DemoBrain(quality=oracle))
    run = unchecked_jury_run(judges, n=2)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert [c["pooled"] for c in run.report["cases"]] == ["pass", "fail"]
    for case in run.report["cases"]:
        assert case["left_out"] == ["juror-qwen"] and case["votes"]["juror-qwen"] is None
    failed = run.judgments.filter(judge=judges[3])
    assert set(failed.values_list("status", flat=True)) == {UnitStatus.FAILED}
    assert "HTTP 503" in failed.first().error
    assert "juror-qwen" in run.report["judge_failures"]


def test_a_five_judge_panel_with_one_server_down_pools_the_other_four(panel, fake_judge):
    judges = panel(5)
    fake_judge.action = down(judges[0].model, DemoBrain(quality=oracle))
    run = jury_run(judges=judges, n=2)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert [c["pooled"] for c in run.report["cases"]] == ["pass", "fail"]
    assert all(c["left_out"] == ["juror-llama"] for c in run.report["cases"])


def test_a_juror_whose_server_cannot_be_reached_is_left_out_and_the_run_goes_on(panel, fake_judge):
    """A run of one judge fails at once when its server cannot be reached; a panel leaves that juror out."""
    from judgeapp.models import Judge
    from tests.helpers import free_port

    judges = panel(5)
    fake_judge.action = DemoBrain(quality=oracle)
    Judge.objects.filter(pk=judges[0].pk).update(base_url=f"http://127.0.0.1:{free_port()}/v1")
    run = jury_run(judges=[Judge.objects.get(pk=j.pk) for j in judges], n=2)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    assert all(c["left_out"] == ["juror-llama"] for c in run.report["cases"])


def test_with_only_two_answers_left_the_case_is_unjudged(panel, fake_judge):
    judges = panel(3)
    fake_judge.action = down(judges[1].model, DemoBrain(quality=oracle))
    run = jury_run(judges=judges, n=2)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    report = run.report
    assert [c["pooled"] for c in report["cases"]] == ["unjudged", "unjudged"]
    assert report["unjudged"] == 2 and report["pass_rate"] is None
    assert "only 2 of 3 jurors answered" in report["cases"][0]["unjudged_reason"]
    assert run.status == RunStatus.INVALID  # no case has a pooled verdict


def test_a_juror_that_never_parses_after_its_retry_is_left_out(panel, fake_judge):
    judges = panel(3)
    fake_judge.action = When(lambda r: r.model == judges[0].model, Reply("It passes, I think."), DemoBrain(quality=oracle))
    run = jury_run(judges=judges, n=2)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    unit = run.judgments.get(key=f"c000/{judges[0].name}")
    assert unit.status == UnitStatus.FAILED and unit.parse_attempts == 2
    assert all(c["pooled"] == "unjudged" for c in run.report["cases"])


def test_verdicts_for_calibration_are_each_jurors_and_the_pooled_one(panel, fake_judge):
    judges = panel(3)
    fake_judge.action = DemoBrain(quality=oracle)
    run = jury_run(judges=judges, n=2)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert label_kind_for_run(run=run) == "pass_fail"
    verdicts = {(v.case_id, v.judge): v.value for v in verdicts_for_run(run=run)}
    assert verdicts == {
        **{("c000", j.name): "pass" for j in judges}, ("c000", "jury"): "pass",
        **{("c001", j.name): "fail" for j in judges}, ("c001", "jury"): "fail",
    }
    assert all(v.criterion == "" for v in verdicts_for_run(run=run))


def test_unjudged_cases_have_no_pooled_verdict_for_calibration(panel, fake_judge):
    judges = panel(3)
    fake_judge.action = down(judges[2].model, DemoBrain(quality=oracle))
    run = jury_run(judges=judges, n=1)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert {v.judge for v in verdicts_for_run(run=run)} == {judges[0].name, judges[1].name}


@pytest.mark.parametrize(
    "size, system_family, message",
    [(2, "openai", "at least 3"), (4, "openai", "odd number"), (3, "google", "family of the system under test")],
)
def test_a_panel_breaking_the_rules_is_refused_and_nothing_is_stored(panel, make_system, size, system_family, message):
    system = make_system(family=system_family)
    before = (Run.objects.count(), StoredTestSet.objects.count())
    with pytest.raises(InputError, match=message):
        jury_run(judges=panel(size), system=system)
    assert (Run.objects.count(), StoredTestSet.objects.count()) == before


def test_two_jurors_of_one_family_are_refused(make_judge):
    judges = [make_judge("a", model="llama-3.1-8b", family=""), make_judge("b", model="llama-3.2-3b", family=""),
              make_judge("c", model="gemma-2-9b", family="")]
    with pytest.raises(InputError, match="a and b are both of the meta family"):
        jury_run(judges=judges)


def test_an_unknown_system_family_is_said_in_the_report(panel, make_system, fake_judge):
    system = make_system("homegrown-bot", model="acme-chat-7b", family="")
    run = jury_run(judges=panel(3), system=system, n=2)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.report["system"]["family_known"] is False
    assert any("homegrown-bot" in w and "unknown" in w for w in run.report["warnings"])
    without = jury_run(judges=panel_names(run), n=2)
    runs.run_execute_inline(run=without)
    without.refresh_from_db()
    assert any("not checked" in w for w in without.report["warnings"])


def panel_names(run):
    from judgeapp.jury.runkind import panel_of

    return panel_of(run)


def test_outputs_missing_from_the_test_set_are_refused_unless_the_system_generates(panel, make_system, fake_judge):
    judges = panel(3)
    with pytest.raises(InputError, match="have no 'output' to judge"):
        jury_run(judges=judges, output=None)
    system = make_system()
    run = jury_run(judges=judges, output=None, system=system, generate=True, n=2)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert run.judgments.filter(purpose="generate").count() == 2
    assert len(run.report["cases"]) == 2


def test_the_jurors_of_a_case_are_called_in_parallel(transactional_db, make_judge):
    with FakeJudgeServer(DemoBrain(quality=oracle), latency=0.4) as slow:
        judges = [make_judge(name, model=model, family=family, server=slow) for name, model, family in PANEL[:3]]
        run = jury_run(judges=judges, n=2)
        runs.run_execute_inline(run=run, concurrency=3)
        run.refresh_from_db()
        assert run.status == RunStatus.DONE and run.done_units == 6
        # Three calls in flight at once on the server: parallel (a wall-clock bound fails on a loaded machine).
        assert slow.max_in_flight == 3


def test_the_report_has_the_contract_keys(panel, fake_judge):
    run = jury_run(judges=panel(3), n=2)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    report = run.report
    for key in ("run_id", "kind", "cases", "per_judge_agreement", "pass_rate", "unjudged"):
        assert key in report
    assert set(report["cases"][0]) >= {"case_id", "pooled", "votes", "dissent"}
    assert report["kind"] == "jury" and set(report["versions"]["judges"]) == {"juror-llama", "juror-mistral", "juror-gemma"}
