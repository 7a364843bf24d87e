"""Issue 29, item 4 for pairwise and the jury, as pointwise has it: the forms' Budget field and Estimate button,
the large-run tick asked above LARGE_RUN_COST, and the API's estimates (no judge asked) and budget."""

import html as html_lib
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from judgeapp.judging import content
from judgeapp.judging import runs as run_services
from judgeapp.models import Run, RunStatus
from tests import factories
from tests.factories import RUBRIC_ONE
from tests.pairwise.builders import good_and_bad, jsonl

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
PRICES = {"input_price_per_million": Decimal("0.20"), "output_price_per_million": Decimal("0.60")}
JURORS = [("juror-llama", "llama-3.1-8b-instruct", "meta"), ("juror-mistral", "mistral-7b-instruct", "mistral"),
          ("juror-gemma", "gemma-2-9b-it", "google")]


@pytest.fixture
def sent(monkeypatch):
    from judgeapp.judging import taskqueue

    calls = []
    monkeypatch.setattr(taskqueue, "send", lambda name, *args, **options: calls.append(name))
    return calls


@pytest.fixture
def stored(db):
    """A stored test set of 4 cases with their replies, and a rubric."""
    testset = content.testset_store(data=factories.testset_bytes(4), name="support.jsonl")
    return testset, content.rubric_store(data=RUBRIC_ONE, name="rubric.toml")


def jurors(make_judge, **prices):
    return [make_judge(name, model=model, family=family, **prices) for name, model, family in JURORS]


def pairwise_form(judge, stored, **extra) -> dict:
    """The pairwise form with both versions' outputs uploaded (a fresh upload each post, as a browser sends)."""
    testset, rubric = stored
    a, b = good_and_bad(4)
    files = {slot: SimpleUploadedFile(f"{slot}.jsonl", jsonl({"id": k, "output": v} for k, v in replies.items()))
             for slot, replies in (("a_file", a), ("b_file", b))}
    return {"testset": testset.pk, "rubric": rubric.pk, "judge": judge.pk, **files, **extra}


def jury_form(panel, stored, **extra) -> dict:
    testset, rubric = stored
    return {"testset": testset.pk, "rubric": rubric.pk, "judges": [j.pk for j in panel], **extra}


def text_of(response) -> str:
    return html_lib.unescape(response.content.decode())


def test_a_costly_pairwise_run_asks_first_and_its_budget_is_saved(client, reviewer, make_judge, stored, settings, sent):
    settings.LARGE_RUN_CALLS, settings.LARGE_RUN_COST = 10_000, Decimal("0.0001")
    judge = make_judge("priced", **PRICES)
    client.force_login(reviewer)
    url = reverse("pairwise:new")
    refused = client.post(url, pairwise_form(judge, stored, budget="0.50"))
    assert refused.status_code == 400 and not Run.objects.exists()
    page = text_of(refused)
    assert "This run would cost about $0.00" in page and "more than the $0.0001 that start without a question" in page
    assert "Start this run of about 8 judge calls (about $0.00" in page  # 4 cases × 2 orders

    started = client.post(url, pairwise_form(judge, stored, budget="0.50", large_run_confirm="8"))
    assert started.status_code == 302, page
    assert Run.objects.get().budget == Decimal("0.5000")


def test_the_jury_form_s_budget_is_saved_on_the_run(client, reviewer, make_judge, stored, sent):
    panel = jurors(make_judge, **PRICES)
    client.force_login(reviewer)
    started = client.post(reverse("jury:new"), jury_form(panel, stored, budget="0.25"))
    assert started.status_code == 302, text_of(started)
    assert Run.objects.get().budget == Decimal("0.2500")


@pytest.mark.parametrize("mode", ["pairwise", "jury"])
def test_a_budget_for_an_unpriced_judge_is_a_form_error_and_nothing_is_stored(mode, client, reviewer, make_judge, stored, sent):
    panel = jurors(make_judge)  # no prices
    form = pairwise_form(panel[0], stored, budget="1") if mode == "pairwise" else jury_form(panel, stored, budget="1")
    client.force_login(reviewer)
    refused = client.post(reverse(f"{mode}:new"), form)
    assert refused.status_code == 400 and not Run.objects.exists() and not sent
    line = "a budget needs prices for every judge, and judge juror-gemma" if mode == "jury" else "and judge juror-llama has none"
    assert line in text_of(refused)


@pytest.mark.parametrize("mode, calls", [("pairwise", 8), ("jury", 12)])
def test_the_estimate_button_shows_calls_and_cost_and_asks_no_judge(mode, calls, client, reviewer, make_judge, stored,
                                                                   fake_judge):
    panel = jurors(make_judge, **PRICES)

    def form(**extra):
        return pairwise_form(panel[0], stored, **extra) if mode == "pairwise" else jury_form(panel, stored, **extra)

    client.force_login(reviewer)
    answer = client.post(reverse(f"{mode}:estimate"), form(), headers=HTMX)
    page = text_of(answer)
    assert answer.status_code == 200 and page.lstrip().startswith('<div id="estimate"')
    assert f"Estimate:</strong> about {calls} judge calls" in page and "about $0.00" in page  # 4 cases × 2 orders, × 3 jurors
    assert fake_judge.chat_requests == [] and not Run.objects.exists()
    # Inputs that make no run say what is missing.
    lacking = client.post(reverse(f"{mode}:estimate"), form(rubric=""), headers=HTMX)
    assert "No estimate: Choose a stored rubric or upload one." in text_of(lacking)


