"""Issue 16: the dashboard and the releases page say the outcome in words, in a real browser."""

import pytest

from judgeapp.judging import runs
from judgeapp.releases import services as release_services
from tests.browser.conftest import log_in
from tests.factories import pointwise_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def gated(judge, make_system, lead):
    system = make_system("support-bot")
    passed = pointwise_run(judge=judge, n=4, run_id="pw-pass", system=system, threshold=1.0)
    runs.run_execute_inline(run=passed)
    blocked = pointwise_run(judge=judge, n=4, run_id="pw-block", system=system, threshold=4.99)
    runs.run_execute_inline(run=blocked)
    passed.refresh_from_db()
    release_services.release_mark(run=passed, actor=lead, label="v1.0")
    return passed, blocked


def test_dashboard_and_releases_say_passed_or_blocked(page, lead, gated, screenshots):
    log_in(page, "leo")
    page.goto("/")
    passed_row, blocked_row = page.locator('tr[data-run="pw-pass"]'), page.locator('tr[data-run="pw-block"]')
    assert "gate passed" in passed_row.locator(".verdict").inner_text()
    assert "gate blocked" in blocked_row.locator(".verdict").inner_text()
    assert "mean" in blocked_row.inner_text()
    page.screenshot(path=screenshots / "glance-dashboard.png", full_page=True)

    page.select_option('select[name="outcome"]', "blocked")
    page.wait_for_url("**/runs/?**outcome=blocked**")
    assert page.locator("tr[data-run]").count() == 1 and page.locator('tr[data-run="pw-block"]').count() == 1
    page.screenshot(path=screenshots / "glance-dashboard-blocked.png", full_page=True)

    page.goto("/pointwise/releases/")
    release = page.locator('tbody[data-release="v1.0"]')
    assert "gate passed" in release.inner_text()
    assert page.locator("#release-trend circle").count() == 1
    assert "gate blocked" in page.locator("#pointwise-runs").inner_text()
    page.screenshot(path=screenshots / "glance-releases.png", full_page=True)


def test_the_menu_folds_behind_one_button_on_a_phone(browser, live_server, lead, screenshots):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        log_in(page, "leo")
        page.goto("/")
        assert not page.locator("#main-nav").is_visible() and page.locator("label.nav-button").is_visible()
        page.screenshot(path=screenshots / "glance-phone-menu-folded.png", full_page=True)
        page.click("label.nav-button")
        assert page.locator("#main-nav").is_visible() and page.locator("#main-nav a", has_text="Releases").is_visible()
        page.screenshot(path=screenshots / "glance-phone-menu-open.png", full_page=True)
    finally:
        context.close()
