"""Issue 30, item 4: what costs or breaks asks first. Cancel run, Revoke token, Check up and Mark released
each carry an `hx-confirm` naming the consequence with its figure (the browser's own confirm: keyboard-
accessible, and no inline script, which the Content-Security-Policy forbids); their views answer the htmx
post with a client-side redirect, or a refused form with the form's own card.

A large run is not asked about: no form that starts a run knows its number of judge calls before it is
submitted (the test set is read on the server)."""

import html as html_lib
import re

import pytest
from django.urls import reverse

from judgeapp.api import services as api_services
from judgeapp.judging import runs
from judgeapp.models import ApiToken, Judgment, Release, Run, RunStatus, UnitStatus
from tests.factories import RUBRIC_TWO, pointwise_run

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
    assert confirm_of(page, url) == "Revoke token 'github-actions'? Anything using it, a CI job or a script, is refused from now on."

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
