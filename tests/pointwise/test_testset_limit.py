"""A test set over MAX_TESTSET_CASES is refused with one line, from the command, the form and the API,
and nothing of it is stored (the test sets stored before are untouched)."""

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from judgeapp import models
from judgeapp.judging import content
from judgeapp.judging.errors import InputError
from judgeapp.models import Case, Run
from tests import factories
from tests.factories import RUBRIC_ONE

pytestmark = pytest.mark.django_db


@pytest.fixture
def limit(settings):
    settings.MAX_TESTSET_CASES = 5
    stored = content.testset_store(data=factories.testset_bytes(5), name="kept.jsonl")  # at the limit: stored
    return stored, list(stored.cases.order_by("position").values_list("case_id", "input"))


def nothing_new_is_stored(limit) -> None:
    stored, cases = limit
    assert list(models.TestSet.objects.all()) == [stored] and not Run.objects.exists()
    assert list(stored.cases.order_by("position").values_list("case_id", "input")) == cases
    assert Case.objects.count() == 5


def test_the_command_refuses_a_test_set_over_the_limit_in_one_line_and_exits_2(cli, files, judge, limit):
    testset, rubric = files(n=6, name="big.jsonl")
    result = cli("evaluate", "pointwise", "--testset", testset, "--rubric", rubric, "--judge", judge.name, "--concurrency", "1")
    assert result.code == 2
    assert result.err == "error: test set big.jsonl has more than 5 cases (MAX_TESTSET_CASES)\n"
    nothing_new_is_stored(limit)


def test_a_csv_over_the_limit_is_refused_and_nothing_of_it_is_stored(limit):
    rows = io.StringIO()
    writer = csv.writer(rows)
    writer.writerow(["id", "input", "output"])
    writer.writerows([f"c{i}", "question", "answer"] for i in range(7))
    with pytest.raises(InputError, match=r"^test set big.csv has more than 5 cases \(MAX_TESTSET_CASES\)$"):
        content.testset_store(data=rows.getvalue().encode(), name="big.csv")
    nothing_new_is_stored(limit)


def test_the_form_shows_the_limit_beside_the_upload(client, reviewer, judge, limit):
    client.force_login(reviewer)
    response = client.post(
        reverse("pointwise:new"),
        {"judge": judge.pk, "threshold": "3.5", "testset_file": SimpleUploadedFile("big.jsonl", factories.testset_bytes(6)),
         "rubric_file": SimpleUploadedFile("rubric.toml", RUBRIC_ONE)},
    )
    assert response.status_code == 400
    assert "test set big.jsonl has more than 5 cases (MAX_TESTSET_CASES)" in response.content.decode()
    nothing_new_is_stored(limit)
