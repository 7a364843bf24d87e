"""Issue 29, item 8: every command the README and docs/*.md show runs as written.

Each fenced block (```bash, ```sh, ```console, or a bare ``` block naming manage.py) is read in document order
(README.md first, then docs/*.md by name); `\\` continuations are joined, comments dropped, and in a console
transcript only the `$ ` lines are commands (a documented "(exit status N)" in the output below one is its
expected status). Each `python manage.py …` is run as a reader would run it: in a working folder holding
`manage.py` and `evals/`, with its own DATA_DIR (`data/`) and SQLite database, the demo loaded against the
scripted demo judge (a FakeJudgeServer here), no judges file of its own and no JUDGE_MODEL — so every judge
a command names must come from the demo's judges file (judgeapp/demo/judges.toml), and a command without
`--judge` uses its `default`. A command passes when it exits with a status its documentation gives and
prints no traceback.

Not run, each for the reason given: usage synopses (placeholders in brackets or capitals: `--judge J`,
`DIR`, `[--trace F]`), and the programs of SKIPPED below. A command block whose program is in neither list
fails the test, so a new example must be runnable or be listed here with its reason.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from fakejudge import DemoBrain, FakeJudgeServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
SHELL_LANGUAGES = {"bash", "sh", "console", "shell"}

# Programs that are not a manage.py command, and why a test cannot run them as written.
SKIPPED = {
    "./start.sh": "starts the web app, a worker and the demo judge and runs until Ctrl-C",
    "./test.sh": "the whole test suite, this test included",
    "export": "sets the reader's environment (a judge's address, a database, a broker)",
    "curl": "talks to a running server over HTTP (docs/api.md: tests/api covers each endpoint)",
    "scripts/ci-gate.sh": "talks to a running server over HTTP (tests/api covers the calls it makes)",
    "celery": "a worker that runs until it is stopped (tests/e2e starts real workers)",
    "sh": "production start-up: PostgreSQL, migrate, collectstatic and gunicorn",
    "scripts/real-model.sh": "downloads a real model (tests/realmodel)",
    "python bench": "a benchmark: minutes of work, measured figures, not a check",
}
# manage.py commands that run until they are stopped.
LONG_RUNNING = {"up": "starts every service and runs until Ctrl-C", "runserver": "the development web server"}
# The commands whose exit status 1 is a documented verdict (blocked, inconclusive, failed check-up, leakage,
# nothing judged), not an error; every other command exits 0.
VERDICT_EXITS = {"evaluate", "gate", "judge-checkup", "blind-compare", "agent-judge"}
# A usage synopsis: optional parts in brackets, an ellipsis, or a placeholder in capitals (F, J, DIR, RUN_ID).
PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*")
EXIT_NOTE = re.compile(r"\(exit status (\d+)\)")


@dataclass
class Example:
    where: str  # file:line
    argv: list[str]
    exits: set[int] | None = None  # documented in a transcript

    def __str__(self) -> str:
        return f"{self.where}: {shlex.join(self.argv)}"


def _commands(body: str, console: bool) -> list[tuple[str, set[int] | None]]:
    """(command line, documented exit status) of a block: continuations joined, comments dropped."""
    lines = body.splitlines()
    found: list[tuple[str, set[int] | None]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if console and not line.startswith("$ "):
            if found and EXIT_NOTE.search(line):
                found[-1] = (found[-1][0], {int(EXIT_NOTE.search(line).group(1))})
            i += 1
            continue
        text = line[2:] if console else line
        while text.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text.rstrip()[:-1].rstrip() + " " + lines[i].strip()
        i += 1
        if text.strip() and not text.lstrip().startswith("#"):
            found.append((text.strip(), None))
    return found


def _synopsis(tokens: list[str]) -> bool:
    for token in tokens[3:]:
        if "[" in token or "…" in token:
            return True
        # A placeholder is a whole word in capitals; a version's label (`A=dir`) is not one.
        if any(
            PLACEHOLDER.fullmatch(part) and len(part) > 1 or part in ("F", "J", "R", "N", "K", "S")
            for part in token.split("=")[-1:]
        ):
            return True
    return False


def _program(tokens: list[str]) -> list[str]:
    """The command less the environment assignments before it (`A=1 B=2 prog …`)."""
    while tokens and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", tokens[0]):
        tokens = tokens[1:]
    return tokens


def examples() -> tuple[list[Example], list[str]]:
    """The runnable examples, and why every other command line is not run."""
    runnable, skipped = [], []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            language, body = block.group(1), block.group(2)
            if language not in SHELL_LANGUAGES and not (language == "" and "manage.py" in body):
                continue
            line = text[: block.start()].count("\n") + 1
            where = f"{path.relative_to(ROOT)}:{line}"
            for command, exits in _commands(body, console=language == "console"):
                if re.match(r"[a-z_]\w*=\(", command):
                    skipped.append(f"{where}: sets a shell variable: {command}")
                    continue
                tokens = _program(shlex.split(command, comments=True))
                if tokens[:2] != ["python", "manage.py"]:
                    program = tokens[0] if tokens else command
                    if program.endswith("python") and len(tokens) > 1:
                        program = "python " + tokens[1].split("/")[0]
                    assert program in SKIPPED, f"{where}: `{command}` is neither a manage.py command nor in SKIPPED with a reason"
                    skipped.append(f"{where}: {program}: {SKIPPED[program]}")
                elif len(tokens) > 2 and tokens[2] in LONG_RUNNING:
                    skipped.append(f"{where}: {tokens[2]}: {LONG_RUNNING[tokens[2]]}")
                elif _synopsis(tokens):
                    skipped.append(f"{where}: a usage synopsis, not a command: {command}")
                else:
                    runnable.append(Example(where, tokens, exits))
    return runnable, skipped


def test_the_extraction_finds_the_readme_examples_and_tells_a_synopsis_from_a_command():
    runnable, skipped = examples()
    shown = [str(example) for example in runnable]
    assert any("README.md" in s and "evaluate pointwise" in s and "--judge small-a" in s for s in shown)
    assert any("README.md" in s and "compare evals/ranker" in s for s in shown)
    assert any("agent-judge --task task.md" in s for s in skipped)  # docs/agent.md's synopsis
    assert not any("…" in s or "[--" in s for s in shown)
    assert _commands(
        "$ python manage.py a \\\n    --b c\nout\n   (exit status 2)\n", console=True,
    ) == [("python manage.py a --b c", {2})]


@pytest.fixture(scope="module")
def workplace(tmp_path_factory):
    """A reader's working folder with the demo loaded against the scripted demo judge."""
    folder = tmp_path_factory.mktemp("reader")
    (folder / "manage.py").symlink_to(ROOT / "manage.py")
    (folder / "evals").symlink_to(ROOT / "evals")
    with FakeJudgeServer(DemoBrain(noise=0.08)) as server:
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("OPENAI_", "JUDGE", "DJANGO_SETTINGS_MODULE", "DATABASE_URL", "DATA_DIR", "CELERY_"))}
        env.update({
            "DJANGO_SETTINGS_MODULE": "judgeapp.settings",
            "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
            "DATA_DIR": str(folder / "data"),
            "JUDGES_FILE": str(folder / "judges.toml"),  # none: the demo's judges only
            "DEMO_JUDGE_KEY": "demo",
            "PYTHONUNBUFFERED": "1",
        })
        for argv in (["migrate", "--verbosity", "0"],
                     [
                         "shell", "-c",
                         f"from judgeapp.demo import demo_load; demo_load(judge_url={server.url!r}, log=lambda line: None)",
                     ]):
            done = subprocess.run(
                [sys.executable, "manage.py", *argv], cwd=folder, env=env, capture_output=True, text=True, timeout=600,
            )
            assert done.returncode == 0, done.stderr[-3000:]
        yield folder, env


def test_every_documented_command_runs_as_written(workplace):
    folder, env = workplace
    runnable, _skipped = examples()
    failures = []
    for example in runnable:
        argv = [sys.executable, *example.argv[1:]]
        done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
        allowed = example.exits or ({0, 1} if example.argv[2] in VERDICT_EXITS else {0})
        if done.returncode not in allowed or "Traceback" in done.stderr:
            failures.append(f"{example}\n  exit {done.returncode} (documented {sorted(allowed)}): {done.stderr.strip()[-600:]}")
    assert not failures, "\n".join(failures)
