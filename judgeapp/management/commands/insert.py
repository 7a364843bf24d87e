from judgeapp.ranker.cli import InsertCommand as Command  # noqa: F401
