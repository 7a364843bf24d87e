"""`blind-compare` end to end over HTTP against the fake judge server (CONTRACT §3, issue 7 acceptance)."""

import json
import subprocess

import pytest
from django.core.management import call_command

from judgeapp.core.blind import comparison_errors
from judgeapp.models import BlindComparison, Run, RunKind
from tests.blind.helpers import FAILED_RUN, MIDDLING, STRONG, WEAK, write_inputs, write_version

pytestmark = pytest.mark.django_db


def blind_compare(*args, concurrency=1):
    """Run the command as a user does; (exit status, stdout, stderr). Concurrency 1 keeps the judging in
    the test's own transaction (threads would not see its rows)."""
    import io

    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("blind-compare", *args, "--concurrency", str(concurrency), stdout=out, stderr=err)
        status = 0
    except SystemExit as exc:
        status = exc.code
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def three_versions(tmp_path):
    a = write_version(tmp_path, "team-alpha-terse", [MIDDLING, MIDDLING, FAILED_RUN])
    b = write_version(tmp_path, "team-beta-stepwise", [STRONG, STRONG])
    c = write_version(tmp_path, "team-gamma-prose", single=WEAK)
    prompt, expectations = write_inputs(tmp_path)
    return tmp_path, a, b, c, prompt, expectations


def test_three_clean_versions_give_a_valid_comparison_and_the_failing_run_lowers_consistency(judge, fake_judge, three_versions):
    root, a, b, c, prompt, expectations = three_versions
    output = root / "comparison.json"
    status, out, err = blind_compare(
        "--version", f"A={a}", "--version", f"B={b}", "--version", f"C={c}",
        "--prompt", str(prompt), "--expectations", str(expectations), "--output", str(output), "--judge", judge.name,
    )
    assert status == 0, err
    doc = json.loads(output.read_text())
    assert comparison_errors(doc) == []
    assert list(doc) == ["method", "versions_compared", "winner", "ranking", "ties", "reasoning", "rubric",
                         "output_quality", "expectation_results", "limitations"]
    assert doc["versions_compared"] == ["A", "B", "C"]
    assert doc["winner"] == "B" and doc["ranking"][0] == "B" and doc["ties"] == []
    assert doc["rubric"]["criteria"][:4] == ["correctness", "completeness", "structure", "usability"]
    assert len(doc["rubric"]["criteria"]) > 4  # and the task's own criteria
    # The failing run of A lowers A's consistency and costs it on the overall score.
    assert doc["rubric"]["A"]["run_consistency"] in ("medium", "low")
    assert doc["rubric"]["B"]["run_consistency"] == "high"
    run = Run.objects.get(kind=RunKind.BLIND)
    assert run.report["consistency"]["A"]["failed_runs"] == 1
    assert doc["rubric"]["A"]["overall_score"] < run.report["consistency"]["A"]["combined_before_penalty"]
    assert any("run-3" in w for w in doc["output_quality"]["A"]["weaknesses"])
    assert doc["expectation_results"]["B"]["total"] == 3 and doc["expectation_results"]["B"]["pass_rate"] == 1.0, doc["expectation_results"]["B"]
    assert "Winner: B" in out and "Ranking: B > " in out
    # Every run of every version was judged once, after the rubric.
    keys = sorted(run.judgments.values_list("key", flat=True))
    assert keys == ["rubric", "score/A/run-1", "score/A/run-2", "score/A/run-3", "score/B/run-1", "score/B/run-2", "score/C/run-1"]


def test_no_prompt_sent_to_the_judge_contains_a_real_version_name(judge, fake_judge, three_versions):
    root, a, b, c, prompt, expectations = three_versions
    status, _, err = blind_compare(
        "--version", f"A={a}", "--version", f"B={b}", "--version", f"C={c}",
        "--prompt", str(prompt), "--output", str(root / "out.json"), "--judge", judge.name,
    )
    assert status == 0, err
    sent = [r.all_text for r in fake_judge.chat_requests]
    assert len(sent) == 7
    for text in sent:
        for real in ("team-alpha-terse", "team-beta-stepwise", "team-gamma-prose", "alpha", "beta", "gamma", str(root)):
            assert real not in text
    assert any('version="A" run="run-3 of 3"' in text for text in sent)
