"""`blind-compare` end to end over HTTP against the fake judge server (CONTRACT §3, issue 7 acceptance)."""

import json
import subprocess

import pytest
from django.core.management import call_command

from judgeapp.blind.core.comparator import comparison_errors
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
    assert any(line.startswith("Units: ") and "parsed" in line for line in out.splitlines())
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
    assert (
        doc["expectation_results"]["B"]["total"] == 3 and doc["expectation_results"]["B"]["pass_rate"] == 1.0
    ), doc["expectation_results"]["B"]
    assert "Winner: B" in out and "Ranking: B > " in out
    # Every run of every version was judged once, after the rubric.
    keys = sorted(run.judgments.values_list("key", flat=True))
    assert keys == [
        "rubric", "score/A/run-1", "score/A/run-2", "score/A/run-3", "score/B/run-1", "score/B/run-2", "score/C/run-1",
    ]
    # The report counts every judge call, the rubric's included: a finished run's counts add up as a failed one's.
    assert run.report["counts"]["units"] == 7 and run.report["counts"]["parsed"] == 7
    assert "Units: 7: 7 parsed" in out and len(fake_judge.chat_requests) == 7


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


def test_a_version_naming_a_system_a_skill_path_or_holding_a_transcript_stops_with_flags(
    judge, fake_judge, make_system, tmp_path
):
    make_system("support-bot-v2")
    leaky = tmp_path / "leaky"
    (leaky / "run-1").mkdir(parents=True)
    (leaky / "run-1" / "runbook.md").write_text("# Runbook\nWritten by support-bot-v2.\nIt follows skills/runbooks/SKILL.md.\n")
    (leaky / "run-1" / "log.md").write_text('User: write it\nAssistant: reading the skill\n{"tool_calls": [{"id": "1"}]}\n')
    clean = write_version(tmp_path, "clean", [MIDDLING])
    prompt, _ = write_inputs(tmp_path)
    output = tmp_path / "comparison.json"
    status, out, err = blind_compare("--version", f"A={leaky}", "--version", f"B={clean}", "--prompt", str(prompt),
                                     "--output", str(output), "--judge", judge.name)
    assert status == 1
    lines = out.splitlines()
    assert any("run-1/runbook.md line 2" in line and "configured system 'support-bot-v2'" in line for line in lines)
    assert any("run-1/runbook.md line 3" in line and "skill path 'skills/runbooks/SKILL.md'" in line for line in lines)
    assert any("run-1/log.md" in line and "raw transcript" in line for line in lines)
    assert any("run-1/log.md line 3" in line and "tool-call dump" in line for line in lines)
    assert all(line.startswith("LEAKAGE [") and f"version A ({leaky})" in line for line in lines)
    assert "No comparison was written" in err
    # Nothing judged, nothing written.
    assert not output.exists()
    assert fake_judge.chat_requests == []
    assert not Run.objects.exists() and not BlindComparison.objects.exists()


def test_leaks_in_the_prompt_expectations_or_labels_stop_it_too(judge, fake_judge, tmp_path):
    a = write_version(tmp_path, "a", [MIDDLING])
    b = write_version(tmp_path, "b", [STRONG])
    prompt, expectations = write_inputs(tmp_path, expectations=["Better than the with_skill run"])
    prompt.write_text("Write a runbook like the one from gpt-4o.")
    output = tmp_path / "comparison.json"
    status, out, _ = blind_compare("--version", f"with_skill={a}", "--version", f"B={b}", "--prompt", str(prompt),
                                   "--expectations", str(expectations), "--output", str(output), "--judge", judge.name)
    assert status == 1 and not output.exists()
    assert "version labels, label 'with_skill'" in out
    assert "eval prompt, line 1: names the model 'gpt-4o'" in out
    assert "expectations, expectation 1: uses the label key 'with_skill'" in out


