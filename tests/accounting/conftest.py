from tests.api.conftest import api_as, token_for  # noqa: F401  (the API's client with a user's token)
from tests.pointwise.conftest import cli, files  # noqa: F401  (the same fixtures: the CLI in this process, files on disk)
