"""A command that calls no judge and computes no statistic starts without the heavy libraries: they are
imported where they are used (bench/startup.py measures the time; this checks the behaviour)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("scipy", "openai", "sklearn", "pandas", "numba", "ppi_py", "choix")

PROBE = """
import runpy, sys
sys.argv = ["manage.py", *sys.argv[1:]]
try:
    runpy.run_path("manage.py", run_name="__main__")
except SystemExit:
    pass
print("LOADED:" + ",".join(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})), file=sys.__stderr__)
"""


def loaded_heavy_modules(*argv: str, tmp_path) -> set[str]:
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "judgeapp.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "DATA_DIR": str(tmp_path / "data"),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=set(HEAVY)), *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("LOADED:")]
    assert line, done.stderr[-2000:]
    return {m.split(".")[0] for m in line[-1].removeprefix("LOADED:").split(",") if m}


@pytest.mark.parametrize("argv", [("gate", "--help"), ("evaluate", "pointwise", "--help"), ("rank", "--help")])
def test_help_imports_no_heavy_library(argv, tmp_path):
    assert loaded_heavy_modules(*argv, tmp_path=tmp_path) == set()


def test_the_probe_sees_a_heavy_import(tmp_path):
    # The probe itself works: a command that does import one is caught (`shell -c` runs the import).
    assert "pandas" in loaded_heavy_modules("shell", "-c", "import pandas", tmp_path=tmp_path)
