"""`evaluate pointwise` and `gate RUN_ID` as CI runs them: exit 0 pass, 1 blocked or invalid, 2 bad input,
against the fake judge server over HTTP."""

import json

import pandas as pd
import pytest

from fakejudge import DemoBrain, PerConversation, Reply, When
from judgeapp import models
from judgeapp.models import AuditLog, Case, GateDecision, PromptTemplate, Release, Rubric, Run, RunStatus
from tests.factories import BAD_REPLY, GOOD_REPLY, RUBRIC_TWO

pytestmark = pytest.mark.django_db

# CONTRACT §4: the pointwise report's minimum keys.
REPORT_KEYS = {
    "run_id", "kind", "mean", "per_criterion", "histogram", "lowest", "parse_failures", "parse_failure_rate",
    "invalid", "gate", "versions", "judge", "warnings", "agreement",
}


def evaluate(cli, judge, testset, rubric, *extra):
    # One judge call at a time: the test's open transaction would lock SQLite against other threads'
    # writes. The default (the judge's max_concurrency, on threads) is tested with a committed database below.
    return cli(
        "evaluate", "pointwise", "--testset", testset, "--rubric", rubric, "--judge", judge.name, "--concurrency", "1", *extra,
    )


def test_a_passing_run_exits_0_and_writes_the_contract_report(cli, judge, files, tmp_path):
    testset, rubric = files(n=6, rubric=RUBRIC_TWO)
    out = tmp_path / "report.json"
    result = evaluate(cli, judge, testset, rubric, "--threshold", "3.5", "--report", str(out), "--run-id", "ci-1")
    assert result.code == 0, result.err
    report = json.loads(out.read_text())
    assert REPORT_KEYS <= set(report)
    assert report["run_id"] == "ci-1" and report["kind"] == "pointwise"
    assert set(report["per_criterion"]) == {"helpfulness", "tone"}
    assert set(report["histogram"]) == {"1", "2", "3", "4", "5"} and sum(report["histogram"].values()) == 12
    assert set(report["gate"]) >= {"passed", "threshold", "baseline_mean", "reasons"}
    assert report["gate"] == {**report["gate"], "passed": True, "threshold": 3.5, "reasons": []}
    assert set(report["versions"]) == {"testset", "rubric", "prompt", "judge"} and all(report["versions"].values())
    assert report["judge"] == {**report["judge"], "model": "fake-judge", "family": "scripted", "temperature": 0.0}
    assert report["mean_ci95"][0] <= report["mean"] <= report["mean_ci95"][1]
    assert "GATE: PASSED" in result.err
    # The Markdown summary went to stdout.
    assert result.out.startswith("## Pointwise evaluation `ci-1`: gate PASSED")
    # One line counts the units, in the words every command's summary uses.
    units = [line for line in result.out.splitlines() if line.startswith("Units: ")]
    assert units == [f"Units: {report['counts']['units']}: {report['counts']['units']} parsed, 0 parse failures, 0 truncated, "
                     "0 no reply (after one retry each; 0 unusable, 0.0%)."]
    assert "Parse failures after one retry" not in result.out


def test_a_low_mean_blocks_with_exit_1_and_says_why(cli, judge, files):
    testset, rubric = files(n=4, output=lambda i: BAD_REPLY)
    result = evaluate(cli, judge, testset, rubric, "--threshold", "3.5", "--format", "json")
    assert result.code == 1
    report = json.loads(result.out)
    assert report["gate"]["passed"] is False
    assert any("below the threshold 3.5" in r for r in report["gate"]["reasons"])


