"""`manage.py agent-judge`: the report, and bad input as one line with exit status 2."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from judgeapp.judging.errors import InputError
from judgeapp.models import Run
from tests.agent.helpers import REQUIREMENTS_MD, TASK, TRACE, make_workspace, zip_bytes
from tests.helpers import ROOT, database_url_for_subprocess


@pytest.fixture
def files(tmp_path):
    (tmp_path / "task.md").write_text(TASK)
    (tmp_path / "requirements.md").write_bytes(REQUIREMENTS_MD)
    (tmp_path / "trace.jsonl").write_bytes(TRACE)
    make_workspace(tmp_path / "ws", with_plot=False)
    return tmp_path


def args_for(files, *extra):
    return ["--task", str(files / "task.md"), "--requirements", str(files / "requirements.md"),
            "--workspace", str(files / "ws"), "--trace", str(files / "trace.jsonl"), "--concurrency", "1", *extra]


@pytest.mark.django_db
def test_agent_judge_prints_the_verdicts_and_writes_the_report(judge, files, capsys, settings):
    settings.AGENT_SANDBOX_ENABLED = False
    report_path = files / "report.json"
    call_command(
        "agent-judge",
        *args_for(files, "--judge", judge.name, "--report", str(report_path), "--run-id", f"cli-{files.name[-12:]}"),
    )
    out = capsys.readouterr().out
    assert "Met 2 of 3 requirements (67%); 1 not met, 0 unverified" in out
    assert "  1. not met    saves the plot to out/accuracy.png" in out
    assert f"Report: {report_path}" in out
    report = json.loads(report_path.read_text())
    assert report["run_id"] == f"cli-{files.name[-12:]}" and report["kind"] == "agent"
    assert [r["verdict"] for r in report["requirements"]] == ["not_met", "met", "met"]
    assert report["met_share"] == 0.6667 and report["requirements"][0]["tool_calls"]
    assert not list(files.glob(".report.json.*"))  # written through a temporary file
    assert Run.objects.get(run_id=f"cli-{files.name[-12:]}").executor == "inline"


@pytest.mark.django_db
def test_agent_judge_takes_a_workspace_archive(judge, files, capsys, settings):
    settings.AGENT_SANDBOX_ENABLED = False
    (files / "ws.zip").write_bytes(zip_bytes({"out/metrics.json": b'{"accuracy": 1}\n'}))
    (files / "one.md").write_text("1. writes the metrics to out/metrics.json\n")
    call_command("agent-judge", "--task", str(files / "task.md"), "--requirements", str(files / "one.md"),
                 "--workspace", str(files / "ws.zip"), "--judge", judge.name, "--concurrency", "1")
    assert "Met 1 of 1 requirements (100%)" in capsys.readouterr().out


@pytest.mark.django_db
@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda f: (f / "requirements.md").write_text("saves the plot\n"),
            "requirements.md line 1: expected a numbered requirement",
        ),
        (lambda f: (f / "trace.jsonl").write_text("{not json\n"), "trace.jsonl line 1: not valid JSON"),
        (lambda f: (f / "task.md").write_text(""), "task.md: the file is empty"),
        (lambda f: (f / "trace.jsonl").unlink(), "trace.jsonl: no such file"),
    ],
)
def test_bad_input_is_refused_before_anything_is_stored(judge, files, change, message):
    change(files)
    with pytest.raises(InputError, match=message):
        call_command("agent-judge", *args_for(files, "--judge", judge.name))
    assert not Run.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_bad_input_on_the_command_line_is_one_line_and_exit_2(fake_judge, files, tmp_path, settings):
    # tests/settings.py points every process at DATA_DIR/judges.toml.
    judges_file = Path(settings.JUDGES_FILE)
    judges_file.write_text(f'[judges.fake]\nmodel = "fake-judge"\nbase_url = "{fake_judge.url}"\n')
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": database_url_for_subprocess()}
    try:
        check_each_is_refused(files, tmp_path, env)
    finally:
        judges_file.unlink()
    assert not Run.objects.exists()


def check_each_is_refused(files, tmp_path, env):
    for argv, message in [
        (
            args_for(files, "--judge", "fake", "--workspace", str(tmp_path / "nope")),
            f"error: {tmp_path / 'nope'}: no such directory or archive",
        ),
        (args_for(files, "--judge", "nobody"), "error: unknown judge 'nobody' (known: fake)"),
    ]:
        done = subprocess.run([sys.executable, "manage.py", "agent-judge", *argv], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().startswith(message), done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.django_db
def test_a_judge_that_never_answers_fails_the_run_and_exits_2(judge, fake_judge, files, capsys):
    from fakejudge import Status

    fake_judge.action = Status(503)
    with pytest.raises(SystemExit) as exit_info:
        call_command("agent-judge", *args_for(files, "--judge", judge.name))
    assert exit_info.value.code == 2  # no verdict at all: not 1, which says "not judged" of an agent
    out, err = capsys.readouterr()
    assert "Run failed" in out and "why: the judge could not be asked" in out
    assert err.splitlines()[-1].startswith("error: run ") and "failed: the judge could not be asked" in err
