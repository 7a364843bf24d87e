"""Issue 29, item 4 on the pages and the API: the pointwise form's Estimate button and Budget field, the
large-run tick asked above LARGE_RUN_COST, the run page's usage, the API's estimate, budget and usage; and
the judges file's prices checked as one line."""

import html as html_lib
from decimal import Decimal

import pytest
from django.urls import reverse

from judgeapp.judging import runs as run_services
from judgeapp.judging.errors import InputError
from judgeapp.judging.judges import judges_file_parse
from judgeapp.models import Run
from tests.api.test_endpoints import pointwise_body
from tests.helpers import rendered_without_queries, support_inputs_stored

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


@pytest.fixture
def sent(monkeypatch):
    from judgeapp.judging import taskqueue

    calls = []
    monkeypatch.setattr(taskqueue, "send", lambda name, *args, **options: calls.append(name))
    return calls


def pointwise_form(judge, **extra):
    return {"judge": judge.pk, "threshold": "3.5", **support_inputs_stored().form,
            **extra}


def test_the_estimate_button_answers_with_calls_tokens_and_cost_and_asks_no_judge(client, reviewer, priced_judge, fake_judge):
    client.force_login(reviewer)
    answer = client.post(reverse("pointwise:estimate"), pointwise_form(priced_judge), headers=HTMX)
    page = html_lib.unescape(answer.content.decode())
    assert answer.status_code == 200 and page.lstrip().startswith('<div id="estimate"')
    assert "Estimate:</strong> about 72 judge calls" in page and "about $0.00" in page
    assert fake_judge.chat_requests == [] and not Run.objects.exists()
    # Without htmx, the whole form comes back with the estimate under it.
    whole = html_lib.unescape(client.post(reverse("pointwise:estimate"), pointwise_form(priced_judge)).content.decode())
    assert 'id="pointwise-form"' in whole and "Estimate:</strong> about 72 judge calls" in whole


def test_the_estimate_of_inputs_that_make_no_run_says_what_is_missing(client, reviewer, priced_judge, fake_judge):
    client.force_login(reviewer)
    answer = client.post(reverse("pointwise:estimate"), pointwise_form(priced_judge, testset=""), headers=HTMX)
    assert answer.status_code == 200 and "No estimate: Choose a stored test set or upload one." in answer.content.decode()


def test_a_run_above_the_cost_limit_needs_the_tick_even_when_its_calls_are_few(
    client, reviewer, priced_judge, settings, sent
):
    settings.LARGE_RUN_CALLS, settings.LARGE_RUN_COST = 10_000, Decimal("0.001")
    client.force_login(reviewer)
    url = reverse("pointwise:new")
    refused = client.post(url, pointwise_form(priced_judge))
    page = html_lib.unescape(refused.content.decode())
    assert refused.status_code == 400 and not Run.objects.exists()
    assert "This run would cost about $0.00" in page and "more than the $0.0010 that start without a question" in page
    assert "Start this run of about 72 judge calls (about $0.00" in page
    started = client.post(url, pointwise_form(priced_judge, large_run_confirm="72", budget="0.50"))
    assert started.status_code == 302
    assert Run.objects.get().budget == Decimal("0.5000")


def test_the_budget_field_refuses_an_unpriced_judge_with_a_form_error(client, reviewer, judge, sent):
    client.force_login(reviewer)
    refused = client.post(reverse("pointwise:new"), pointwise_form(judge, budget="1"))
    assert refused.status_code == 400 and not Run.objects.exists()
    assert "a budget needs prices for every judge" in html_lib.unescape(refused.content.decode())


def test_the_api_estimates_starts_with_a_budget_and_answers_with_usage(api_as, reviewer, priced_judge, fake_judge, no_celery):
    api = api_as(reviewer)
    estimate = api.post("/api/v1/runs/pointwise/estimate", pointwise_body(priced_judge, n=4))
    assert estimate.status_code == 200, estimate.content
    body = estimate.json()
    assert body["calls"] == 4 and body["input_tokens"] > 0 and body["cost"] > 0
    assert fake_judge.chat_requests == [] and not Run.objects.exists()

    refused = api.post("/api/v1/runs/pointwise", pointwise_body(priced_judge, n=4, budget="lots"))
    assert refused.status_code == 400 and "budget" in refused.json()["detail"] and not Run.objects.exists()
    started = api.post("/api/v1/runs/pointwise", pointwise_body(priced_judge, n=4, budget="1"))
    assert started.status_code == 201 and started.json()["budget"] == 1.0
    run = run_services.run_execute_inline(run=Run.objects.get(run_id=started.json()["run_id"]), concurrency=1)
    status = api.get(f"/api/v1/runs/{run.run_id}").json()
    assert status["usage"]["calls"] == 4 == len(fake_judge.chat_requests)
    assert status["usage"]["cost"] > 0 and status["stopped"] == ""
    report = api.get(f"/api/v1/runs/{run.run_id}/report").json()
    assert report["usage"] == status["usage"] and report["budget"]["stopped"] is False
    assert "Usage: 4 judge calls (0 cached)" in api.get(f"/api/v1/runs/{run.run_id}/summary").content.decode()

    client = api.client
    client.force_login(reviewer)
    page = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    assert 'id="run-usage"' in page and "4 judge calls (0 from the cache)" in page and 'id="run-budget"' in page


