"""Fixtures for the pointwise tests: files on disk, and the CLI run in this process with its exit status."""

import json
from dataclasses import dataclass
from io import StringIO

import pytest
from django.core.management import load_command_class
from django.core.management.base import OutputWrapper
from django.db import connections

from tests.factories import GOOD_REPLY, RUBRIC_ONE, testset_bytes


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run `manage.py <argv>` the way a shell does (run_from_argv: exit status, one-line errors) in this
    process, so that it sees the test database."""
    # run_from_argv closes every connection when it ends; the test's transaction must survive it.
    monkeypatch.setattr(connections, "close_all", lambda: None)

    def run(*argv: str) -> CliResult:
        command = load_command_class("judgeapp", argv[0])
        out, err = StringIO(), StringIO()
        command.stdout, command.stderr = OutputWrapper(out), OutputWrapper(err)
        try:
            command.run_from_argv(["manage.py", *argv])
            code = 0
        except SystemExit as exc:
            code = exc.code
        captured = capsys.readouterr()  # argparse's own errors go to sys.stderr
        return CliResult(code, out.getvalue() + captured.out, err.getvalue() + captured.err)

    return run


@pytest.fixture
def files(tmp_path):
    """Write a test set and a rubric; returns their paths."""

    def write(*, n=4, output=lambda i: GOOD_REPLY, rubric=RUBRIC_ONE, testset: bytes | None = None, name="support.jsonl"):
        testset_path = tmp_path / name
        testset_path.write_bytes(testset if testset is not None else testset_bytes(n, output=output))
        rubric_path = tmp_path / "rubric.toml"
        rubric_path.write_bytes(rubric)
        return str(testset_path), str(rubric_path)

    return write


@pytest.fixture
def outputs_of():
    """The replies a test set file carries, written as a system's outputs file (JSONL {"id", "output"}) beside
    it: a run labelled with a system judges that system's outputs, never the test set's own."""

    def write(testset_path: str, *, name: str | None = None) -> str:
        from pathlib import Path

        source = Path(testset_path)
        rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
        target = source.with_name(name or f"{source.stem}.outputs.jsonl")
        target.write_text("".join(json.dumps({"id": r["id"], "output": r["output"]}) + "\n" for r in rows), encoding="utf-8")
        return str(target)

    return write
