"""`trials` on the API: outside 1-10 refused with nothing stored (the rest of --trials: tests/judging/test_trials.py)."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from judgeapp.models import Run
from tests import factories
from tests.factories import GOOD_REPLY, RUBRIC_ONE


@pytest.mark.django_db
def test_the_api_refuses_eleven_trials(api_as, reviewer, judge):
    response = api_as(reviewer).post(
        "/api/v1/runs/pointwise",
        {
            "testset": SimpleUploadedFile("t.jsonl", factories.testset_bytes(2, output=lambda i: GOOD_REPLY)),
            "rubric": SimpleUploadedFile("r.toml", RUBRIC_ONE), "judge": judge.name, "trials": "11",
        },
    )
    assert response.status_code in (400, 422), response.content
    assert "trials" in response.content.decode()
    assert not Run.objects.exists()
