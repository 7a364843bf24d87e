"""Every mode on a real model: llama.cpp's server on SmolLM2-135M-Instruct (tests/realmodel/conftest.py),
json_object structured output, a few cases each (tests/realmodel/scenarios.py).

A model this small judges badly; these tests hold the app to account, not the model: every mode finishes
with a report (no traceback, no hang), its counts add up to its units, a reply cut at max_tokens is recorded
as truncated and never cached, pairwise says inconclusive when the judge only follows the order, and a
judge that never calls a tool leaves the agent run not judged.
"""

import pytest

from judgeapp.models import CachedResponse, Judgment, Run, RunStatus
from tests.realmodel.scenarios import CUT_MAX_TOKENS, judges_toml, mode_run, write_inputs

pytestmark = pytest.mark.slow

FINISHED = (RunStatus.DONE, RunStatus.INVALID)


def failure_lines(err: str) -> list[str]:
    """stderr without the warnings said before the run starts (one "warning: " line each): the failure itself."""
    return [line for line in err.splitlines() if line and not line.startswith("warning: ")]


@pytest.fixture
def inputs(real_model, transactional_db, settings, tmp_path):
    judges_file = tmp_path / "judges.toml"
    judges_file.write_text(judges_toml(real_model.base_url, real_model.model))
    settings.JUDGES_FILE = str(judges_file)
    settings.JUDGE_MODEL = ""
    settings.DATA_DIR = tmp_path / "data"
    write_inputs(tmp_path)
    return tmp_path


def assert_accounted(outcome):
    assert "Traceback" not in outcome.result.err, outcome.result.err
    assert outcome.run_id, f"{outcome.mode}: no run ({outcome.result.err})"
    counts = outcome.counts
    assert counts, f"{outcome.mode}: the report has no counts"
    assert counts["parsed"] + counts["parse_failures"] + counts["truncated"] + counts["no_reply"] == counts["units"] > 0
    assert counts["invalid"] == (counts["unusable"] / counts["units"] > 0.05)
    units = Judgment.objects.filter(run__run_id=outcome.run_id, purpose="judge")
    assert counts["truncated"] == units.filter(truncated=True).count()
    # Nothing cut at max_tokens is in the response cache.
    assert not [r for r in CachedResponse.objects.values_list("response", flat=True) if r.get("finish_reason") == "length"]


def test_pointwise_finishes_and_accounts_for_every_unit(inputs):
    outcome = mode_run("pointwise", inputs)
    assert outcome.status in FINISHED, outcome.result.err
    assert outcome.result.code == (0 if outcome.report["gate"]["passed"] else 1)
    assert_accounted(outcome)
    assert outcome.counts["units"] == 3
    assert outcome.report["parse_failure_rate"] == outcome.counts["parse_failures"] / 3


def test_a_reply_cut_at_max_tokens_is_truncated_counted_and_never_cached(inputs):
    outcome = mode_run("pointwise-truncated", inputs)
    assert_accounted(outcome)
    assert outcome.counts["truncated"] == outcome.counts["units"] == 3
    assert outcome.status == RunStatus.INVALID and outcome.result.code == 1
    assert any("truncated" in r for r in outcome.report["invalid_reasons"])
    for unit in Judgment.objects.filter(run__run_id=outcome.run_id):
        assert unit.truncated and "cut off at the token limit" in unit.parse_error
        # The retry showed the judge an excerpt of its cut reply, never the whole of it.
        assert unit.parse_attempts == 2 and f"({CUT_MAX_TOKENS} tokens)" in unit.parse_error
    # Run again: nothing was cached, so the model is asked again (and cuts again).
    again = mode_run("pointwise-truncated", inputs)
    assert again.counts["truncated"] == 3
    assert not Judgment.objects.filter(run__run_id=again.run_id, cached=True).exists()


def test_pairwise_on_a_judge_that_follows_the_order_is_inconclusive(inputs):
    outcome = mode_run("pairwise", inputs)
    assert outcome.status in FINISHED, outcome.result.err
    assert_accounted(outcome)
    assert outcome.counts["units"] == 6
    report = outcome.report
    assert report["inconclusive"] is True and report["winner"] is None and outcome.result.code == 1
    if report["judged"]:
        assert report["tie_rate"] >= 0.9, report["tie_rate"]


def test_a_jury_finishes_and_accounts_for_every_vote(inputs):
    outcome = mode_run("jury", inputs)
    assert outcome.status in FINISHED, outcome.result.err
    assert_accounted(outcome)
    assert outcome.counts["units"] == 9
    assert outcome.result.code == (0 if outcome.status == RunStatus.DONE else 1)


def test_the_agent_judge_finishes_and_says_when_it_never_used_its_tools(inputs):
    outcome = mode_run("agent", inputs)
    assert outcome.status in FINISHED + (RunStatus.FAILED,), outcome.result.err
    assert_accounted(outcome)
    report = outcome.report
    assert outcome.counts["units"] == 2
    tool_calls = sum(r["tool_call_count"] for r in report["requirements"])
    if tool_calls == 0 and outcome.counts["parsed"]:
        assert "judge did not use its tools" in report["not_judged_reasons"]
        assert outcome.status == RunStatus.INVALID and outcome.result.code == 1
        assert "judge did not use its tools" in outcome.result.err
    if outcome.counts["no_reply"]:
        # Some calls failed: 1; every call failed: the run failed, no verdict: 2.
        assert outcome.result.code == (2 if outcome.status == RunStatus.FAILED else 1)


def test_a_blind_comparison_finishes_and_accounts_for_every_judge_call(inputs):
    outcome = mode_run("blind", inputs)
    assert "Traceback" not in outcome.result.err
    if outcome.status == RunStatus.FAILED:
        # A rubric the model could not write stops the comparison: one line, the reason, nothing written.
        assert outcome.result.code == 2 and len(failure_lines(outcome.result.err)) == 1
        assert "No comparison was written." in outcome.result.err
        rubric = Judgment.objects.get(run__run_id=outcome.run_id, purpose="plan")
        assert rubric.status == "failed" and (rubric.parse_error or rubric.error)
        return
    assert outcome.status in FINISHED, outcome.result.err
    assert_accounted(outcome)


def test_a_direct_compare_finishes_with_a_verdict_or_one_line(inputs):
    outcome = mode_run("ranker-compare", inputs)
    assert outcome.status in FINISHED + (RunStatus.FAILED,), outcome.result.err
    if outcome.result.code == 0:
        assert outcome.result.out.startswith("WINNER: ")
        assert_accounted(outcome)
    else:
        failure = failure_lines(outcome.result.err)
        assert len(failure) == 1 and failure[0].startswith("error: ")
    assert Run.objects.filter(run_id=outcome.run_id).exists()
