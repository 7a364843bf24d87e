"""The house plan holds (docs/ARCHITECTURE.md, .importlinter): `lint-imports` passes on the code as it is,
and fails on a copy of it with a forbidden import planted, naming the contract that broke."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT), "--no-cache", "--config", str(cwd / ".importlinter")],
        cwd=cwd, capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
    )


@pytest.fixture
def house_copy(tmp_path):
    for package in ("judgeapp", "calibration"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "migrations"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    return tmp_path


def plant(copy: Path, module: str, line: str) -> None:
    path = copy / module
    path.write_text(path.read_text() + f"\n{line}\n")


def test_the_code_keeps_every_import_contract():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 5 kept, 0 broken." in result.stdout


@pytest.mark.parametrize(
    "module, line, contract",
    [
        # One mode reaching into another's internals.
        ("judgeapp/jury/runkind.py", "from judgeapp.pairwise.runkind import SLOTS", "Packages import downwards"),
        # A run kind calling up into its own services.
        ("judgeapp/pointwise/runkind.py", "from judgeapp.pointwise import services", "A package's rooms import downwards"),
        # Django in a core.
        ("judgeapp/ranker/core/__init__.py", "import django.db", "Every core is plain Python"),
        # openai anywhere but the judge client.
        ("judgeapp/blind/runkind.py", "import openai", "Only the judge client imports openai"),
        # The shared layer importing a mode.
        ("judgeapp/judging/replies.py", "from judgeapp.pointwise import core", "Packages import downwards"),
    ],
)
def test_a_forbidden_import_breaks_its_contract(house_copy, module, line, contract):
    plant(house_copy, module, line)
    result = lint(house_copy)
    assert result.returncode == 1, result.stdout
    broken = result.stdout.split("Broken contracts", 1)[1]
    assert contract in broken