def test_malformed_first_reply_and_valid_retry_gives_a_valid_run_that_passes(cli, judge, files, fake_judge):
    fake_judge.action = PerConversation(Reply("Score: 5, it is great."), DemoBrain())
    testset, rubric = files(n=4)
    result = evaluate(cli, judge, testset, rubric, "--threshold", "1", "--format", "json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["invalid"] is False and report["parse_failures"] == 0
    run = Run.objects.get(run_id=report["run_id"])
    assert run.status == RunStatus.DONE
    assert set(run.judgments.values_list("parse_attempts", flat=True)) == {2}
    assert len(fake_judge.chat_requests) == 8  # one retry per case, no more


def test_always_malformed_on_2_of_20_cases_is_invalid_and_blocks_with_exit_1(cli, judge, files, fake_judge):
    fake_judge.action = When(lambda r: "(ticket 3)" in r.prompt or "(ticket 7)" in r.prompt, Reply("{score: five"), DemoBrain())
    testset, rubric = files(n=20)
    result = evaluate(cli, judge, testset, rubric, "--threshold", "1", "--format", "json", "--run-id", "flaky")
    assert result.code == 1
    report = json.loads(result.out)
    assert report["invalid"] is True
    assert report["parse_failures"] == 2 and report["parse_failure_rate"] == 0.1
    assert report["gate"]["passed"] is False
    assert any(r.startswith("the run is invalid: 2 of 20 judge replies failed to parse") for r in report["gate"]["reasons"])
    assert Run.objects.get(run_id="flaky").status == RunStatus.INVALID
    # CI asks the gate again later: still blocked.
    gate = cli("gate", "flaky")
    assert gate.code == 1 and gate.out.startswith("GATE: BLOCKED")
    assert "the run is invalid" in gate.out


def test_a_judge_of_the_systems_family_gets_a_report_that_says_so(cli, make_judge, make_system, files, outputs_of):
    judge = make_judge("gpt-judge", model="gpt-4o", family="openai")
    make_system("bot", model="gpt-4o-mini", family="openai")
    testset, rubric = files(n=3)
    result = evaluate(
        cli, judge, testset, rubric, "--system", "bot", "--outputs", outputs_of(testset), "--threshold", "1", "--format", "json",
    )
    report = json.loads(result.out)
    assert result.code == 0
    assert any("same family (openai)" in w for w in report["warnings"])
    assert report["system"]["family"] == "openai"


def test_a_judge_of_another_family_has_no_family_warning(cli, judge, make_system, files, outputs_of):
    make_system("bot", model="gpt-4o-mini", family="openai")
    testset, rubric = files(n=3)
    given = outputs_of(testset)
    report = json.loads(
        evaluate(cli, judge, testset, rubric, "--system", "bot", "--outputs", given, "--threshold", "1", "--format", "json").out
    )
    assert not any("family" in w for w in report["warnings"])


def test_without_a_system_the_report_says_the_family_could_not_be_checked(cli, judge, files):
    testset, rubric = files(n=2)
    report = json.loads(evaluate(cli, judge, testset, rubric, "--threshold", "1", "--format", "json").out)
    assert any("family could not be checked" in w for w in report["warnings"])


def test_a_system_generates_the_outputs_when_the_test_set_has_none(cli, judge, make_system, files, fake_judge):
    make_system("bot")
    testset, rubric = files(n=3, output=None)
    result = evaluate(cli, judge, testset, rubric, "--system", "bot", "--threshold", "1", "--format", "json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["outputs"] == "generated by the system under test" and report["judged"] == 3
    run = Run.objects.get(run_id=report["run_id"])
    assert run.outputs.filter(source="system").count() == 3


def test_exports_write_csv_of_every_judgment_and_a_markdown_summary(cli, judge, files, tmp_path):
    testset, rubric = files(n=5, rubric=RUBRIC_TWO, output=lambda i: GOOD_REPLY if i else BAD_REPLY)
    csv_path, md_path = tmp_path / "j.csv", tmp_path / "summary.md"
    result = evaluate(cli, judge, testset, rubric, "--threshold", "1", "--csv", str(csv_path), "--markdown", str(md_path))
    assert result.code == 0
    frame = pd.read_csv(csv_path)
    assert len(frame) == 10 and {"case_id", "criterion", "score", "reasoning", "input", "output"} <= set(frame.columns)
    assert frame.loc[frame.case_id == "c000", "score"].max() < frame.loc[frame.case_id == "c001", "score"].min()
    markdown = md_path.read_text()
    assert "gate PASSED" in markdown and "| helpfulness |" in markdown and "Lowest-scoring cases" in markdown
    assert "| c000 |" in markdown  # the bad reply is among the lowest
    assert not list(tmp_path.glob(".*.tmp"))  # written by temp file + rename, nothing left behind


def test_the_baseline_defaults_to_the_systems_last_release(cli, judge, make_system, files, lead, outputs_of):
    from judgeapp.releases.services import release_mark

    make_system("bot")
    testset, rubric = files(n=4)
    first = json.loads(
        evaluate(
            cli, judge, testset, rubric, "--system", "bot", "--outputs", outputs_of(testset), "--threshold", "1", "--format",
            "json",
        ).out
    )
    release_mark(run=Run.objects.get(run_id=first["run_id"]), actor=lead, label="v1")
    # A worse version of the same system: above the threshold, below the release.
    worse, _ = files(n=4, output=lambda i: GOOD_REPLY if i % 2 else BAD_REPLY, name="worse.jsonl")
    result = evaluate(
        cli, judge, worse, rubric, "--system", "bot", "--outputs", outputs_of(worse), "--threshold", "1", "--format", "json",
    )
    report = json.loads(result.out)
    assert result.code == 1
    assert report["gate"]["baseline_mean"] == first["mean"]
    assert report["gate"]["baseline_run"] == first["run_id"]
    # Another test set file with the same cases (ids and inputs): compared on those cases, judged the same way.
    assert report["baseline"]["how"] == "same" and report["baseline"]["cases"] == 4
    assert any("on the 4 cases shared with bot's release v1" in r and "is below its" in r for r in report["gate"]["reasons"])


def test_baseline_flags_override_the_release(cli, judge, files):
    testset, rubric = files(n=4)
    base = json.loads(evaluate(cli, judge, testset, rubric, "--threshold", "1", "--format", "json").out)
    by_mean = evaluate(cli, judge, testset, rubric, "--threshold", "1", "--baseline-mean", "4.99", "--format", "json")
    assert by_mean.code == 1 and json.loads(by_mean.out)["gate"]["baseline_mean"] == 4.99
    by_run = evaluate(cli, judge, testset, rubric, "--threshold", "1", "--baseline-run", base["run_id"], "--format", "json")
    assert by_run.code == 0 and json.loads(by_run.out)["gate"]["baseline_run"] == base["run_id"]


def test_the_seeds_numbers_through_the_cli_mean_4_passes_threshold_3_5_over_baseline_3_9(cli, judge, files, fake_judge):
    """The seed's scenario end to end: the judge scores four cases 4, 5, 2 and 5."""
    scores = {"(ticket 0)": 4, "(ticket 1)": 5, "(ticket 2)": 2, "(ticket 3)": 5}

    def scripted(request):
        score = next(s for needle, s in scores.items() if needle in request.prompt)
        return Reply(json.dumps({"reasoning": "Scripted for the test.", "score": score}))(request)

    fake_judge.action = scripted
    testset, rubric = files(n=4)
    result = evaluate(cli, judge, testset, rubric, "--threshold", "3.5", "--baseline-mean", "3.9", "--format", "json")
    report = json.loads(result.out)
    assert report["mean"] == 4.0
    assert result.code == 0 and report["gate"]["passed"] is True


def test_by_default_the_judge_is_called_with_its_max_concurrency(transactional_db, cli, make_judge, files):
    from fakejudge import FakeJudgeServer

    with FakeJudgeServer(DemoBrain(), latency=0.2) as slow:
        make_judge("slow", server=slow, max_concurrency=4)
        testset, rubric = files(n=12)
        result = cli("evaluate", "pointwise", "--testset", testset, "--rubric", rubric, "--judge", "slow", "--threshold", "1")
        assert result.code == 0, result.err
        assert slow.max_in_flight == 4 and len(slow.chat_requests) == 12
        assert Run.objects.get().done_units == 12


# --- gate RUN_ID ---------------------------------------------------------------------------------------


def test_gate_is_computed_fresh_so_a_later_calibration_lock_blocks(cli, judge, files, monkeypatch):
    testset, rubric = files(n=3)
    evaluate(cli, judge, testset, rubric, "--threshold", "1", "--run-id", "r1")
    assert cli("gate", "r1").code == 0
    import calibration.selectors.status

    monkeypatch.setattr(
        calibration.selectors.status, "lock_reason_for_scope", lambda **_: "judge locked: agreement 0.41 with people, level 0.70",
    )
    result = cli("gate", "r1")
    assert result.code == 1
    assert "blocked: judge locked: agreement 0.41 with people, level 0.70" in result.out


def test_gate_is_computed_fresh_so_a_lead_block_after_the_run_blocks(cli, judge, files, lead):
    from judgeapp.releases.services import gate_decide

    testset, rubric = files(n=3)
    evaluate(cli, judge, testset, rubric, "--threshold", "1", "--run-id", "r2")
    gate_decide(run=Run.objects.get(run_id="r2"), actor=lead, verdict="blocked", reason="Lowest cases leak a customer's email.")
    result = cli("gate", "r2", "--json")
    assert result.code == 1
    gate = json.loads(result.out)
    assert gate["lead_decision"]["verdict"] == "blocked"
    assert any("Lowest cases leak" in r for r in gate["reasons"])


def test_gate_writes_the_current_report(cli, judge, files, tmp_path):
    testset, rubric = files(n=2)
    evaluate(cli, judge, testset, rubric, "--threshold", "1", "--run-id", "r3")
    out = tmp_path / "gate-report.json"
    assert cli("gate", "r3", "--report", str(out)).code == 0
    assert REPORT_KEYS <= set(json.loads(out.read_text()))


def test_gate_of_an_unknown_run_is_bad_input(cli, db):
    result = cli("gate", "no-such-run")
    assert result.code == 2 and result.err.strip() == "error: no run 'no-such-run'"


# --- Bad input: one clear line, exit 2, nothing stored -------------------------------------------------


def _nothing_stored():
    return not (models.TestSet.objects.exists() or Case.objects.exists() or Rubric.objects.exists() or Run.objects.exists()
                or PromptTemplate.objects.exists())


@pytest.mark.parametrize(
    "testset, message",
    [
        (b'{"id": "c1", "output": "hi"}\n', "line 1: missing column 'input'"),
        (
            b'{"id": "c1", "input": "a", "output": "x"}\n{"id": "c1", "input": "b", "output": "y"}\n',
            "duplicate id 'c1' on lines 1 and 2",
        ),
        (b'{"id": "c1", "input": "a", "output": "x"}\n{"id": "c2", "input": "b", "output": \n', "line 2: not valid JSON"),
        (b"", "the file is empty"),
    ],
    ids=["missing-column", "duplicate-ids", "invalid-json", "empty"],
)
def test_a_bad_test_set_gets_one_clear_line_exit_2_and_nothing_stored(cli, judge, files, fake_judge, testset, message):
    testset_path, rubric = files(testset=testset)
    result = evaluate(cli, judge, testset_path, rubric)
    assert result.code == 2
    assert result.err.count("\n") == 1 and result.err.startswith("error: ") and message in result.err
    assert "Traceback" not in result.err
    assert _nothing_stored() and not fake_judge.chat_requests


def test_a_rubric_without_a_scale_gets_one_clear_line_exit_2_and_nothing_stored(cli, judge, files, fake_judge):
    rubric = b'name = "r"\n[[criteria]]\nname = "helpfulness"\ndescription = "Does it help?"\n'
    testset, rubric_path = files(rubric=rubric)
    result = evaluate(cli, judge, testset, rubric_path)
    assert result.code == 2
    assert result.err.startswith(
        "error: rubric.toml criterion 'helpfulness': missing 'scale' (the meaning of each score 1-5); the rubric helper drafts "
        "one"
    )
    assert result.err.count("\n") == 1
    assert _nothing_stored() and not fake_judge.chat_requests


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--judge", "nobody"], "unknown judge 'nobody'"),
        (["--system", "nobody"], "unknown system 'nobody'"),
        (["--threshold", "7"], "threshold 7 is outside the rubric's scale 1-5"),
        (["--baseline-run", "nope"], "baseline run 'nope': no such run"),
        (["--run-id", "../x"], "run id '../x'"),
        (["--report", "/no/such/dir/r.json"], "no such directory"),
        (["--concurrency", "0"], "--concurrency must be at least 1"),
    ],
)
def test_bad_flags_get_one_clear_line_and_exit_2(cli, judge, files, extra, message):
    testset, rubric = files()
    result = cli("evaluate", "pointwise", "--testset", testset, "--rubric", rubric, "--judge", judge.name, *extra)
    assert result.code == 2 and message in result.err and "Traceback" not in result.err
    assert not Run.objects.exists()


