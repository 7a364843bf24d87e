"""The API's `prompt` field on the run-starting endpoints: a prompt of the library by name or NAME@vN."""

import pytest

from judgeapp.judging.audit import cli_actor
from judgeapp.judging.library import prompt_template_save
from judgeapp.judging.prompts import library_prompt
from judgeapp.models import Run
from tests.api.test_endpoints import pointwise_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def summaries(db):
    text = library_prompt("pointwise").text.replace("one reply from a customer-support assistant", "one summary of a document")
    return prompt_template_save(mode="pointwise", name="summaries", text=text, actor=cli_actor())


def test_the_api_takes_a_prompt_by_name_and_refuses_an_unknown_one(api_as, reviewer, judge, summaries, no_celery):
    api = api_as(reviewer)
    response = api.post("/api/v1/runs/pointwise", pointwise_body(judge, prompt="summaries@v1"))
    assert response.status_code == 201, response.content
    run = Run.objects.get(run_id=response.json()["run_id"])
    assert run.prompt == summaries and response.json()["versions"]["prompt"] == summaries.version
    refused = api.post("/api/v1/runs/pointwise", pointwise_body(judge, prompt="nosuch"))
    assert refused.status_code == 400
    assert refused.json()["detail"] == "no pointwise prompt named 'nosuch'; the library has default, summaries"
    assert Run.objects.count() == 1
