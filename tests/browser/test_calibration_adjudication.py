"""Headless Chromium: a lead resolves two disagreements with the keyboard only; each item is swapped in place,
the focus moves to the next item to resolve, and the count follows."""

import pytest

from calibration.models import Adjudication, Assignment
from calibration.services.labels import label_record
from calibration.services.samples import sample_draw
from tests.browser.conftest import log_in
from tests.calibration.conftest import fast_bootstrap, planted_run, planted_server, scores_for  # noqa: F401 - fixtures
from tests.calibration.test_web import assert_blind

pytestmark = pytest.mark.browser


def test_a_lead_resolves_disagreements_with_the_keyboard(page, planted_run, lead, annotator, make_user, screenshots):
    run = planted_run(scores_for(10))
    bob = make_user("bob", "annotator")
    sample = sample_draw(run=run, size=4, seed=5, overlap=2, annotators=[annotator, bob], created_by=lead)
    items = list(sample.items.order_by("position"))
    for index, item in enumerate(items):
        apart = index in (0, 2)  # 1 beside 5 on two items; the same score on the others
        for user, value in ((annotator, "1" if apart else "3"), (bob, "5" if apart else "3")):
            label_record(assignment=Assignment.objects.get(item=item, annotator=user), answer=value)

    log_in(page, "leo")
    page.goto(f"/calibration/samples/{sample.uuid}/")
    page.click("#to-resolve-link a")
    page.wait_for_selector(".adjudication-item")
    assert page.locator("#to-resolve").inner_text() == "2 items to resolve"
    assert_blind(page.content(), run)
    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))

    page.keyboard.press("4")  # no focus yet: the first item to resolve
    page.wait_for_function("() => document.querySelector('#to-resolve').textContent === '1 item to resolve'")
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'item-2'")
    page.keyboard.press("2")
    page.wait_for_function("() => document.querySelector('#to-resolve').textContent === '0 items to resolve'")
    page.screenshot(path=screenshots / "adjudication-resolved.png", full_page=True)

    assert navigations == [], f"htmx swaps each item in place: {navigations}"
    assert dict(Adjudication.objects.values_list("item__position", "value")) == {0: "4", 2: "2"}
    assert page.locator(".adjudication-item.open").count() == 0
