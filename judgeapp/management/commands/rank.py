from judgeapp.ranker.cli import RankCommand as Command  # noqa: F401
