"""Headless Chromium: an annotator scores with the keyboard only, undoes one, and the labels are stored;
the page's HTML names no system, judge or model."""

import pytest

from calibration.models import Assignment, AssignmentState
from calibration.services.samples import sample_draw
from tests.browser.conftest import log_in
from tests.calibration.conftest import RUBRIC_TWO, fast_bootstrap, planted_run, planted_server, scores_for, small_pairwise_run  # noqa: F401 - fixtures
from tests.calibration.test_web import assert_blind

pytestmark = pytest.mark.browser


def current(page) -> str:
    return page.locator("#queue-item").get_attribute("data-assignment")


def wait_for_item_other_than(page, uuid):
    page.wait_for_function(
        "uuid => document.querySelector('#queue-item').dataset.assignment !== uuid && !document.querySelector('#queue-item "
        "button[disabled]')",
        arg=uuid,
    )


def test_annotator_scores_five_items_with_the_keyboard_only_undoes_one_and_the_labels_are_stored(
    page, planted_run, annotator, make_user, screenshots
):
    run = planted_run(scores_for(10), rubric=RUBRIC_TWO)
    bob = make_user("bob", "annotator")
    sample_draw(run=run, size=8, seed=4, overlap=2, annotators=[annotator, bob])
    log_in(page, "ann")
    page.wait_for_url("**/calibration/queue/")  # an annotator's home is their queue
    page.wait_for_selector("#queue-item")
    assert_blind(page.content(), run)
    page.screenshot(path=screenshots / "queue-first-item.png", full_page=True)

    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    pressed = {}
    for key in ("5", "4", "3", "2", "1"):
        item = current(page)
        assert_blind(page.content(), run)
        page.keyboard.press(key)
        wait_for_item_other_than(page, item)
        pressed[item] = key
    assert "5 of 8 done" in page.locator("#queue-progress").inner_text()

    last = list(pressed)[-1]
    showing = current(page)
    page.keyboard.press("u")
    wait_for_item_other_than(page, showing)
    assert current(page) == last  # the undone item is back
    assert "4 of 8 done" in page.locator("#queue-progress").inner_text()
    assert Assignment.objects.get(uuid=last).state == AssignmentState.PENDING
    page.keyboard.press("2")
    wait_for_item_other_than(page, last)
    pressed[last] = "2"

    skipped = current(page)
    page.keyboard.press("s")
    wait_for_item_other_than(page, skipped)
    assert_blind(page.content(), run)
    assert navigations == [], f"htmx swaps the items in place, the page never reloads: {navigations}"
    page.screenshot(path=screenshots / "queue-after-scoring.png", full_page=True)
    stored = dict(Assignment.objects.filter(annotator=annotator, state=AssignmentState.LABELLED).values_list("uuid", "value"))
    assert {str(k): v for k, v in stored.items()} == pressed
    assert Assignment.objects.get(uuid=skipped).state == AssignmentState.SKIPPED


def test_lead_sees_real_agreement_figures_and_the_lock_on_the_calibration_page(
    page, lead, annotator, small_pairwise_run, screenshots
):
    from calibration.services.agreement import agreement_compute
    from calibration.services.pandalm import pandalm_import

    run, sample = pandalm_import()
    agreement_compute(sample_pk=sample.pk)
    pairs = small_pairwise_run(n=6)
    sample_draw(run=pairs, size=6, seed=1, annotators=[annotator])
    log_in(page, "leo")
    page.goto("/calibration/")
    row = page.locator("#agreements tbody tr").first
    assert "gpt-3.5-turbo" in row.inner_text() and "locked" in row.inner_text()
    assert "0.478" in row.inner_text()  # Cohen's kappa of GPT-3.5 against the three annotators
    page.click("text=Change the level")
    assert page.locator("#level-form").is_visible()
    page.screenshot(path=screenshots / "calibration-overview.png", full_page=True)
    page.click(f"a[href$=\"/calibration/samples/{sample.uuid}/\"] >> nth=0")
    page.wait_for_url(f"**/calibration/samples/{sample.uuid}/")
    assert "Krippendorff" in page.content()
    page.screenshot(path=screenshots / "calibration-sample.png", full_page=True)

    page.context.clear_cookies()
    log_in(page, "ann")
    page.wait_for_selector("#queue-item")
    assert page.locator("h2", has_text="Reply 1").is_visible() and page.locator("h2", has_text="Reply 2").is_visible()
    assert_blind(page.content(), pairs)
    page.screenshot(path=screenshots / "queue-pairwise.png", full_page=True)
