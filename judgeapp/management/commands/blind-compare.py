from judgeapp.blind.cli import BlindCompareCommand as Command  # noqa: F401