def test_a_directory_name_from_the_mapping_found_in_another_version_is_a_leak(judge, fake_judge, tmp_path):
    a = write_version(tmp_path, "runbook-by-atlas", [MIDDLING])
    b = write_version(tmp_path, "other", [STRONG + "\nUnlike runbook-by-atlas, this one has a rollback.\n"])
    prompt, _ = write_inputs(tmp_path)
    status, out, _ = blind_compare("--version", f"A={a}", "--version", f"B={b}", "--prompt", str(prompt),
                                   "--output", str(tmp_path / "c.json"), "--judge", judge.name)
    assert status == 1 and "version name (the mapping) 'runbook-by-atlas'" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--version", "A={a}"], "at least two versions"),
        (["--version", "A={a}", "--version", "B"], "expected LABEL=DIR"),
        (["--version", "A={a}", "--version", "A={b}"], "label 'A' is given twice"),
        (["--version", "A={a}", "--version", "B={a}"], "the same directory"),
        (["--version", "A={a}", "--version", "B={missing}"], "no such directory"),
        (["--version", "A={a}", "--version", "B={empty}"], "no files to compare"),
        (["--version", "A={a}", "--version", "B={b}", "--prompt", "{missing}"], "no such file"),
        (["--version", "A={a}", "--version", "B={b}", "--prompt", "{emptyfile}"], "the file is empty"),
        (["--version", "A={a}", "--version", "B={b}", "--expectations", "{badjson}"], "not valid JSON"),
        (["--version", "A={a}", "--version", "B={b}", "--output", "{missing}/c.json"], "does not exist"),
        (["--version", "A={a}", "--version", "B={b}", "--output", "{a}/c.json"], "inside version A's directory"),
        (["--version", "A={a}", "--version", "B={b}", "--judge", "nobody"], "unknown judge 'nobody'"),
        (["--version", "A={a}", "--version", "B={b}", "--run-id", "bad id!"], "run id"),
    ],
)
def test_bad_input_is_one_clear_error_with_nothing_stored(judge, tmp_path, args, message):
    from judgeapp.judging.errors import InputError

    a = write_version(tmp_path, "a", [MIDDLING])
    b = write_version(tmp_path, "b", [STRONG])
    (tmp_path / "empty").mkdir()
    (tmp_path / "emptyfile.md").write_text("")
    (tmp_path / "bad.json").write_text("[oops")
    prompt, _ = write_inputs(tmp_path)
    values = {"a": a, "b": b, "missing": tmp_path / "missing", "empty": tmp_path / "empty",
              "emptyfile": tmp_path / "emptyfile.md", "badjson": tmp_path / "bad.json"}
    argv = [arg.format(**values) for arg in args]
    if "--prompt" not in argv:
        argv += ["--prompt", str(prompt)]
    if "--output" not in argv:
        argv += ["--output", str(tmp_path / "c.json")]
    if "--judge" not in argv:
        argv += ["--judge", judge.name]
    with pytest.raises(InputError) as exc:
        call_command("blind-compare", *argv)
    assert message in str(exc.value) and "\n" not in str(exc.value)
    assert not Run.objects.exists() and not BlindComparison.objects.exists()


