from judgeapp.datasets.cli import OutputsCommand as Command  # noqa: F401
