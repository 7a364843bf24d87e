"""A reviewer, in headless Chromium: asks the pointwise form for its estimate (no judge asked), is asked to
tick a run above the cost limit, starts it with a budget, and reads its usage on the run's page."""

from decimal import Decimal

import pytest

from judgeapp.judging import runs, taskqueue
from judgeapp.models import Run
from tests.browser.conftest import log_in
from tests.helpers import support_inputs_stored

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_estimate_cost_tick_budget_and_usage_card(page, reviewer, make_judge, fake_judge, settings, monkeypatch):
    monkeypatch.setattr(taskqueue, "send", lambda name, *args, **options: None)  # the run is judged below, in-process
    settings.LARGE_RUN_COST = Decimal("0.001")
    make_judge("priced", input_price_per_million=Decimal("0.20"), output_price_per_million=Decimal("0.60"), max_concurrency=1)
    log_in(page, "rita")
    support_inputs_stored()  # what the demo loads from evals/
    page.goto("/pointwise/")
    page.select_option("#id_judge", label="priced")
    page.select_option("#id_testset", label="support (v1, 24 cases)")
    page.select_option("#id_rubric", label="support-quality (v1)")
    page.get_by_role("button", name="Estimate calls and cost").click()
    page.wait_for_selector("#estimate >> text=Estimate:")
    assert "about 72 judge calls" in page.inner_text("#estimate")
    assert fake_judge.chat_requests == [] and not Run.objects.exists()

    page.fill("#id_budget", "0.50")
    with page.expect_navigation():
        page.get_by_role("button", name="Start the evaluation").click()
    page.wait_for_selector("#large-run")
    assert "(about $0.00" in page.inner_text("#large-run")
    page.locator("#large-run input[type=checkbox]").check()
    page.get_by_role("button", name="Start the evaluation").click()
    run = Run.objects.get()
    page.wait_for_url(f"**/runs/{run.run_id}/")
    assert run.budget == Decimal("0.5000")

    runs.run_execute_inline(run=run, concurrency=1)
    page.reload()
    usage = page.inner_text("#run-usage")
    assert "72 judge calls (0 from the cache)" in usage and "cost $0.00" in usage
    assert "$0.50" in page.inner_text("#run-budget")
