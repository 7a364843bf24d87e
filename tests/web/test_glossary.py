"""Issue 30, item 6: the statistics and state words in plain words on one help page every role reads, and a
figure's name on a page linked to its entry (a link: the keyboard reaches it)."""

import re

import pytest
from django.template import Context, Template

from judgeapp.web.glossary import ENTRIES

pytestmark = pytest.mark.django_db

NAMED = ["bootstrap", "ppi", "alpha", "kappa", "wilson", "bca", "alt-test", "position-bias", "trials", "flaky", "locked",
         "bradley-terry", "undecided", "too-few-labels", "gate-passed", "gate-blocked", "invalid"]


@pytest.mark.parametrize("role", ["lead", "reviewer", "annotator"])
def test_every_role_reads_the_glossary_from_the_menu(client, request, role):
    client.force_login(request.getfixturevalue(role))
    home = client.get("/", follow=True).content.decode()  # an annotator lands on the queue
    assert re.search(r'<nav id="main-nav">.*href="/help/">Help</a>', home, re.S)
    response = client.get("/help/")
    assert response.status_code == 200
    page = response.content.decode()
    for entry in ENTRIES:
        assert f'id="{entry.slug}"' in page, entry.slug
    assert {entry.slug for entry in ENTRIES} >= set(NAMED)
    assert "agreement among annotators" in page and "Krippendorff&#x27;s alpha" in page and "PPI++" in page


def test_a_figures_name_links_to_its_entry_with_its_meaning_as_the_tooltip():
    html = Template('{% load judgeapp %}{% term "kappa" %} and {% term "ppi" "PPI++" %}').render(Context())
    assert html.startswith('<a class="term" href="/help/#kappa" title="Agreement between two raters')
    assert '<a class="term" href="/help/#ppi" title="The judge&#x27;s mean corrected' in html and ">PPI++</a>" in html


def test_a_locked_badge_links_to_locked_and_says_locked():
    status = {"status": "below level — locked",
              "summary": "judge locked: j (configuration abc): kappa 0.41 with people, level 0.60", "blocks": True}
    html = Template('{% include "calibration/_status.html" %}').render(Context({"status": status}))
    assert 'href="/help/#locked"' in html and 'data-calibration="below level — locked"' in html
    assert "not calibrated" not in html
