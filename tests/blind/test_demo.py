"""The demo step: a new user sees a finished blind comparison and one stopped on leakage."""

import pytest
from django.contrib.auth.models import Group, User

from judgeapp.demo import DemoContext, demo_endpoints, demo_users
from judgeapp.demo.steps import blind
from judgeapp.models import BlindComparison, Run
from judgeapp.roles import Role


@pytest.mark.django_db(transaction=True)
def test_demo_blind_shows_a_comparison_and_a_leakage_stop(fake_judge, tmp_path, settings, client):
    settings.BROWSE_ROOTS = [tmp_path / "inbox"]
    for role in Role.values:  # a transactional test before this one may have flushed the migration's groups
        Group.objects.get_or_create(name=role)
    demo_users()
    judges, systems = demo_endpoints(fake_judge.url)
    context = DemoContext(judge_url=fake_judge.url, judge=judges[0], jurors=judges[1:], systems=systems,
                          lead=User.objects.get(username="lead"))
    message = blind(context)
    run = Run.objects.get(run_id="demo-blind")
    assert run.status == "done", message
    doc = run.report["comparison"]
    mapping = {v.real_name: v.label for v in run.blind_comparison.versions.all()}
    assert doc["winner"] == mapping["runbook-demo/runbook-stepwise"]
    assert doc["rubric"][mapping["runbook-demo/runbook-terse"]]["run_consistency"] != "high"
    assert any("scripted demo judge" in line for line in doc["limitations"])
    leaked = BlindComparison.objects.get(status="leaked")
    kinds = {f["kind"] for f in leaked.leakage_flags}
    assert {"known_name", "skill_path", "transcript", "tool_call"} <= kinds
    assert any("support-bot-v2" in f["snippet"] for f in leaked.leakage_flags)
    # The run page says plainly that the verdicts come from the scripted demo server.
    client.force_login(User.objects.get(username="reviewer"))
    html = client.get(f"/runs/{run.run_id}/").content.decode()
    assert "Scripted demo judge" in html
    # The examples can be picked from the form afterwards.
    assert "runbook-demo/runbook-prose" in client.get("/blind/new/").content.decode()
