"""The demo's pairwise and jury runs, judged by the scripted demo server as `manage.py up` starts it."""

import pytest
from django.urls import reverse

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.models import Run, RunStatus


@pytest.fixture
def demo(transactional_db):
    from django.contrib.auth.models import Group

    from judgeapp.demo import demo_load
    from judgeapp.roles import Role

    # A transactional test's flush also empties the groups the roles migration made.
    for role in Role.values:
        Group.objects.get_or_create(name=role)
    with FakeJudgeServer(DemoBrain(noise=0.08)) as server:
        lines = []
        demo_load(judge_url=server.url, log=lines.append)
        yield lines


def test_demo_pairwise_compares_the_two_support_bots_and_says_it_is_scripted(demo, client):
    run = Run.objects.get(run_id="demo-pairwise")
    assert run.status == RunStatus.DONE and run.uses_scripted_judge
    report = run.report
    assert report["judged"] + report["unjudged_count"] == 24
    # support-bot-v2 is told to give concrete next steps; v1 to be brief.
    assert report["winner"] == "B" and report["wins_b"] > report["wins_a"]
    assert any(line.startswith("demo: pairwise run demo-pairwise done") for line in demo)
    client.login(username="reviewer", password="reviewer-demo-password")
    html = client.get(reverse("run_detail", args=["demo-pairwise"])).content.decode()
    assert "Scripted demo judge." in html and "Version B wins" in html and "p &lt; 0.0001" in html
    case_page = client.get(reverse("pairwise:case", args=["demo-pairwise", report["cases"][0]["case_id"]])).content.decode()
    assert "Scripted demo judge." in case_page


def test_demo_jury_pools_three_scripted_jurors_of_different_families(demo, client):
    run = Run.objects.get(run_id="demo-jury")
    assert run.status == RunStatus.DONE and run.uses_scripted_judge
    report = run.report
    assert [j["family"] for j in report["panel"]] == ["meta", "mistral", "google"]
    assert report["system"]["family"] == "openai" and report["total"] == 24
    assert 0 < report["pass_rate"] < 1
    # Labelled with support-bot, it judges support-bot v1.0's stored outputs, and says so.
    assert report["outputs_source"]["source"] == "uploaded" and report["outputs_source"]["version"] == "v1.0"
    client.login(username="reviewer", password="reviewer-demo-password")
    html = client.get(reverse("run_detail", args=["demo-jury"])).content.decode()
    assert "Scripted demo judge." in html and 'id="jury-grid"' in html


def test_the_demo_stores_support_bots_versions_that_docs_pairwise_compares(demo):
    from judgeapp.models import OutputSet

    stored = {o.version_label: o.row_count for o in OutputSet.objects.filter(system__name="support-bot", testset__name="support")}
    assert stored == {"v1.0": 24, "v2.0": 24, "v2.1": 24}