def test_outputs_for_some_cases_only_is_refused(cli, judge, files):
    testset, rubric = files(n=3, output=lambda i: GOOD_REPLY if i else None)
    testset_bytes = open(testset, "rb").read().replace(b', "output": null', b"")
    open(testset, "wb").write(testset_bytes)
    result = evaluate(cli, judge, testset, rubric)
    assert result.code == 2 and "case 'c000' has no 'output' (1 of 3 cases lack one)" in result.err
    assert _nothing_stored()


def test_a_missing_file_is_bad_input(cli, judge, files, tmp_path):
    _, rubric = files()
    result = evaluate(cli, judge, str(tmp_path / "nope.jsonl"), rubric)
    assert result.code == 2 and "nope.jsonl: no such file" in result.err


def test_the_same_files_are_stored_once_by_content_hash(cli, judge, files):
    testset, rubric = files(n=2)
    evaluate(cli, judge, testset, rubric, "--threshold", "1")
    evaluate(cli, judge, testset, rubric, "--threshold", "1")
    assert models.TestSet.objects.count() == 1 and Rubric.objects.count() == 1 and Run.objects.count() == 2
    assert len({tuple(sorted(r.versions.items())) for r in Run.objects.all()}) == 1


def test_no_decision_is_made_by_the_cli_itself(cli, judge, files):
    testset, rubric = files(n=2)
    evaluate(cli, judge, testset, rubric, "--threshold", "1")
    assert not (GateDecision.objects.exists() or Release.objects.exists() or AuditLog.objects.exists())


