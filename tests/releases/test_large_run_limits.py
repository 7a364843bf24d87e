"""A lead sets, in the release policy, above how many judge calls (or dollars) a run started from a page asks
"Start this run of about N judge calls" first; empty, the deployment's LARGE_RUN_CALLS and LARGE_RUN_COST."""

from decimal import Decimal

import pytest
from django.urls import reverse

from judgeapp.models import AuditLog, ReleasePolicy, Run
from judgeapp.releases.services import release_policy_set

pytestmark = pytest.mark.django_db

POLICY = {"baseline_rule": "mean", "skipped_baseline": "warn", "injection_flags": "warn", "flaky": "warn"}


@pytest.fixture
def sent(monkeypatch):
    from judgeapp.judging import taskqueue

    calls = []
    monkeypatch.setattr(taskqueue, "send", lambda name, *args, **options: calls.append(name))
    return calls


def pointwise_form(judge, support_inputs, **extra):
    # 24 cases × 3 criteria: 72 judge calls.
    return {"judge": judge.pk, "threshold": "3.5", **support_inputs.form, **extra}


def test_a_lead_lowers_the_calls_limit_and_a_run_from_a_page_then_asks_first(
    client, lead, judge, support_inputs, settings, sent
):
    settings.LARGE_RUN_CALLS = 500
    client.force_login(lead)
    saved = client.post(reverse("releases:policy"), {**POLICY, "large_run_calls": "50", "reason": "small runs only"})
    assert saved.status_code == 302
    entry = AuditLog.objects.get(action=AuditLog.Action.RELEASE_POLICY_SET)
    assert entry.detail["large_run_calls"] == 50 and entry.detail["previous"]["large_run_calls"] is None
    assert "asks first above <strong>50 judge calls</strong>" in client.get(reverse("releases:releases")).content.decode()

    asked = client.post(reverse("pointwise:new"), pointwise_form(judge, support_inputs))
    assert asked.status_code == 400 and not Run.objects.exists() and sent == []
    assert "asks the judge about 72 times, more than the 50 that start" in asked.content.decode()
    started = client.post(reverse("pointwise:new"), pointwise_form(judge, support_inputs, large_run_confirm="72"))
    assert started.status_code == 302 and Run.objects.count() == 1


def test_emptied_limits_are_the_deployments_defaults_again(client, lead, judge, support_inputs, settings, sent):
    settings.LARGE_RUN_CALLS = 60
    release_policy_set(actor=lead, **POLICY, large_run_calls=1000, large_run_cost=Decimal("50"))
    client.force_login(lead)
    assert client.post(reverse("pointwise:new"), pointwise_form(judge, support_inputs)).status_code == 302
    client.post(reverse("releases:policy"), {**POLICY, "large_run_calls": "", "large_run_cost": ""})
    assert ReleasePolicy.objects.first().large_run_calls is None
    asked = client.post(reverse("pointwise:new"), pointwise_form(judge, support_inputs))
    assert asked.status_code == 400 and "more than the 60 that start" in asked.content.decode()


def test_a_policy_change_that_leaves_the_limits_out_keeps_them(lead):
    release_policy_set(actor=lead, **POLICY, large_run_calls=40, large_run_cost=Decimal("2.50"))
    kept = release_policy_set(actor=lead, baseline_rule="regression", skipped_baseline="warn")
    assert (kept.large_run_calls, kept.large_run_cost) == (40, Decimal("2.50"))


def test_a_reviewer_cannot_set_the_limits_and_a_bad_value_is_a_form_error(client, reviewer, lead):
    client.force_login(reviewer)
    assert client.post(reverse("releases:policy"), {**POLICY, "large_run_calls": "5"}).status_code == 403
    client.force_login(lead)
    refused = client.post(reverse("releases:policy"), {**POLICY, "large_run_calls": "0", "large_run_cost": "-1"})
    assert refused.status_code == 400 and not ReleasePolicy.objects.exists()


def test_a_lead_lowers_the_cost_limit_and_a_costly_run_of_few_calls_then_asks_first(
    client, lead, make_judge, support_inputs, settings, sent
):
    settings.LARGE_RUN_CALLS, settings.LARGE_RUN_COST = 10_000, Decimal("10000")
    costly = make_judge("costly", input_price_per_million=Decimal("100"), output_price_per_million=Decimal("300"))
    client.force_login(lead)
    assert client.post(reverse("releases:policy"), {**POLICY, "large_run_cost": "1.00"}).status_code == 302
    assert ReleasePolicy.objects.get().large_run_cost == Decimal("1.00")

    asked = client.post(reverse("pointwise:new"), pointwise_form(costly, support_inputs))
    assert asked.status_code == 400 and not Run.objects.exists() and sent == []
    assert "more than the $1.00 that start" in asked.content.decode()