def test_the_api_estimates_a_pairwise_and_a_jury_run_without_asking_a_judge(api_as, reviewer, make_judge, fake_judge):
    panel = jurors(make_judge, **PRICES)
    api = api_as(reviewer)

    def upload(name: str, data: bytes) -> SimpleUploadedFile:
        return SimpleUploadedFile(name, data)

    a, b = good_and_bad(4)
    pairwise = api.post("/api/v1/runs/pairwise/estimate", {
        "testset": upload("support.jsonl", factories.testset_bytes(4, output=None)), "rubric": upload("rubric.toml", RUBRIC_ONE),
        "outputs_a": upload("a.jsonl", jsonl({"id": k, "output": v} for k, v in a.items())),
        "outputs_b": upload("b.jsonl", jsonl({"id": k, "output": v} for k, v in b.items())),
        "judge": panel[0].name, "trials": 2,
    })
    assert pairwise.status_code == 200, pairwise.content
    assert pairwise.json()["calls"] == 4 * 2 * 2  # cases × orders × trials
    assert pairwise.json()["input_tokens"] > 0 and pairwise.json()["cost"] > 0

    def jury_body(judges: str) -> dict:
        return {"testset": upload("support.jsonl", factories.testset_bytes(4)), "rubric": upload("rubric.toml", RUBRIC_ONE),
                "judges": judges, "trials": 2}

    jury = api.post("/api/v1/runs/jury/estimate", jury_body(",".join(j.name for j in panel)))
    assert jury.status_code == 200, jury.content
    assert jury.json()["calls"] == 4 * 3 * 2 and jury.json()["cost"] > 0  # cases × jurors × trials
    refused = api.post("/api/v1/runs/jury/estimate", jury_body("juror-llama,juror-gemma"))
    assert refused.status_code == 400 and "\n" not in refused.json()["detail"]
    assert fake_judge.chat_requests == [] and not Run.objects.exists()


def test_the_api_s_budget_stops_a_jury_run_at_its_cap(api_as, reviewer, make_judge, fake_judge, no_celery):
    jurors(make_judge, input_price_per_million=Decimal(1000), output_price_per_million=Decimal(1000))
    api = api_as(reviewer)
    started = api.post("/api/v1/runs/jury", {
        "testset": SimpleUploadedFile("support.jsonl", factories.testset_bytes(10)),
        "rubric": SimpleUploadedFile("rubric.toml", RUBRIC_ONE), "judges": ",".join(j[0] for j in JURORS), "budget": "0.5",
    })
    assert started.status_code == 201, started.content
    assert started.json()["budget"] == 0.5
    run = run_services.run_execute_inline(run=Run.objects.get(run_id=started.json()["run_id"]), concurrency=1)
    assert run.status == RunStatus.INVALID
    report = api.get(f"/api/v1/runs/{run.run_id}/report").json()
    assert report["stopped"] == "budget" and 0 < report["budget"]["units_judged"] < 30
    assert report["usage"]["calls"] == len(fake_judge.chat_requests) == report["budget"]["units_judged"]


def test_a_jury_estimate_measures_the_system_s_outputs_the_run_would_judge(api_as, reviewer, make_judge, make_system, fake_judge):
    panel = ",".join(j.name for j in jurors(make_judge, **PRICES))
    make_system("support-bot", model="gpt-4o-mini", family="openai")
    api = api_as(reviewer)

    def estimate(**files):
        body = {"testset": SimpleUploadedFile("support.jsonl", factories.testset_bytes(4, output=lambda i: "short")),
                "rubric": SimpleUploadedFile("rubric.toml", RUBRIC_ONE), "judges": panel, "system": "support-bot"}
        return api.post("/api/v1/runs/jury/estimate", {**body, **files})

    refused = estimate()  # the run would never judge the test set's own replies for a system
    assert refused.status_code == 400 and refused.json()["detail"].startswith("support-bot has no outputs for this test set")
    def outputs(reply: str) -> SimpleUploadedFile:
        return SimpleUploadedFile("bot.jsonl", jsonl({"id": f"c{i:03d}", "output": reply} for i in range(4)))

    short, long = estimate(outputs=outputs("short")), estimate(outputs=outputs("a long reply " * 100))
    assert short.status_code == long.status_code == 200, long.content
    # 4 cases × 3 jurors, each prompt carrying the system's 1,300-character reply: about 325 tokens more each.
    assert long.json()["calls"] == 12 and long.json()["input_tokens"] - short.json()["input_tokens"] > 12 * 300
    assert fake_judge.chat_requests == [] and not Run.objects.exists()
