"""Headless Chromium: an annotator reads the lead's instructions and the criterion, comments on an item and
flags it, and scores it — with the keyboard only; the page never reloads and the lead sees the flag."""

import pytest

from calibration.models import Assignment, AssignmentState, ItemNote
from calibration.services.annotation import sample_instructions_set
from calibration.services.samples import sample_draw
from tests.browser.conftest import log_in
from tests.calibration.conftest import RUBRIC_TWO, fast_bootstrap, planted_run, planted_server, scores_for  # noqa: F401 - fixtures
from tests.calibration.test_web import assert_blind

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_annotator_reads_instructions_comments_flags_and_scores_with_the_keyboard_only(
    page, planted_run, annotator, lead, screenshots
):
    run = planted_run(scores_for(6), rubric=RUBRIC_TWO)
    sample = sample_draw(run=run, size=4, seed=4, annotators=[annotator])
    sample_instructions_set(
        sample=sample, instructions="Score **the reply only**.\n\n<script>window.pwned = 1</script>", actor=lead,
    )
    log_in(page, "ann")
    page.wait_for_url("**/calibration/queue/")
    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    instructions = page.locator("#instructions")
    assert instructions.get_attribute("open") is not None  # open on the first item of a sample
    assert "the reply only" in instructions.locator(".instructions strong").inner_text()
    assert page.evaluate("() => window.pwned") is None  # the script in the instructions is text, never run
    assert page.locator("#criterion .criterion-name").first.is_visible()
    assert_blind(page.content(), run)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=screenshots / "annotation-item-1280.png", full_page=True)

    item = page.locator("#queue-item").get_attribute("data-assignment")
    page.keyboard.press("c")  # to the comment box
    assert page.evaluate("() => document.activeElement.id") == "note-text"
    page.keyboard.type("The reply mentions a ticket number <b>twice</b>.")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.value") == "comment"
    page.keyboard.press("Enter")  # Add comment
    page.wait_for_selector("#note-saved")
    assert "Your comment is saved" in page.locator("#note-saved").inner_text()
    page.keyboard.press("c")
    page.keyboard.type("The reply is cut off.")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.value") == "flag"
    page.keyboard.press("Enter")  # Flag this item
    page.wait_for_function(
        "() => document.querySelector('#note-saved') && document.querySelector('#note-saved').innerText.includes('flag')"
    )
    assert page.locator("#my-notes li").count() == 2
    assert page.locator("#my-notes li").first.locator("b").count() == 0  # the comment's markup is text

    page.keyboard.press("c")
    page.keyboard.type("5")  # typed in the box, not a score
    page.keyboard.press("Escape")  # out of the box: the keys score again
    page.keyboard.press("4")
    page.wait_for_function("uuid => document.querySelector('#queue-item').dataset.assignment !== uuid", arg=item)
    assert navigations == [], f"htmx swaps in place, the page never reloads: {navigations}"
    assert Assignment.objects.get(uuid=item).value == "4" and Assignment.objects.get(uuid=item).state == AssignmentState.LABELLED
    assert list(ItemNote.objects.order_by("id").values_list("kind", "text")) == [
        ("comment", "The reply mentions a ticket number <b>twice</b>."), ("flag", "The reply is cut off.")
    ]
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=screenshots / "annotation-item-390.png", full_page=True)

    page.context.clear_cookies()
    log_in(page, "leo")
    page.goto(f"/calibration/samples/{sample.uuid}/")
    notes = page.locator("#item-notes")
    assert "The reply is cut off." in notes.inner_text() and "1 flagged" in notes.inner_text()
    page.screenshot(path=screenshots / "annotation-lead-notes.png", full_page=True)
