"""The demo's ranked set: a new user sees eight postmortems ranked by the scripted demo judge."""

import json

import pytest
from django.contrib.auth.models import User

from judgeapp.demo import DemoContext, demo_endpoints, demo_users
from judgeapp.models import Run, RunStatus

pytestmark = pytest.mark.django_db


def test_demo_rank_ranks_the_postmortems_and_keeps_the_top_5(fake_judge, client):
    from judgeapp.demo.steps import rank

    demo_users()
    judges, systems = demo_endpoints(fake_judge.url)
    message = rank(
        DemoContext(
            judge_url=fake_judge.url, judge=judges[0], jurors=judges[1:], systems=systems, lead=User.objects.get(username="lead"),
        )
    )

    run = Run.objects.get(run_id="demo-rank")
    assert run.status == RunStatus.DONE and run.uses_scripted_judge
    ranking = json.loads(run.ranklists.get().path.read_text())
    assert ranking[0] == "alder.md" and len(ranking) == 5
    assert not {"cedar.md", "dogwood.md", "ginkgo.md"} & set(ranking)  # the thin write-ups are pruned
    assert run.report["candidates"] == 8 and "alder.md" in message
    client.force_login(User.objects.get(username="reviewer"))
    html = client.get(f"/runs/{run.run_id}/").content.decode()
    assert "Scripted demo judge." in html and "alder.md" in html
