"""Issue 16, item 2: before a run starts the app says what it already knows — in the form (htmx, as the
fields change) and on the command line (one line each on stderr) — and starting anyway needs a tick in the
browser. An imported judge (no endpoint) cannot be chosen at all."""

import pytest
from django.urls import reverse
from django.utils.html import escape

from judgeapp.judging import content
from judgeapp.judging.preflight import run_warnings
from judgeapp.models import EndpointSource, Judge, Run
from tests import factories
from tests.factories import RUBRIC_ONE
from tests.helpers import support_inputs_stored

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


@pytest.fixture
def imported(db):
    return Judge.objects.create(name="gpt-3.5-turbo", model="gpt-3.5-turbo", family="openai", source=EndpointSource.IMPORT)


@pytest.fixture
def stored_inputs(db):
    return content.testset_store(
        data=factories.testset_bytes(4, output=None), name="support.jsonl",
    ), content.rubric_store(data=RUBRIC_ONE, name="rubric.toml")


def test_the_form_warns_as_fields_change_that_a_and_b_are_one_system(client, reviewer, judge, make_system, stored_inputs):
    bot = make_system("bot-1")
    client.force_login(reviewer)
    page = client.get(reverse("pairwise:new")).content.decode()
    assert 'id="preflight"' in page and 'hx-vals=\'{"preflight": "1"}\'' in page
    partial = client.get(
        reverse("pairwise:new"), {"preflight": "1", "judge": judge.pk, "system_a": bot.pk, "system_b": bot.pk}, headers=HTMX,
    )
    html = partial.content.decode()
    assert partial.status_code == 200 and html.lstrip().startswith('<div id="preflight"') and "<html" not in html
    assert "A and B are the same (bot-1)" in html and 'name="confirm"' in html
    other = make_system("bot-2")
    html = client.get(
        reverse("pairwise:new"), {"preflight": "1", "judge": judge.pk, "system_a": bot.pk, "system_b": other.pk}, headers=HTMX,
    ).content.decode()
    assert "A and B are the same" not in html


def test_starting_anyway_needs_the_tick(client, reviewer, judge, make_system, stored_inputs, django_capture_on_commit_callbacks):
    testset, rubric = stored_inputs
    bot = make_system("bot-1")
    client.force_login(reviewer)
    data = {"testset": testset.pk, "rubric": rubric.pk, "judge": judge.pk, "system_a": bot.pk, "system_b": bot.pk}
    refused = client.post(reverse("pairwise:new"), data)
    assert refused.status_code == 400 and "Start anyway" in refused.content.decode() and Run.objects.count() == 0
    with django_capture_on_commit_callbacks():
        client.post(reverse("pairwise:new"), {**data, "confirm": "on"})
    assert Run.objects.count() == 1


def test_the_pointwise_form_warns_of_a_key_not_set_and_of_the_system_family(client, reviewer, make_system, monkeypatch):
    monkeypatch.delenv("REMOTE_JUDGE_KEY", raising=False)
    remote = Judge.objects.create(
        name="remote", model="gpt-4o", family="openai", base_url="https://judge.example.com/v1", api_key_env="REMOTE_JUDGE_KEY",
    )
    bot = make_system("bot-1", family="openai")
    client.force_login(reviewer)
    html = client.get(
        reverse("pointwise:new"), {"preflight": "1", "judge": remote.pk, "system": bot.pk}, headers=HTMX,
    ).content.decode()
    assert "its key variable REMOTE_JUDGE_KEY is not set" in html
    assert escape("judge remote is of bot-1's family (openai)") in html
    assert "remote is not calibrated" in html


def test_a_locked_judge_is_a_warning_that_needs_the_tick():
    judge = Judge(name="small", model="m", family="qwen", base_url="http://127.0.0.1:9/v1")
    warnings = run_warnings(judges=[judge], status_of=lambda j: {"status": "below level — locked"})
    assert [w.text for w in warnings] == [
        "judge small is locked by calibration (it agreed with people below the set level): its runs cannot pass a gate"]
    assert warnings[0].confirm
    never = run_warnings(judges=[judge], status_of=lambda j: {"status": "not calibrated"})
    assert "is not calibrated" in never[0].text and not never[0].confirm
    plan = {"text": "about 140 more labelled items would settle it, if the kappa stays near 0.58 — an estimate"}
    undecided = run_warnings(judges=[judge], status_of=lambda j: {"status": "undecided", "planning": plan})
    assert (
        undecided[0].text.endswith(plan["text"]) and "undecided by calibration" in undecided[0].text and not undecided[0].confirm
    )


def test_an_imported_judge_is_not_offered_and_cannot_be_posted(client, reviewer, judge, imported):
    client.force_login(reviewer)
    for name in ("pointwise:new", "pairwise:new", "jury:new", "agent:home", "blind:new", "ranker:rank_new", "ranker:compare_new"):
        html = client.get(reverse(name)).content.decode()
        assert (
            judge.name in html and f'<option value="{imported.pk}"' not in html
            and f'value="{imported.pk}" id="id_judges' not in html
        ), name
    response = client.post(reverse("pointwise:new"), {"judge": imported.pk, "threshold": "3.5",
                                                       **support_inputs_stored().form})
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert Run.objects.count() == 0


def test_the_command_refuses_an_imported_judge_in_one_line(cli, files, imported):
    testset, rubric = files(n=2)
    result = cli("evaluate", "pointwise", "--testset", testset, "--rubric", rubric, "--judge", imported.name)
    assert result.code == 2 and result.err.strip().count("\n") == 0
    assert "gpt-3.5-turbo: an imported judge" in result.err and "no endpoint" in result.err
    assert Run.objects.count() == 0


def test_the_command_prints_each_warning_on_one_line_before_it_runs(cli, files, make_judge, make_system, outputs_of):
    judge = make_judge("same-family", family="openai")
    make_system("bot-1", family="openai")
    testset, rubric = files(n=2)
    result = cli("evaluate", "pointwise", "--testset", testset, "--rubric", rubric, "--judge", judge.name,
                 "--system", "bot-1", "--outputs", outputs_of(testset), "--concurrency", "1")
    lines = [line for line in result.err.splitlines() if line.startswith("warning: judge same-family")]
    assert "warning: judge same-family is not calibrated: no person has scored a sample of it" in lines
    assert any("of bot-1's family (openai)" in line for line in lines)
