"""Issue 16, items 5-8: a run's page just after submit, the demo judge's reasoning, the files the forms
offer, and the set-up (README, admin, favicon, the menu on a phone)."""

import json
import re
import subprocess
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from judgeapp.judging import runs
from judgeapp.models import Judgment, UnitStatus
from tests.factories import pointwise_run

pytestmark = pytest.mark.django_db
ROOT = Path(settings.BASE_DIR)


def test_a_run_just_after_submit_shows_its_units_and_that_it_started(client, reviewer, judge):
    run = pointwise_run(judge=judge, n=4, run_id="just-sent", executor="celery")
    runs.run_start(run_pk=run.pk)
    run.refresh_from_db()
    # A worker has claimed two units; the run row itself still reads as not started.
    for pk in run.judgments.values_list("pk", flat=True)[:2]:
        Judgment.objects.filter(pk=pk).update(status=UnitStatus.CLAIMED, claim_token=uuid.uuid4())
    type(run).objects.filter(pk=run.pk).update(status="queued", started_at=None, total_units=0, done_units=0)
    client.force_login(reviewer)
    html = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    units = re.search(r"<span class=\"small muted\" data-units>(.*?)</span>", html).group(1)
    assert units == "0 of 4 done · 2 being judged · 2 waiting"
    assert "under way: its units are being judged" in html and "Queued" not in html.split("data-units")[0][-200:]
    polled = client.get(reverse("run_progress", args=[run.run_id]), headers={"HX-Request": "true"}).content.decode()
    assert "2 being judged" in polled


def test_the_demo_judges_reasoning_agrees_with_its_score(fake_judge):
    from fakejudge import DemoBrain

    fake_judge.action = DemoBrain(noise=1.0)  # every score drawn at random: the reasoning must follow it
    for i in range(30):
        prompt = (f"<customer_message>Where is my refund {i}?</customer_message>"
                  f"<assistant_reply>Refunds take 5 days; case {i}.</assistant_reply>")
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": prompt}]}).encode()
        request = urllib.request.Request(
            f"{fake_judge.url}/chat/completions", data=body, headers={"Content-Type": "application/json"},
        )
        reply = json.loads(json.loads(urllib.request.urlopen(request, timeout=5).read())["choices"][0]["message"]["content"])
        score, reasoning = reply["score"], reply["reasoning"]
        assert f"scores {score} of 5" in reasoning
        assert ("misses" in reasoning) == (score <= 2) and ("only partly" in reasoning) == (score == 3)


def test_forms_offer_only_what_can_serve(client, reviewer, judge, support_inputs):
    client.force_login(reviewer)
    pointwise = client.get(reverse("pointwise:new")).content.decode()
    assert "support (v1, 24 cases)" in pointwise and "support-quality (v1)" in pointwise  # stored, by name
    for unusable in ("evals/support/testset.jsonl", "trace.jsonl", "flowers.csv", "metrics.json"):
        assert unusable not in pointwise, unusable
    ranker = client.get(reverse("ranker:rank_new")).content.decode()
    assert "ranker/checkout-postmortems" in ranker


def test_pairwise_and_jury_start_from_a_stored_test_set_and_rubric(client, reviewer, judge):
    from judgeapp.judging import content
    from tests import factories

    testset = content.testset_store(data=factories.testset_bytes(3, output=None), name="support.jsonl")
    rubric = content.rubric_store(data=factories.RUBRIC_ONE, name="rubric.toml")
    client.force_login(reviewer)
    for name in ("pairwise:new", "jury:new"):
        html = client.get(reverse(name)).content.decode()
        assert f'<option value="{testset.pk}" selected>' in html and f'<option value="{rubric.pk}" selected>' in html, name
    pairwise = client.get(reverse("pairwise:new")).content.decode()
    # The judge list starts at a judge (the browser selects the first option), never at "---------".
    judge_select = pairwise.split('name="judge"')[1].split("</select>")[0]
    first_option = judge_select.split("<option", 2)[1]
    assert f'value="{judge.pk}"' in first_option and "---------" not in judge_select


def test_a_ranker_run_from_the_sample_postmortems_is_accepted(client, reviewer, judge):
    from judgeapp.ranker.forms import browsable_directories

    directory = next(path for path, label in browsable_directories() if label.endswith("checkout-postmortems"))
    from judgeapp.ranker.forms import readable_roots
    from judgeapp.ranker.services import candidates_in_dir

    assert len(candidates_in_dir(Path(directory), within=readable_roots())) == 8


def test_the_setup_is_as_the_readme_says(client):
    readme = (ROOT / "README.md").read_text()
    assert "--port" in readme
    assert "OPENAI_BASE_URL=http://127.0.0.1:8000/" not in readme and 'base_url = "http://127.0.0.1:8000/' not in readme
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert not [name for name in tracked if name.endswith(".whl")]
    login = client.get("/login/").content.decode()
    assert 'rel="icon"' in login and (ROOT / "static/judgeapp/favicon.svg").exists()


def test_the_demo_lead_may_open_the_admin(client):
    from django.contrib.auth.models import Group

    from judgeapp.demo import demo_users
    from judgeapp.roles import Role

    for role in Role.values:
        Group.objects.get_or_create(name=role)
    demo_users()
    assert client.login(username="lead", password="lead-demo-password")
    assert client.get("/admin/").status_code == 200
    client.logout()
    assert client.login(username="reviewer", password="reviewer-demo-password")
    assert client.get("/admin/").status_code == 302  # only the lead


def test_the_menu_folds_on_a_phone(client, reviewer):
    client.force_login(reviewer)
    html = client.get(reverse("runs")).content.decode()
    assert 'id="nav-toggle"' in html and 'for="nav-toggle"' in html
    css = (ROOT / "static/judgeapp/app.css").read_text()
    assert re.search(r"@media \(max-width: \d+px\) \{[^@]*\.topbar nav \{ display: none;", css)
    assert ".nav-toggle:checked ~ nav { display: flex; }" in css
