"""The demo's agent run: a new user sees an agent judged by the scripted demo judge."""

import pytest

from fakejudge import FakeJudgeServer
from judgeapp.demo import DemoContext, demo_endpoints, steps
from judgeapp.models import Run

pytestmark = pytest.mark.django_db(transaction=True)


def test_demo_agent_step_judges_the_flowers_workspace_with_the_scripted_judge(lead):
    from judgeapp.agent.core import sandbox_status

    with FakeJudgeServer() as server:
        judges, systems = demo_endpoints(server.url)
        message = steps.agent(DemoContext(judge_url=server.url, judge=judges[0], jurors=judges[1:], systems=systems, lead=lead))
    run = Run.objects.get(run_id="demo-agent")
    assert run.status == "done" and run.uses_scripted_judge
    verdicts = {r["id"]: r["verdict"] for r in run.report["requirements"]}
    expected = {"1": "met", "2": "met", "3": "not_met", "4": "met", "5": "met", "6": "not_met"}
    assert verdicts == expected
    assert "scripted demo judge server" in run.report["notice"]
    assert message == "demo: agent run demo-agent done, 4 of 6 requirements met"
    by_id = {r["id"]: r for r in run.report["requirements"]}
    assert "out/accuracy.png" in by_id["3"]["evidence"]
    if sandbox_status().available:
        assert [c["name"] for c in by_id["2"]["tool_calls"]] == ["read_file", "run_file"]
        assert "test accuracy: 1.000" in by_id["2"]["evidence"]
