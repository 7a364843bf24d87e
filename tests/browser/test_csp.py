"""The pages under the Content-Security-Policy production sends (settings: the same in every environment), in
headless Chromium: htmx swaps a region, and no page reports a violation — no inline script, no event-handler
attribute, no eval, no injected <style>."""

import pytest
from csp.utils import build_policy

from tests.browser.conftest import log_in
from tests.factories import pointwise_run

pytestmark = pytest.mark.browser

# Every violation the page sees, from the moment its document starts (the listener is installed before any
# of the page's own scripts run; it is not subject to the page's policy).
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} blocked ${event.blockedURI || "inline"} at \
${event.sourceFile}:${event.lineNumber}`);
});
"""


def watched(page):
    """The page, with every CSP violation it reports collected (Chromium also logs each one to the console,
    as "Refused to … because it violates the following Content Security Policy directive"), and every
    script error (an htmx that could not start, say)."""
    seen = []

    def console(message):
        if "Content Security Policy" in message.text or "Refused to" in message.text:
            seen.append(f"console {message.type}: {message.text}")

    page.on("console", console)
    page.on("pageerror", lambda error: seen.append(f"page error: {error}"))
    page.add_init_script(RECORD_VIOLATIONS)
    return seen


def violations(page, seen) -> list[str]:
    return seen + page.evaluate("window.__cspViolations || []")


def test_htmx_swaps_a_region_under_the_production_policy_with_no_violation(page, reviewer, judge, screenshots):
    pointwise_run(judge=judge, n=2, run_id="csp-run")
    seen = watched(page)
    log_in(page, "rita")
    response = page.goto("/")
    policy = response.headers["content-security-policy"]
    assert policy == build_policy()
    assert "script-src 'self'" in policy and "'unsafe-eval'" not in policy
    assert "'unsafe-inline'" not in policy.split("style-src-attr")[0]  # only style attributes may be inline

    # The dashboard's filter: htmx fetches the page and swaps its <main>, in place (no navigation).
    page.evaluate("window.__stillThisDocument = true")
    with page.expect_response(lambda r: "outcome=running" in r.url and r.request.headers.get("hx-request") == "true"):
        page.select_option("#run-filters select[name=outcome]", "running")
    page.wait_for_url("**/runs/?*outcome=running*")
    assert page.evaluate("window.__stillThisDocument") is True
    assert page.locator("#run-filters select[name=outcome]").input_value() == "running"
    page.screenshot(path=screenshots / "csp-dashboard-filtered.png", full_page=True)
    assert violations(page, seen) == []

    # A form region that htmx refreshes: the pointwise form's preflight, loaded on arrival and on each change.
    page.goto("/pointwise/")
    with page.expect_response(lambda r: "preflight=1" in r.url):
        page.locator("#id_judge").select_option(index=0)
        page.locator("#id_judge").dispatch_event("change")
    page.screenshot(path=screenshots / "csp-pointwise-form.png", full_page=True)
    assert violations(page, seen) == []


@pytest.mark.parametrize("path", ["/judges/", "/calibration/", "/pointwise/releases/", "/profile/", "/api-docs/"])
def test_pages_report_no_violation(page, reviewer, path, screenshots):
    seen = watched(page)
    log_in(page, "rita")
    page.goto(path)
    page.wait_for_load_state("networkidle")
    assert violations(page, seen) == [], path
    page.screenshot(path=screenshots / f"csp{path.replace('/', '-').rstrip('-')}.png", full_page=True)


def test_the_login_page_and_its_lockout_page_report_no_violation(page, reviewer, settings, screenshots):
    settings.AUTH_FAILURE_LIMIT = 2
    seen = watched(page)
    for _ in range(2):
        page.goto("/login/")
        page.fill("#id_username", "rita")
        page.fill("#id_password", "not-the-password")
        page.click("button[type=submit]")
        page.wait_for_load_state()
    assert "Too many failed logins" in page.locator("#locked-out").inner_text()
    page.screenshot(path=screenshots / "csp-locked-out.png", full_page=True)
    assert violations(page, seen) == []


def test_the_admin_reports_no_violation(page, django_user_model, screenshots):
    django_user_model.objects.create_superuser("root", password="pw-for-tests-1")
    seen = watched(page)
    page.goto("/admin/")  # its login is the app's page
    page.wait_for_url("**/login/?next=/admin/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "pw-for-tests-1")
    page.click("button[type=submit]")
    page.wait_for_url("**/admin/")
    for path in ["/admin/", "/admin/judgeapp/judge/add/", "/admin/auth/user/"]:
        page.goto(path)
        page.wait_for_load_state("networkidle")
        assert violations(page, seen) == [], path
    page.screenshot(path=screenshots / "csp-admin-users.png", full_page=True)
