"""Exit codes a CI job can trust (CONTRACT §3): 0 passed, 1 blocked or invalid, 2 anything else, said in one
line on stderr and never a traceback: a database without tables or out of reach, settings that cannot load,
a judge's server that cannot be reached, a run that failed, an error nobody expected. A blocked gate stays 1
(tests/pointwise/test_cli.py) and a signal 128 + its number (tests/commands/test_interrupt.py)."""

import io
import os
import socket
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.db.utils import OperationalError

from judgeapp.judging.cli import NO_TABLES, JudgeCommand, failure_line
from judgeapp.models import Executor, Judge, Run, RunKind, RunStatus
from tests import factories
from tests.factories import RUBRIC_ONE
from tests.helpers import ROOT


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manage(*argv: str, database_url: str, **env: str) -> subprocess.CompletedProcess:
    """`manage.py <argv>` as CI runs it, with the project's Python, on the database of `database_url`."""
    child_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": database_url, **env}
    child_env.pop("JUDGEAPP_TRACEBACK", None)
    return subprocess.run(
        [sys.executable, "manage.py", *argv], cwd=ROOT, env=child_env, capture_output=True, text=True, timeout=120, check=False
    )


def assert_one_line(done: subprocess.CompletedProcess, line: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [line], done.stderr


@pytest.mark.parametrize(
    "argv", [["evaluate", "pointwise", "--testset", "{dir}/support.jsonl", "--rubric", "{dir}/rubric.toml"], ["gate", "X"]],
)
def test_a_database_without_tables_is_one_line_and_exit_2(tmp_path, argv):
    (tmp_path / "support.jsonl").write_bytes(factories.testset_bytes(2))
    (tmp_path / "rubric.toml").write_bytes(RUBRIC_ONE)
    done = manage(*(a.format(dir=tmp_path) for a in argv), database_url=f"sqlite:///{tmp_path / 'fresh.sqlite3'}")
    assert_one_line(done, f"error: {NO_TABLES}")


def test_a_database_out_of_reach_is_one_line_and_exit_2(tmp_path):
    done = manage("gate", "X", database_url=f"postgres://judgeapp@127.0.0.1:{closed_port()}/judgeapp")
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("error: cannot reach the database (") and "Connection refused" in done.stderr


def test_settings_that_cannot_load_are_one_line_and_exit_2(tmp_path):
    done = manage("gate", "X", database_url=f"sqlite:///{tmp_path / 'db.sqlite3'}", CONN_MAX_AGE="sixty")
    assert_one_line(done, "error: the settings cannot be loaded: invalid literal for int() with base 10: 'sixty'")


@pytest.mark.django_db
def test_a_table_missing_from_a_migrated_database_says_to_migrate():
    # The test database was migrated: a table it lacks is code newer than its migrations, not an empty database.
    line = failure_line(OperationalError("no such table: judgeapp_newthing"))
    assert line == "the database is behind the code (no such table: judgeapp_newthing): run `manage.py migrate`"


class Boom(JudgeCommand):
    def handle(self, *args, **options):
        raise RuntimeError("a bug\nwith a second line")


def test_an_unexpected_error_is_one_line_and_exit_2_and_the_traceback_is_there_when_asked(capsys, monkeypatch):
    monkeypatch.delenv("JUDGEAPP_TRACEBACK", raising=False)
    with pytest.raises(SystemExit) as plain:
        Boom().run_from_argv(["manage.py", "boom"])
    err = capsys.readouterr().err
    assert plain.value.code == 2
    assert err.splitlines() == [
        "error: RuntimeError: a bug (an unexpected error; --traceback or JUDGEAPP_TRACEBACK=1 shows where)"
    ]

    with pytest.raises(SystemExit) as traced:
        Boom().run_from_argv(["manage.py", "boom", "--traceback"])
    err = capsys.readouterr().err
    assert (
        traced.value.code == 2 and err.startswith("Traceback")
        and err.splitlines()[-1].startswith("error: RuntimeError: a bug")
    )


def run_command(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(*argv, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def gone_judge(db):
    """A judge whose server cannot be reached: its base URL is a closed loopback port."""
    return Judge.objects.create(
        name="gone", model="m", family="scripted", base_url=f"http://127.0.0.1:{closed_port()}/v1", timeout_seconds=2
    )


@pytest.mark.django_db
def test_evaluate_with_a_judge_server_that_cannot_be_reached_fails_the_run_and_exits_2(gone_judge, tmp_path):
    (tmp_path / "support.jsonl").write_bytes(factories.testset_bytes(6))
    (tmp_path / "rubric.toml").write_bytes(RUBRIC_ONE)
    code, _, err = run_command(
        "evaluate", "pointwise", "--testset", str(tmp_path / "support.jsonl"), "--rubric", str(tmp_path / "rubric.toml"),
        "--judge", "gone", "--concurrency", "1", "--run-id", "unreachable",
    )
    assert code == 2, err
    errors = [line for line in err.splitlines() if not line.startswith("warning: ")]
    assert errors == ["error: run unreachable failed: judge 'gone' (m): cannot connect to the server, 5 attempts"]
    run = Run.objects.get(run_id="unreachable")
    # Failed at the first unit, not after every unit waited through the same retries.
    assert run.status == RunStatus.FAILED and run.failed_units == 1


@pytest.mark.django_db
def test_rank_with_a_judge_server_that_cannot_be_reached_exits_2(gone_judge, tmp_path):
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text(f"candidate {name}")
    code, _, err = run_command(
        "rank", str(tmp_path), "--goal", "clarity", "--set", "s", "--judge", "gone", "--run-id", "rank-gone",
    )
    assert code == 2, err
    assert err.splitlines()[-1].startswith("error: run rank-gone failed: judge 'gone': its server cannot be reached (")


@pytest.mark.django_db
@pytest.mark.parametrize("status", [RunStatus.FAILED, RunStatus.RUNNING])
def test_gate_of_a_run_that_failed_or_has_not_finished_exits_2(status):
    Run.objects.create(run_id="r", kind=RunKind.POINTWISE, executor=Executor.INLINE, status=status, config={}, versions={},
                       error="judge 'gone' (m): cannot connect to the server, 5 attempts" if status == RunStatus.FAILED else "")
    code, out, err = run_command("gate", "r")
    assert code == 2 and out.startswith("GATE: BLOCKED"), err
    assert err.splitlines() == [
        "error: run r failed: judge 'gone' (m): cannot connect to the server, 5 attempts" if status == RunStatus.FAILED
        else "error: run r is running: its gate is decided once it finishes"
    ]