@pytest.mark.parametrize("bad", [b"-0.5", b'"cheap"', b"true", b"nan", b"0.123456"])
def test_a_price_in_the_judges_file_that_is_not_a_price_is_one_line(bad):
    with pytest.raises(InputError, match="input_price_per_million"):
        judges_file_parse(b'[judges.j]\nmodel = "m"\ninput_price_per_million = ' + bad + b"\n", "judges.toml")


def test_a_bad_price_in_the_judges_file_exits_2_with_one_line_at_the_command(cli, files, settings, tmp_path):
    judges_file = tmp_path / "judges.toml"
    judges_file.write_text('[judges.j]\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\noutput_price_per_million = -1\n')
    settings.JUDGES_FILE = str(judges_file)
    testset, rubric = files(n=2)
    result = cli("evaluate", "pointwise", "--testset", testset, "--rubric", rubric, "--judge", "j", "--dry-run")
    assert result.code == 2 and "Traceback" not in result.err
    last = result.err.strip().splitlines()[-1]
    assert last.startswith("error: ") and "output_price_per_million must be a number of dollars per million tokens" in last


def test_judges_file_prices_are_loaded_and_removing_them_unprices_the_judge(settings, tmp_path):
    from judgeapp.judging.judges import judges_sync
    from judgeapp.models import Judge

    judges_file = tmp_path / "judges.toml"
    judges_file.write_text('[judges.j]\nmodel = "m"\ninput_price_per_million = 0.2\noutput_price_per_million = 0.6\n')
    judges_sync(path=str(judges_file))
    judge = Judge.objects.get(name="j")
    assert (judge.input_price_per_million, judge.output_price_per_million) == (Decimal("0.2"), Decimal("0.6"))
    judges_file.write_text('[judges.j]\nmodel = "m"\n')
    judges_sync(path=str(judges_file))
    assert not Judge.objects.get(name="j").priced



def test_the_check_up_button_names_its_cost_at_the_judge_s_prices(client, reviewer, priced_judge):
    from tests.web.test_confirmations import confirm_of

    client.force_login(reviewer)
    page = client.get(reverse("judges")).content.decode()
    question = confirm_of(page, reverse("checkup:start", args=["priced"]))
    assert question.startswith("Check up priced? About 2,388 calls to its endpoint, about $0.")
    assert "at its prices (LLMBar Natural" in question


def test_the_judges_page_reads_every_check_up_cost_at_once_each_from_its_own_judges_history(
    priced_judge, make_judge, django_assert_max_num_queries
):
    from judgeapp.checkup.selectors import checkup_confirms_for_judges, checkup_cost_for_judge
    from judgeapp.judging.accounting import money_text
    from judgeapp.judging.costs import judge_token_profile, judge_token_profiles
    from tests.factories import pointwise_run

    prices = {"input_price_per_million": Decimal("0.20"), "output_price_per_million": Decimal("0.60")}
    other, fresh, unpriced = make_judge("priced-b", **prices), make_judge("priced-c", **prices), make_judge("unpriced")
    for judge, n in ((priced_judge, 4), (other, 6)):
        run_services.run_execute_inline(run=pointwise_run(judge=judge, n=n))
    judges = [priced_judge, other, fresh, unpriced]
    with django_assert_max_num_queries(2):  # the priced judges' histories: this mode's, then any mode's
        confirms = checkup_confirms_for_judges(judges=judges)["checkup_confirms"]
    profiles = judge_token_profiles(judges=judges[:3], mode="checkup")
    assert [profiles[j.pk].learned_from for j in judges[:3]] == [4, 6, 0]
    for judge in judges[:3]:
        assert profiles[judge.pk] == judge_token_profile(judge=judge, mode="checkup")
        assert f", about {money_text(checkup_cost_for_judge(judge=judge))} at its prices" in confirms[judge.name]
    assert confirms["unpriced"].startswith("Check up unpriced? About 2,388 calls to its endpoint (LLMBar")
    cell = rendered_without_queries("judgeapp/checkup/_judge_checkup.html", {"judge": other, "checkup_confirms": confirms})
    assert f'hx-confirm="{html_lib.escape(confirms["priced-b"])}"' in cell