def test_an_outputs_file_is_judged_against_a_test_set_without_outputs(cli, judge, files, tmp_path):
    testset, rubric = files(n=3, output=None)
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text("".join(json.dumps({"id": f"c{i:03d}", "output": GOOD_REPLY}) + "\n" for i in range(3)))
    bad.write_text("".join(json.dumps({"id": f"c{i:03d}", "output": BAD_REPLY}) + "\n" for i in range(3)))
    passing = evaluate(cli, judge, testset, rubric, "--outputs", str(good), "--threshold", "3", "--format", "json")
    blocked = evaluate(cli, judge, testset, rubric, "--outputs", str(bad), "--threshold", "3", "--format", "json")
    assert (passing.code, blocked.code) == (0, 1), passing.err + blocked.err
    passed, failed = json.loads(passing.out), json.loads(blocked.out)
    assert passed["outputs"] == "from good.jsonl" and passed["mean"] > failed["mean"]
    assert passed["versions"]["testset"] == failed["versions"]["testset"]  # one test set version, two outputs
    assert passed["versions"]["outputs"] != failed["versions"]["outputs"]


def test_an_outputs_file_missing_a_case_exits_2_and_stores_nothing(cli, judge, files, tmp_path):
    testset, rubric = files(n=3, output=None)
    short = tmp_path / "short.jsonl"
    short.write_text(json.dumps({"id": "c000", "output": GOOD_REPLY}) + "\n")
    result = evaluate(cli, judge, testset, rubric, "--outputs", str(short))
    assert result.code == 2
    assert result.err.strip() == "error: short.jsonl: no output for case(s) c001, c002 of the test set"
    assert not Run.objects.exists() and not models.TestSet.objects.exists()
