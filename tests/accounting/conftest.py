from tests.pointwise.conftest import cli, files  # noqa: F401  (the same fixtures: the CLI in this process, files on disk)
