from judgeapp.pointwise.cli import GateCommand as Command  # noqa: F401
