"""The datasets tests run `manage.py datasets|outputs` in this process, as the pointwise tests do."""

from tests.pointwise.conftest import cli  # noqa: F401  (the fixture: run_from_argv, exit status, one-line errors)
