from judgeapp.datasets.cli import DatasetsCommand as Command  # noqa: F401
