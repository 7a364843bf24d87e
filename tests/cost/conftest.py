from decimal import Decimal

import pytest

from tests.api.conftest import api_as, no_celery, token_for  # noqa: F401  (the API's client with a user's token)
from tests.pointwise.conftest import cli, files  # noqa: F401  (the CLI in this process, files on disk)


@pytest.fixture
def priced_judge(make_judge):
    """The demo judge (the fake server's scripted brain) at the demo's example prices: $0.20 a million tokens
    in, $0.60 out."""
    return make_judge("priced", input_price_per_million=Decimal("0.20"), output_price_per_million=Decimal("0.60"))
