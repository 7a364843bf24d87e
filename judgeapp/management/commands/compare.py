from judgeapp.ranker.cli import CompareCommand as Command  # noqa: F401
