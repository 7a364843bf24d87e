"""Issue 30, item 4: what costs or breaks asks first. Cancel run, Revoke token, Check up and Mark released
each carry an `hx-confirm` naming the consequence with its figure (the browser's own confirm: keyboard-
accessible, and no inline script, which the Content-Security-Policy forbids); their views answer the htmx
post with a client-side redirect, or a refused form with the form's own card.

A large run asks on submit: no form that starts a run knows its number of judge calls before the server has
read its inputs, so a run of more than LARGE_RUN_CALLS comes back with the estimate and a checkbox "Start this
run of about N judge calls" (its value the N it names), and starts once it is ticked; a smaller run starts at
once."""

import html as html_lib
import re

import pytest
from django.urls import reverse

from judgeapp.api import services as api_services
from judgeapp.judging import runs
from judgeapp.models import ApiToken, Judgment, Release, Run, RunStatus, UnitStatus
from tests import factories
from tests.factories import RUBRIC_ONE, RUBRIC_TWO, pointwise_run
from tests.helpers import support_inputs_stored

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def confirm_of(page: str, action: str) -> str:
    """The hx-confirm text of the form that posts to `action`."""
    match = re.search(rf'<form\b[^>]*\baction="{re.escape(action)}"[^>]*>', page)
    assert match, f"no form posting to {action}"
    form = match.group(0)
    assert f'hx-post="{action}"' in form, "the form is not posted by htmx, so hx-confirm would never ask"
    confirm = re.search(r'hx-confirm="([^"]*)"', form)
    assert confirm, f"the form posting to {action} asks nothing"
    return html_lib.unescape(confirm.group(1))


def test_cancel_run_names_the_judgments_done_and_those_not_asked(client, reviewer, judge):
    run = runs.run_execute_inline(run=pointwise_run(judge=judge, n=4, run_id="r-half"))
    # Half-way: the run under way again, two of its four units still waiting.
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, finished_at=None)
    waiting = Judgment.objects.filter(run=run).order_by("pk").values_list("pk", flat=True)[:2]
    Judgment.objects.filter(pk__in=list(waiting)).update(status=UnitStatus.PENDING)
    client.force_login(reviewer)
    url = reverse("run_cancel", args=["r-half"])
    page = client.get(reverse("run_detail", args=["r-half"])).content.decode()
    assert confirm_of(page, url) == (
        "Cancel run r-half? 2 of 4 judgments were done when this page opened; the rest are not asked."
    )

    response = client.post(url, headers=HTMX)
    assert response["HX-Redirect"] == reverse("run_detail", args=["r-half"])
    assert Run.objects.get(pk=run.pk).status == RunStatus.CANCELLED


def test_cancel_run_not_yet_planned_says_no_judgment_is_asked(client, reviewer, judge):
    pointwise_run(judge=judge, n=2, run_id="r-queued", executor="celery")
    client.force_login(reviewer)
    page = client.get(reverse("run_detail", args=["r-queued"])).content.decode()
    assert confirm_of(page, reverse("run_cancel", args=["r-queued"])) == "Cancel run r-queued? None of its judgments is asked."


def test_revoke_token_names_the_token_and_what_breaks(client, reviewer):
    row, _token = api_services.api_token_create(user=reviewer, name="github-actions")
    client.force_login(reviewer)
    url = reverse("api:token_revoke", args=[row.uuid])
    page = client.get(reverse("api:profile")).content.decode()
    assert (
        confirm_of(page, url) == "Revoke token 'github-actions'? Anything using it, a CI job or a script, is refused from now on."
    )

    response = client.post(url, headers=HTMX)
    assert response["HX-Redirect"] == reverse("api:profile")
    assert ApiToken.objects.get().revoked_at is not None
    assert url not in client.get(reverse("api:profile")).content.decode()  # a revoked token offers no second revoke


def test_check_up_names_its_calls_from_the_sets_sizes(client, reviewer, judge):
    client.force_login(reviewer)
    page = client.get(reverse("judges")).content.decode()
    # LLMBar Natural 100 pairs, MT-Bench human 200, PandaLM 894 (its majority ties left out), both orders.
    calls = 2 * (100 + 200 + 894)
    assert confirm_of(page, reverse("checkup:start", args=["judge-a"])) == (
        f"Check up judge-a? About {calls:,} calls to its endpoint (LLMBar Natural, MT-Bench human judgments, "
        "PandaLM test set v1; both orders, one trial each). A sample of pairs asks fewer, more trials more."
    )


