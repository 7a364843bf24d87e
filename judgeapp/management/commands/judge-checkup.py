from judgeapp.checkup.cli import CheckupCommand as Command  # noqa: F401
