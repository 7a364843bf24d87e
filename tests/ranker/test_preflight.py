"""Issue 16, item 2, for the ranker, the agent judge and the blind comparison: what the app knows before a
run starts is said on the command line (one line each on stderr, after the inputs are checked) and in the
form (htmx, as its fields change), and a warning that matters needs "Start anyway"."""

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from judgeapp.models import Judge, Run

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


def test_compare_says_on_stderr_that_its_judge_was_never_calibrated(oracle_judge, oracle, tmp_path):
    oracle.add(tmp_path / "good.md", "a thorough analysis", 0.9)
    oracle.add(tmp_path / "weak.md", "a thin note", 0.2)
    out, err = io.StringIO(), io.StringIO()
    call_command("compare", str(tmp_path / "weak.md"), str(tmp_path / "good.md"), "--judge", "oracle", stdout=out, stderr=err)
    assert out.getvalue().splitlines()[0] == "WINNER: B"  # stdout stays the seed's two lines
    lines = err.getvalue().splitlines()
    assert [line for line in lines if line.startswith("warning: ")] == [
        "warning: judge oracle has never been calibrated: no person has scored a sample of it"
    ]


@pytest.fixture
def remote(monkeypatch):
    monkeypatch.delenv("REMOTE_JUDGE_KEY", raising=False)
    return Judge.objects.create(name="remote", model="gpt-4o", family="openai", base_url="https://judge.example.com/v1",
                                api_key_env="REMOTE_JUDGE_KEY")


@pytest.mark.parametrize("url_name", ["agent:home", "blind:new"])
def test_the_agent_and_blind_forms_warn_of_a_key_not_set_as_the_judge_changes(client, reviewer, remote, judge, url_name):
    client.force_login(reviewer)
    page = client.get(reverse(url_name)).content.decode()
    assert 'id="preflight"' in page
    warned = client.get(reverse(url_name), {"preflight": "1", "judge": remote.pk}, headers=HTMX).content.decode()
    assert warned.lstrip().startswith('<div id="preflight"') and "<html" not in warned
    assert "its key variable REMOTE_JUDGE_KEY is not set" in warned and 'name="confirm"' in warned
    quiet = client.get(reverse(url_name), {"preflight": "1", "judge": judge.pk}, headers=HTMX).content.decode()
    assert "REMOTE_JUDGE_KEY" not in quiet


def test_the_agent_form_needs_start_anyway_for_a_judge_whose_key_is_not_set(client, reviewer, remote):
    client.force_login(reviewer)
    data = {"task": "Plot the accuracy.", "requirements": "1. saves the plot to out/accuracy.png", "judge": remote.pk}
    refused = client.post(reverse("agent:home"), data)
    assert refused.status_code == 400 and "Start anyway" in refused.content.decode()
    assert not Run.objects.exists()
