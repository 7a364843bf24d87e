"""Issue 16, item 4: the imported PandaLM run's page: the sign test instead of "Winner B" on 476 vs 460, the
judge x human-majority confusion matrix, the verdicts a page at a time with both texts a click away."""

import re

import pytest
from django.urls import reverse

from calibration.services.pandalm import pandalm_import
from judgeapp.models import EndpointSource

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def pandalm(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        from django.db import transaction

        with transaction.atomic():
            run, _ = pandalm_import()
            yield run
            transaction.set_rollback(True)


def test_the_import_names_no_winner_the_sign_test_cannot_tell_from_chance(pandalm):
    report = pandalm.report
    assert (report["wins_a"], report["wins_b"]) == (460, 476)
    assert report["sign_test"]["significant"] is False and report["winner"] is None
    assert pandalm.judge.source == EndpointSource.IMPORT


def test_the_page_says_inconclusive_with_the_sign_test_and_the_confusion_matrix(client, reviewer, pandalm):
    client.force_login(reviewer)
    html = client.get(reverse("run_detail", args=[pandalm.run_id])).content.decode()
    assert "inconclusive: no clear winner" in html and "Winner</dt><dd>B" not in html
    assert "p = 0.62" in html
    matrix = re.search(r'<table class="small" id="confusion".*?</table>', html, flags=re.S).group(0)
    cells = [int(n) for n in re.findall(r"<td[^>]*>(\d+)</td>", matrix)]
    assert len(cells) == 16 and sum(cells) == len(pandalm.report["cases"])  # every case has people's labels
    # One page of verdicts, never the whole 999, and no claim that "every verdict" is below.
    assert html.count("<tr>\n    <td class=\"mono\">") == 50
    assert "every verdict" not in html and "Cases 1–50 of 999" in html
    second = client.get(reverse("run_detail", args=[pandalm.run_id]), {"page": "2"}).content.decode()
    assert "Cases 51–100 of 999" in second


def test_a_verdict_opens_the_instruction_and_both_replies(client, reviewer, pandalm):
    client.force_login(reviewer)
    html = client.get(reverse("run_detail", args=[pandalm.run_id])).content.decode()
    link = re.search(r'href="(/runs/pandalm-gpt-3.5-turbo/judgments/[^"]+/)">0</a>', html).group(1)
    page = client.get(link).content.decode()
    assert "Reply A" in page and "Reply B" in page and "Input" in page
    assert "{&#x27;" not in page and "{'" not in page  # the parsed reply as fields, not a dict
