"""The runs page in a browser: tag a run on its page, find it by search and by tag (htmx swaps the list and
keeps the address), page past 50; both pages pass axe and fit a phone (390 px)."""

import pytest

from judgeapp.models import Run, RunKind, RunStatus
from tests.browser.axe import IMPACTS, axe_run
from tests.browser.conftest import log_in
from tests.browser.test_layout import MEASURE

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def serious(page) -> list[str]:
    return [f"{v['id']}: {v['nodes'][0]['target']}" for v in axe_run(page) if v["impact"] in IMPACTS]


def fits(page) -> None:
    measured = page.evaluate(MEASURE, True)
    assert measured["scrollWidth"] <= measured["width"] + 1 and not measured["off"] and not measured["unreachable"], measured


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, bypass_csp=True)  # axe is injected as an inline script
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def test_tag_a_run_and_find_it_by_search_and_by_tag(page, reviewer):
    for i in range(55):
        Run.objects.create(run_id=f"r-{i:03d}", kind=RunKind.JURY, status=RunStatus.DONE, report={"passed": 1, "total": 2},
                           title="Refund questions, nightly" if i == 7 else f"Batch {i}")
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, "rita")

    page.goto("/runs/r-007/")
    assert not serious(page)
    fits(page)
    page.fill("#run-tag-name", "Nightly")
    page.click("#run-tags button:has-text('Add')")
    page.wait_for_selector("#run-tags a.badge:has-text('nightly')")

    page.goto("/runs/")
    assert "page 1 of 2" in page.inner_text("#runs-count")
    assert not serious(page)
    fits(page)
    page.fill("input[name=q]", "refund")
    page.click("#run-filters button[type=submit]")
    page.wait_for_function("() => document.querySelectorAll('#runs tr[data-run]').length === 1")
    assert page.locator("#runs tr[data-run]").get_attribute("data-run") == "r-007"
    assert "q=refund" in page.url  # the address keeps the search: it can be shared

    page.goto("/runs/")
    page.select_option("select[name=tag]", "nightly")
    page.wait_for_function("() => document.querySelectorAll('#runs tr[data-run]').length === 1")
    assert "tag=nightly" in page.url

    page.goto("/runs/")
    page.click("nav.pager a[rel=next]")
    page.wait_for_function("() => document.querySelectorAll('#runs tr[data-run]').length === 5")
    assert "page=2" in page.url and "Page 2 of 2" in page.inner_text("nav.pager")
