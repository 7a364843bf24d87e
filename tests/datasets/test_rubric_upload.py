"""A rubric uploaded on the Datasets page (issue #29, item 1): previewed criterion by criterion (scale, examples,
every problem with its reason) before anything is stored, then saved under a name as v1, v2… with who saved it."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from judgeapp.models import Criterion, Rubric
from tests.factories import RUBRIC_ONE, RUBRIC_TWO

pytestmark = pytest.mark.django_db

NO_SCALE = b'''
[[criteria]]
name = "concision"
description = "Is the reply short?"
'''


def preview(client, data: bytes, name="rubric.toml"):
    return client.post(reverse("datasets:rubric_preview"), {"file": SimpleUploadedFile(name, data)})


def save(client, response, name=None):
    html = response.content.decode()
    assert f'action="{reverse("datasets:rubric_save")}" class="stacked card" id="rubric-save"' in html
    fields = {key: re.search(rf'name="{key}" value="([^"]*)"', html).group(1) for key in ("token", "file_name", "name")}
    return client.post(reverse("datasets:rubric_save"), {**fields, **({"name": name} if name else {})}, follow=True)


def text(html: str, element_id: str) -> str:
    return re.sub(r"\s+", " ", re.search(rf'id="{element_id}".*?</(div|table)>', html, re.DOTALL).group(0))


def test_the_preview_names_the_bad_criterion_with_its_reason_and_stores_nothing(client, reviewer):
    client.force_login(reviewer)
    response = preview(client, RUBRIC_TWO + NO_SCALE)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<strong>2</strong> valid criteria, <strong>1</strong> problem." in html
    problems = text(html, "rubric-problems")
    assert "criterion 3 (concision): missing &#x27;scale&#x27; (the meaning of each score 1-5)" in problems
    criteria = text(html, "preview-criteria")
    assert "<td>helpfulness</td><td>1-5</td><td>5</td>" in criteria and "<td>tone</td><td>1-5</td><td>5</td>" in criteria
    assert 'id="rubric-save"' not in html  # no save while a criterion is invalid
    assert not Rubric.objects.exists() and not Criterion.objects.exists()


def test_a_file_that_is_not_a_rubric_is_one_problem_and_a_bad_upload_a_form_error(client, reviewer):
    client.force_login(reviewer)
    html = preview(client, b'name = "x"\n').content.decode()
    assert "missing &#x27;criteria&#x27;" in text(html, "rubric-problems")
    refused = client.post(reverse("datasets:rubric_preview"), {})
    assert refused.status_code == 400 and 'id="rubric-upload"' in refused.content.decode()
    assert not Rubric.objects.exists()


def test_save_stores_the_version_with_who_saved_it_and_the_same_content_is_no_new_version(client, reviewer, lead):
    client.force_login(reviewer)
    first = save(client, preview(client, RUBRIC_ONE))  # the name offered is the file's own
    assert "Stored rubric support-quality v1: 1 criterion." in first.content.decode()
    v1 = Rubric.objects.get()
    assert (v1.name, v1.created_by, v1.criteria.count()) == ("support-quality", reviewer, 1)

    client.force_login(lead)
    second = save(client, preview(client, RUBRIC_TWO, name="edited.toml"))
    page = second.content.decode()
    assert "Stored rubric support-quality v2: 2 criteria." in page
    versions = text(page, "versions")
    assert re.search(r">v1</a>.*by " + reviewer.username, versions) and re.search(r">v2</a>.*by " + lead.username, versions)

    again = save(client, preview(client, RUBRIC_TWO, name="again.toml"))
    assert "Already stored as rubric support-quality v2; nothing new was stored." in again.content.decode()
    assert Rubric.objects.filter(name="support-quality").count() == 2
    assert Rubric.objects.filter(name="support-quality").order_by("-created_at").first().created_by == lead

    renamed = save(client, preview(client, RUBRIC_ONE), name="billing-quality")
    assert "Stored rubric billing-quality v1: 1 criterion." in renamed.content.decode()
    assert Rubric.objects.get(name="billing-quality").created_by == lead


def test_a_saved_token_cannot_be_saved_twice_nor_a_made_up_one(client, reviewer):
    client.force_login(reviewer)
    shown = preview(client, RUBRIC_ONE)
    save(client, shown)
    again = save(client, shown)
    assert again.status_code == 400 and "upload the file again" in again.content.decode()
    forged = client.post(reverse("datasets:rubric_save"), {"token": "../../etc", "file_name": "r.toml", "name": "x"})
    assert forged.status_code == 400 and "upload the file again" in forged.content.decode()
    assert Rubric.objects.count() == 1
