import pytest

from judgeapp.judging import runs
from tests.browser.conftest import log_in
from tests.factories import pointwise_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_reviewer_logs_in_and_watches_a_run_progress_to_done(page, reviewer, make_judge, worker_factory, screenshots):
    from fakejudge import DemoBrain, FakeJudgeServer

    with FakeJudgeServer(DemoBrain(), latency=0.3) as slow:
        judge = make_judge("slow", server=slow, max_concurrency=2)
        run = pointwise_run(judge=judge, n=12, executor="celery", run_id="browser-run")
        worker_factory(concurrency=2)
        log_in(page, "rita")
        page.goto("/")
        assert page.locator("h1").inner_text() == "Runs"
        runs.run_enqueue(run=run)
        page.goto("/runs/browser-run/")
        progress = page.locator("#progress-browser-run")
        progress.wait_for()
        first = int(progress.locator("[role=progressbar]").get_attribute("aria-valuenow"))
        page.screenshot(path=screenshots / "run-in-progress.png", full_page=True)
        page.wait_for_selector('#progress-browser-run[data-status="done"]', timeout=60_000)
        assert first < 100
        assert page.locator("#progress-browser-run [role=progressbar]").get_attribute("aria-valuenow") == "100"
        page.screenshot(path=screenshots / "run-done.png", full_page=True)
