from judgeapp.pointwise.cli import CompareRunsCommand as Command  # noqa: F401
