"""Running a check-up the way the CLI does (in this process), and reading what it stored."""

from judgeapp.checkup.services import checkup_run_create
from judgeapp.judging import runs
from judgeapp.models import Executor


def checkup(judge, *, concurrency: int = 1, **kwargs):
    run = checkup_run_create(judge=judge, executor=Executor.INLINE, **kwargs)
    runs.run_execute_inline(run=run, concurrency=concurrency)
    run.refresh_from_db()
    return run


def run_checkup_command(capsys, *argv: str) -> tuple[int, str, str]:
    """`manage.py judge-checkup …` as a shell runs it: (exit status, stdout, stderr). Needs transactional_db."""
    from judgeapp.checkup.cli import CheckupCommand

    capsys.readouterr()
    try:
        CheckupCommand().run_from_argv(["manage.py", "judge-checkup", *argv])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err