def test_check_up_refused_by_htmx_goes_back_to_the_judges_page_with_the_reason(client, reviewer, judge):
    client.force_login(reviewer)
    response = client.post(reverse("checkup:start", args=["judge-a"]), {"seed": "3"}, headers=HTMX)
    assert response["HX-Redirect"] == reverse("judges") and not Run.objects.exists()
    assert "A draw number without a sample draws nothing" in client.get(reverse("judges")).content.decode()


@pytest.fixture
def finished(judge, make_system):
    run = pointwise_run(judge=judge, n=6, rubric=RUBRIC_TWO, run_id="pw-1", system=make_system("bot"), threshold=1.0)
    return runs.run_execute_inline(run=run)


def test_mark_released_names_the_system_and_that_later_gates_compare_against_it(client, lead, finished):
    client.force_login(lead)
    url = reverse("releases:release", args=["pw-1"])
    page = client.get(reverse("releases:gate", args=["pw-1"])).content.decode()
    assert confirm_of(page, url) == "Mark bot released from run pw-1? Later gates of bot compare against it."

    response = client.post(url, {"label": "v1.1"}, headers=HTMX)
    assert response["HX-Redirect"] == reverse("releases:gate", args=["pw-1"])
    assert Release.objects.get().label == "v1.1"


def test_mark_released_refused_by_htmx_is_its_card_with_the_error_as_200(client, lead, finished):
    client.force_login(lead)
    response = client.post(reverse("releases:release", args=["pw-1"]), {"label": "v" * 101}, headers=HTMX)
    # htmx swaps only a 2xx reply; the form selects its card (#mark-released) from the page.
    assert response.status_code == 200 and not Release.objects.exists()
    html = response.content.decode()
    card = html.split('id="mark-released"', 1)[1]
    assert "at most 100 characters" in card
    plain = client.post(reverse("releases:release", args=["pw-1"]), {"label": "v" * 101})
    assert plain.status_code == 400


# --- A large run --------------------------------------------------------------------------------------


@pytest.fixture
def sent(monkeypatch):
    """What would have gone to the workers."""
    from judgeapp.judging import taskqueue

    calls = []
    monkeypatch.setattr(taskqueue, "send", lambda name, *args, **options: calls.append(name))
    return calls


def large_run_box(page: str) -> tuple[str, str]:
    """(the checkbox's value, its label) of the large-run confirmation on the page."""
    match = re.search(r'<label><input type="checkbox" name="large_run_confirm" value="(\d+)"[^>]*> ([^<]+)</label>', page)
    assert match, "the form asks nothing about the run's size"
    return match.group(1), html_lib.unescape(match.group(2)).strip()


def pointwise_form(judge, **extra):
    return {"judge": judge.pk, "threshold": "3.5", **support_inputs_stored().form,
            **extra}


def test_a_large_pointwise_run_names_its_calls_and_starts_only_once_that_figure_is_confirmed(
    client, reviewer, judge, settings, sent
):
    settings.LARGE_RUN_CALLS = 100
    client.force_login(reviewer)
    url = reverse("pointwise:new")
    # 24 cases × 3 criteria × 2 trials.
    refused = client.post(url, pointwise_form(judge, trials="2"))
    page = refused.content.decode()
    assert refused.status_code == 400 and not Run.objects.exists()
    assert large_run_box(page) == ("144", "Start this run of about 144 judge calls")
    assert "This run asks the judge about 144 times, more than the 100 that start without a question" in html_lib.unescape(page)
    # A tick given for another figure (the inputs changed since) is no confirmation of this one.
    assert client.post(url, pointwise_form(judge, trials="3", large_run_confirm="144")).status_code == 400
    assert not Run.objects.exists()

    started = client.post(url, pointwise_form(judge, trials="2", large_run_confirm="144"))
    assert started.status_code == 302 and Run.objects.count() == 1


