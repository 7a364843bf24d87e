"""A command that calls no judge, sends no task and computes no statistic starts without the heavy libraries:
they are imported where they are used (bench/startup.py measures the time; this checks the behaviour).
Celery is loaded where a task is sent, numpy where a statistic is computed, django-ninja (and pydantic)
where the API is served; a command runs without Django's system checks, which would load every view."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("scipy", "openai", "sklearn", "pandas", "numba", "ppi_py", "choix", "numpy", "celery", "kombu", "ninja", "pydantic")
COMMANDS = sorted(p.stem for p in (ROOT / "judgeapp/management/commands").glob("*.py") if not p.stem.startswith("_"))

PROBE = """
import atexit, runpy, sys
sys.argv = ["manage.py", *sys.argv[1:]]
# From an exit handler: a judgeapp command's process ends without returning here (manage.py: _end).
atexit.register(lambda: print("LOADED:" + ",".join(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})), \
file=sys.__stderr__))
try:
    runpy.run_path("manage.py", run_name="__main__")
except SystemExit:
    pass
"""


def scratch_env(tmp_path) -> dict:
    return os.environ | {
        "DJANGO_SETTINGS_MODULE": "judgeapp.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "DATA_DIR": str(tmp_path / "data"),
        "JUDGES_FILE": str(tmp_path / "none.toml"),
    }


def loaded_heavy_modules(*argv: str, tmp_path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=set(HEAVY)), *argv], cwd=ROOT, env=scratch_env(tmp_path), capture_output=True,
        text=True, timeout=120
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("LOADED:")]
    assert line, done.stderr[-2000:]
    return {m.split(".")[0] for m in line[-1].removeprefix("LOADED:").split(",") if m}


@pytest.mark.parametrize("argv", [(name, "--help") for name in COMMANDS] + [("evaluate", "pointwise", "--help")])
def test_help_imports_no_heavy_library(argv, tmp_path):
    assert loaded_heavy_modules(*argv, tmp_path=tmp_path) == set()


def test_gate_of_a_stored_run_imports_no_heavy_library(tmp_path):
    # What CI calls after a run: it reads the stored report and decides, with no task, statistic or view.
    setup = (
        "import django; django.setup()\n"
        "from django.core.management import call_command; call_command('migrate', verbosity=0)\n"
        "from judgeapp.models import Executor, Run, RunKind, RunStatus\n"
        "Run.objects.create(run_id='stored', kind=RunKind.POINTWISE, executor=Executor.INLINE, status=RunStatus.DONE,"
        " config={}, versions={}, report={'run_id': 'stored', 'kind': 'pointwise', 'invalid': False, 'mean': 4.2})\n"
    )
    subprocess.run([sys.executable, "-c", setup], cwd=ROOT, env=scratch_env(tmp_path), check=True, timeout=120)
    assert loaded_heavy_modules("gate", "stored", tmp_path=tmp_path) == set()
    done = subprocess.run(
        [sys.executable, "manage.py", "gate", "stored"], cwd=ROOT, env=scratch_env(tmp_path), capture_output=True, text=True,
        timeout=120,
    )
    assert done.stdout.startswith("GATE: "), done.stderr[-2000:]


def test_a_command_that_ends_at_once_keeps_its_status_its_output_and_its_files(tmp_path):
    # manage.py ends a judgeapp command's process without the interpreter's teardown (judging/cli.py:
    # exit_at_once): the exit status, everything printed to a pipe and the files written are all there.
    setup = (
        "import django; django.setup()\n"
        "from django.core.management import call_command; call_command('migrate', verbosity=0)\n"
        "from judgeapp.models import Executor, Run, RunKind, RunStatus\n"
        "Run.objects.create(run_id='low', kind=RunKind.POINTWISE, executor=Executor.INLINE, status=RunStatus.DONE,"
        " config={}, versions={}, report={'run_id': 'low', 'kind': 'pointwise', 'invalid': False, 'mean': 1.5})\n"
    )
    env = scratch_env(tmp_path)
    subprocess.run([sys.executable, "-c", setup], cwd=ROOT, env=env, check=True, timeout=120)
    report = tmp_path / "gate.json"
    blocked = subprocess.run([sys.executable, "manage.py", "gate", "low", "--json", "--report", str(report)],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert blocked.returncode == 1, blocked.stderr[-2000:]
    assert json.loads(blocked.stdout)["passed"] is False and json.loads(report.read_text())["gate"]["passed"] is False
    missing = subprocess.run(
        [sys.executable, "manage.py", "gate", "nosuch"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert (missing.returncode, missing.stderr.strip()) == (2, "error: no run 'nosuch'")


def test_the_probe_sees_a_heavy_import(tmp_path):
    # The probe itself works: a command that does import one is caught (`shell -c` runs the import).
    assert "pandas" in loaded_heavy_modules("shell", "-c", "import pandas", tmp_path=tmp_path)
