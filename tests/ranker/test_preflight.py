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
        "warning: judge oracle is not calibrated: no person has scored a sample of it"
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


@pytest.mark.parametrize(
    ("url_name", "region"), [("ranker:rank_new", "rank-preflight"), ("ranker:compare_new", "compare-preflight")]
)
def test_the_rank_and_compare_forms_warn_of_a_key_not_set_as_the_judge_changes(client, reviewer, remote, judge, url_name, region):
    client.force_login(reviewer)
    page = client.get(reverse(url_name)).content.decode()
    assert f'id="{region}" hx-get="{reverse(url_name)}"' in page
    warned = client.get(reverse(url_name), {"preflight": "1", "judge": remote.pk}, headers=HTMX).content.decode()
    assert warned.lstrip().startswith(f'<div id="{region}"') and "<html" not in warned
    assert "its key variable REMOTE_JUDGE_KEY is not set" in warned and 'name="confirm"' in warned
    quiet = client.get(reverse(url_name), {"preflight": "1", "judge": judge.pk}, headers=HTMX).content.decode()
    assert "REMOTE_JUDGE_KEY" not in quiet and "is not calibrated" in quiet


def test_the_ranker_page_holds_both_forms_each_asking_its_own_url(client, reviewer, judge):
    client.force_login(reviewer)
    page = client.get(reverse("ranker:index")).content.decode()
    assert f'id="rank-preflight" hx-get="{reverse("ranker:rank_new")}"' in page
    assert f'id="compare-preflight" hx-get="{reverse("ranker:compare_new")}"' in page
    assert 'id="preflight"' not in page and page.count('name="confirm"') == 0  # asked only once a warning needs it


def test_a_rank_and_a_compare_with_a_judge_whose_key_is_not_set_need_start_anyway(client, reviewer, remote, monkeypatch):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from judgeapp.judging import taskqueue

    monkeypatch.setattr(taskqueue, "send", lambda name, *args, **options: None)
    client.force_login(reviewer)

    def rank(**extra):
        files = [SimpleUploadedFile("one.md", b"first report"), SimpleUploadedFile("two.md", b"second report")]
        return client.post(
            reverse("ranker:rank_new"),
            {"goal": "depth", "judge": remote.pk, "set_name": "reports", "max_size": 10, "files": files, **extra},
        )

    def compare(**extra):
        files = {"file_a": SimpleUploadedFile("a.md", b"first"), "file_b": SimpleUploadedFile("b.md", b"second")}
        return client.post(reverse("ranker:compare_new"), {"goal": "depth", "judge": remote.pk, **files, **extra})

    for post in (rank, compare):
        refused = post()
        html = refused.content.decode()
        assert refused.status_code == 400 and "Start anyway" in html and "REMOTE_JUDGE_KEY is not set" in html
        assert not Run.objects.exists()
    assert rank(confirm="on").status_code == 302 and compare(confirm="on").status_code == 302
    assert Run.objects.count() == 2
