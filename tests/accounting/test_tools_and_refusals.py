"""Issue 14: an agent judge that never calls a tool leaves the run not judged, unit failures make
`agent-judge` exit 1; a structured-output refusal is said once per run, on stderr, in every mode; a runaway
comparator leaves its candidate unplaced with the calls really made. Over real HTTP, against the fake judge."""

import json

import pytest
from django.core.management import call_command

from fakejudge import DemoBrain, IgnoreTools, Runaway, Status, When
from judgeapp.models import Judgment, Run, RunStatus
from tests.agent.helpers import REQUIREMENTS_MD, TASK, TRACE, make_workspace
from tests.factories import GOOD_REPLY
from tests.pairwise.builders import run_evaluate, write_files

REFUSAL = "response_format json_schema is not supported"


@pytest.fixture
def agent_files(tmp_path, settings):
    settings.AGENT_SANDBOX_ENABLED = False
    (tmp_path / "task.md").write_text(TASK)
    (tmp_path / "requirements.md").write_bytes(REQUIREMENTS_MD)
    (tmp_path / "trace.jsonl").write_bytes(TRACE)
    make_workspace(tmp_path / "ws", with_plot=False)
    return tmp_path


def agent_judge(files, judge, capsys):
    report = files / "report.json"
    capsys.readouterr()
    try:
        call_command("agent-judge", "--task", str(files / "task.md"), "--requirements", str(files / "requirements.md"),
                     "--workspace", str(files / "ws"), "--trace", str(files / "trace.jsonl"), "--concurrency", "1",
                     "--judge", judge.name, "--report", str(report))
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err, json.loads(report.read_text())


@pytest.mark.django_db
def test_a_judge_that_never_calls_a_tool_is_reported_and_the_run_not_judged(judge, fake_judge, agent_files, capsys):
    fake_judge.action = IgnoreTools()
    code, out, err, report = agent_judge(agent_files, judge, capsys)
    assert code == 1
    assert report["not_judged_reasons"] == ["judge did not use its tools"] and report["judged"] is False
    assert "NOT JUDGED: judge did not use its tools" in out and "judge did not use its tools" in err
    assert Run.objects.get(run_id=report["run_id"]).status == RunStatus.INVALID
    assert sum(r["tool_call_count"] for r in report["requirements"]) == 0
    assert report["counts"]["units"] == 3 and report["counts"]["total"] == 3


@pytest.mark.django_db
def test_a_requirement_whose_call_failed_makes_agent_judge_exit_1(judge, fake_judge, agent_files, capsys):
    fake_judge.action = When(lambda r: "out/accuracy.png" in r.prompt, Status(400, message="bad request"), DemoBrain())
    code, out, err, report = agent_judge(agent_files, judge, capsys)
    assert code == 1
    assert report["counts"]["no_reply"] == 1 and report["counts"]["parsed"] == 2
    assert "1 requirement(s) could not be judged" in err


@pytest.mark.django_db
def test_a_tool_using_judge_still_exits_0(judge, fake_judge, agent_files, capsys):
    code, out, err, report = agent_judge(agent_files, judge, capsys)
    assert code == 0, err
    assert report["judged"] is True and report["not_judged_reasons"] == []
    assert report["counts"] == {**report["counts"], "units": 3, "parsed": 3}


@pytest.mark.django_db
def test_a_runaway_agent_reply_is_truncated_and_never_resent_whole(judge, fake_judge, agent_files, capsys):
    fake_judge.action = Runaway()
    code, out, err, report = agent_judge(agent_files, judge, capsys)
    assert report["counts"]["truncated"] == 3 and code == 1
    for request in fake_judge.chat_requests:
        assert {r.body.get("max_tokens") for r in [request]} == {1024}
        assert all(len(m.get("content") or "") < 2000 for m in request.messages if m["role"] == "assistant")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mode", ["pointwise", "pairwise"])
def test_a_structured_output_refusal_is_one_line_on_stderr_per_run(make_judge, fake_judge, tmp_path, capsys, mode):
    judge = make_judge("strict", structured_output="json_schema", max_concurrency=4)
    fake_judge.action = Status(500, message=REFUSAL)
    files = write_files(tmp_path, n=6, testset_outputs=lambda i: GOOD_REPLY)
    argv = [mode, "--testset", files["testset"], "--rubric", files["rubric"], "--judge", judge.name, "--concurrency", "4"]
    if mode == "pairwise":
        argv += ["--a", files["a"], "--b", files["b"]]
    code, out, err = run_evaluate(capsys, *argv)
    assert code == 2  # the run failed: no verdict, so not 1 ("blocked")
    assert err.count("refuses structured output") == 1, err
    assert f"error: run {Run.objects.get().run_id} failed: " in err
    assert "refuses structured output" not in out
    # The first refusal stops the others: later units are refused without a request.
    assert len(fake_judge.chat_requests) <= 4
    run = Run.objects.get()
    assert run.status == RunStatus.FAILED and "refuses structured output 'json_schema'" in run.error


@pytest.mark.django_db(transaction=True)
def test_a_runaway_comparison_leaves_the_candidate_unplaced_with_the_real_call_count(make_judge, fake_judge, tmp_path, capsys):
    from judgeapp.ranker.cli import RankCommand

    judge = make_judge("comparator")
    folder = tmp_path / "candidates"
    folder.mkdir()
    for name, text in (("good.md", "A clear, complete answer with steps."), ("fine.md", "An answer."), ("ramble.md", "RAMBLE")):
        (folder / name).write_text(text)
    fake_judge.action = When(lambda r: "RAMBLE" in r.prompt, Runaway(), DemoBrain())
    capsys.readouterr()
    try:
        RankCommand().run_from_argv(["manage.py", "rank", str(folder), "--goal", "the best answer", "--judge", judge.name])
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 1
    assert "ramble.md" in err and "unplaced" in err
    requests = len(fake_judge.chat_requests)
    assert f"Comparator calls: {requests} " in out or f"Comparator calls: {requests}" in out, out
    assert Judgment.objects.filter(truncated=True).exists()