def test_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path):
    import os
    import sys

    from tests.helpers import ROOT

    a = write_version(tmp_path, "a", [MIDDLING])
    b = write_version(tmp_path, "b", [STRONG])
    result = subprocess.run(
        [sys.executable, "manage.py", "blind-compare", "--version", f"A={a}", "--version", f"B={b}",
         "--prompt", str(tmp_path / "missing.md"), "--output", str(tmp_path / "c.json")],
        cwd=ROOT, env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {tmp_path / 'missing.md'}: no such file"
    assert not (tmp_path / "c.json").exists()


def test_a_judge_that_cannot_derive_a_rubric_fails_the_run_and_writes_nothing(judge, fake_judge, tmp_path):
    from fakejudge import Reply

    fake_judge.action = Reply('{"task_analysis": "x", "criteria": []}')
    a = write_version(tmp_path, "a", [MIDDLING])
    b = write_version(tmp_path, "b", [STRONG])
    prompt, _ = write_inputs(tmp_path)
    output = tmp_path / "c.json"
    status, _, err = blind_compare("--version", f"A={a}", "--version", f"B={b}", "--prompt", str(prompt),
                                   "--output", str(output), "--judge", judge.name)
    assert status == 2 and not output.exists()  # the run failed: no verdict, not an invalid comparison (1)
    assert "could not derive the rubric" in err
    run = Run.objects.get()
    assert run.status == "failed" and run.judgments.count() == 1  # no run was scored without a rubric
    assert len(fake_judge.chat_requests) == 2  # the reply and its one retry
    # Its report (the API's) says why and counts the one reply that could not be used (CONTRACT §6).
    from judgeapp.api.selectors import report_get

    report = report_get(run=run)
    assert report["status"] == "failed" and "could not derive the rubric" in report["error"]
    assert report["counts"] == {"units": 1, "parsed": 0, "parse_failures": 1, "truncated": 0, "no_reply": 0, "unusable": 1,
                                "unusable_rate": 1.0, "invalid": True}


def test_a_run_the_judge_cannot_score_is_a_limitation_not_a_failure(judge, fake_judge, tmp_path):
    from fakejudge import DemoBrain, Reply, When

    fake_judge.action = When(lambda r: 'version="A" run="run-2 of 2"' in r.prompt, Reply("no idea"), DemoBrain())
    a = write_version(tmp_path, "a", [MIDDLING, MIDDLING])
    b = write_version(tmp_path, "b", [STRONG])
    prompt, _ = write_inputs(tmp_path)
    output = tmp_path / "c.json"
    status, _, err = blind_compare("--version", f"A={a}", "--version", f"B={b}", "--prompt", str(prompt),
                                   "--output", str(output), "--judge", judge.name)
    assert status == 0, err
    doc = json.loads(output.read_text())
    assert any(line.startswith("Version A run-2 could not be scored") for line in doc["limitations"])
    assert comparison_errors(doc) == []


def test_a_version_with_no_scored_run_gives_no_comparison(judge, fake_judge, tmp_path):
    from fakejudge import DemoBrain, Reply, When

    fake_judge.action = When(lambda r: 'version="B"' in r.prompt, Reply("no idea"), DemoBrain())
    a = write_version(tmp_path, "a", [MIDDLING])
    b = write_version(tmp_path, "b", [STRONG])
    prompt, _ = write_inputs(tmp_path)
    output = tmp_path / "c.json"
    status, _, err = blind_compare("--version", f"A={a}", "--version", f"B={b}", "--prompt", str(prompt),
                                   "--output", str(output), "--judge", judge.name)
    assert status == 1 and not output.exists()
    assert "invalid" in err and "version B has no scored run" in err


def test_rerunning_the_same_comparison_costs_no_judge_call(judge, fake_judge, three_versions):
    root, a, b, c, prompt, expectations = three_versions
    args = ["--version", f"A={a}", "--version", f"B={b}", "--version", f"C={c}", "--prompt", str(prompt), "--judge", judge.name]
    assert blind_compare(*args, "--output", str(root / "1.json"))[0] == 0
    calls = len(fake_judge.chat_requests)
    assert blind_compare(*args, "--output", str(root / "2.json"))[0] == 0
    assert len(fake_judge.chat_requests) == calls
    assert (root / "1.json").read_text() == (root / "2.json").read_text()


@pytest.mark.slow
def test_the_command_in_its_own_process_judges_in_parallel(transactional_db, make_judge, fake_judge, tmp_path):
    """A real `manage.py blind-compare` process (threads, its own connections) against the fake server."""
    import os
    import sys

    from fakejudge import DemoBrain, FakeJudgeServer
    from tests.helpers import ROOT, database_url_for_subprocess

    slow = FakeJudgeServer(DemoBrain(), latency=0.3).start()
    make_judge("scripted", server=slow)
    a = write_version(tmp_path, "a", [MIDDLING, MIDDLING, FAILED_RUN])
    b = write_version(tmp_path, "b", [STRONG, STRONG])
    prompt, expectations = write_inputs(tmp_path)
    output = tmp_path / "comparison.json"
    env = {**os.environ, "DATABASE_URL": database_url_for_subprocess(), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    result = subprocess.run(
        [sys.executable, "manage.py", "blind-compare", "--version", f"A={a}", "--version", f"B={b}", "--prompt", str(prompt),
         "--expectations", str(expectations), "--output", str(output), "--concurrency", "4", "--judge", "scripted"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(output.read_text())
    assert comparison_errors(doc) == [] and doc["winner"] == "B"
    assert doc["rubric"]["A"]["run_consistency"] != "high"
    slow.stop()
    assert slow.max_in_flight > 1


def test_systems_named_only_in_the_judges_file_are_known_names(judge, fake_judge, tmp_path, settings):
    judges_file = tmp_path / "judges.toml"
    judges_file.write_text('[systems.acme-assistant]\nmodel = "acme-large-2"\n')
    settings.JUDGES_FILE = judges_file
    a = write_version(tmp_path, "a", [MIDDLING + "\nDrafted by acme-large-2.\n"])
    b = write_version(tmp_path, "b", [STRONG + "\nAcme Assistant checked it.\n"])
    prompt, _ = write_inputs(tmp_path)
    status, out, _ = blind_compare("--version", f"A={a}", "--version", f"B={b}", "--prompt", str(prompt),
                                   "--output", str(tmp_path / "c.json"), "--judge", judge.name)
    assert status == 1
    assert "model of the system 'acme-assistant' 'acme-large-2'" in out
    assert "configured system 'acme-assistant'" in out


def test_an_empty_run_directory_counts_as_a_failed_run(judge, fake_judge, tmp_path):
    a = write_version(tmp_path, "a", [STRONG, STRONG])
    (a / "run-3").mkdir()
    b = write_version(tmp_path, "b", [STRONG, STRONG])
    prompt, _ = write_inputs(tmp_path)
    output = tmp_path / "c.json"
    status, _, err = blind_compare("--version", f"A={a}", "--version", f"B={b}", "--prompt", str(prompt),
                                   "--output", str(output), "--judge", judge.name)
    assert status == 0, err
    doc = json.loads(output.read_text())
    assert doc["winner"] == "B" and doc["rubric"]["A"]["run_consistency"] == "low"
    assert any(
        'version="A" run="run-3 of 3"' in r.prompt and "(this run produced no files)" in r.prompt
        for r in fake_judge.chat_requests
    )