def test_a_pointwise_run_under_the_threshold_starts_without_a_question(client, reviewer, judge, settings, sent):
    settings.LARGE_RUN_CALLS = 72  # 24 cases × 3 criteria: not more than the threshold
    client.force_login(reviewer)
    page = client.get(reverse("pointwise:new")).content.decode()
    assert 'name="large_run_confirm"' not in page
    response = client.post(reverse("pointwise:new"), pointwise_form(judge))
    assert response.status_code == 302 and Run.objects.count() == 1


@pytest.fixture
def many_cases(db):
    from judgeapp.judging.content import rubric_store, testset_store

    testset = testset_store(data=factories.testset_bytes(600, output=None), name="big.jsonl")
    return testset, rubric_store(data=RUBRIC_ONE, name="rubric.toml")


def test_a_large_pairwise_run_answers_htmx_with_its_form_asking_about_both_orders(
    client, reviewer, judge, make_system, many_cases, sent
):
    testset, rubric = many_cases
    data = {"testset": testset.pk, "rubric": rubric.pk, "judge": judge.pk, "system_a": make_system("bot-a").pk,
            "system_b": make_system("bot-b").pk}
    client.force_login(reviewer)
    url = reverse("pairwise:new")
    # 600 cases, each judged in both orders; the default threshold is 500.
    refused = client.post(url, data, headers=HTMX)
    assert refused.status_code == 200 and not Run.objects.exists()  # htmx swaps only a 2xx reply
    form = refused.content.decode()
    assert form.lstrip().startswith('<div id="run-form">')
    assert large_run_box(form) == ("1200", "Start this run of about 1,200 judge calls")
    assert "About 1,200 judge calls" in form
    # A sample of 200 cases: 400 calls, no question.
    small = client.post(url, {**data, "sample": "200", "seed": "1"}, headers=HTMX)
    assert small["HX-Redirect"] and Run.objects.count() == 1

    started = client.post(url, {**data, "large_run_confirm": "1200", "run_id": "ab-large"}, headers=HTMX)
    assert started["HX-Redirect"] == reverse("run_detail", args=["ab-large"])


def test_a_large_jury_run_counts_every_juror(client, reviewer, make_judge, sent):
    from judgeapp.judging.content import rubric_store, testset_store

    testset = testset_store(data=factories.testset_bytes(600), name="replies.jsonl")  # with the replies to judge
    rubric = rubric_store(data=RUBRIC_ONE, name="rubric.toml")
    panel = [make_judge(f"juror-{family}", family=family) for family in ("meta", "mistral", "google")]
    data = {"testset": testset.pk, "rubric": rubric.pk, "judges": [j.pk for j in panel]}
    client.force_login(reviewer)
    refused = client.post(reverse("jury:new"), data)
    assert refused.status_code == 400 and not Run.objects.exists()
    assert large_run_box(refused.content.decode()) == ("1800", "Start this run of about 1,800 judge calls")
    started = client.post(reverse("jury:new"), {**data, "large_run_confirm": "1800"})
    assert started.status_code == 302, re.findall(r'class="errorlist[^>]*>(.*?)</ul>', started.content.decode())


def test_a_large_batch_rank_names_the_most_calls_its_inserts_can_make(client, reviewer, judge, settings, sent):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.LARGE_RUN_CALLS = 30
    client.force_login(reviewer)

    def form(**extra):
        files = [SimpleUploadedFile(f"report-{i}.md", f"Report {i}: the outage, its cause and its fix.".encode())
                 for i in range(8)]
        return {"goal": "depth of the analysis", "judge": judge.pk, "set_name": "reports", "max_size": 10, "files": files,
                **extra}

    # Eight inserts into a growing list: 0 + 1 + 2 + 3 + 4 + 4 + 5 + 5 = 24 calls at most, 48 in both orders.
    assert client.post(reverse("ranker:rank_new"), form()).status_code == 302
    refused = client.post(reverse("ranker:rank_new"), form(both_orders="on"))
    assert refused.status_code == 400 and Run.objects.count() == 1
    assert large_run_box(refused.content.decode()) == ("48", "Start this run of about 48 judge calls")
    started = client.post(reverse("ranker:rank_new"), form(both_orders="on", large_run_confirm="48"))
    assert started.status_code == 302 and Run.objects.count() == 2
