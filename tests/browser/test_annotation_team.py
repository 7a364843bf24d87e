"""Issue 30's acceptance, in headless Chromium over the demo with a real worker: a lead invites two annotators
from the Calibration page (each password shown once) and writes the sample's instructions; both log in with
what was shown and label the demo sample to the end with the keyboard only; one comments on an item and flags
another; the lead resolves the item they disagree on; and the gate of a run judged with the same judge, prompt
and rubric shows the lock within 10 s of the last label (the worker computes the agreement)."""

import time

import pytest
from django.urls import reverse

from tests.crawl import demo  # noqa: F401 (a fixture: the demo `up` loads, judged by the scripted judge)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

INSTRUCTIONS = "Score **the reply only**, never the customer's message.\n\n- 5: you would send it as it is"
WIDTHS = {"1280": {"width": 1280, "height": 900}, "390": {"width": 390, "height": 844}}


def test_a_lead_runs_annotation_and_the_gate_locks_within_ten_seconds_of_the_last_label(
    demo, browser, live_server, worker_factory, django_db_blocker, screenshots, capsys
):
    from django.conf import settings

    from calibration.models import Adjudication, Assignment, ItemNote, Sample
    from calibration.services.samples import run_items

    with django_db_blocker.unblock():
        sample = Sample.objects.get(run__run_id="demo-pointwise")
        verdicts = run_items(run=sample.run).verdicts
        judge_name = sample.stratified_by
    worker = worker_factory(concurrency=2)
    lead = _logged_in(browser, live_server, "lead")

    # The lead invites two annotators, each given every item of the demo sample; each password is shown once.
    passwords = {}
    lead.goto("/calibration/")
    for username in ("ines", "omar"):
        lead.fill("#id_username", username)
        lead.select_option("#id_sample", str(sample.pk))
        lead.click("#invite-form button[type=submit]")
        lead.wait_for_function("name => (document.querySelector('#invitation') || {}).innerText?.includes(name)", arg=username)
        passwords[username] = lead.locator("#one-time-password").inner_text().strip()
        _shoot(lead, screenshots, f"team-1-invited-{username}")
    assert len(set(passwords.values())) == 2 and all(len(p) >= 16 for p in passwords.values())

    lead.goto(f"/calibration/samples/{sample.uuid}/instructions/")
    lead.fill("#id_instructions", INSTRUCTIONS)
    lead.click("#instructions-form button[type=submit]")
    lead.wait_for_selector("#instructions-preview strong")

    # Both label every item with the keys; they agree with each other and score against the judge (a reliable
    # sample that must lock it), except one item where omar's score is three points from ines's.
    last_label_at = None
    for username, differ in (("ines", False), ("omar", True)):
        page = browser.new_context(base_url=live_server.url).new_page()
        page.set_default_timeout(15_000)
        page.goto("/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", passwords[username])
        page.click("button[type=submit]")
        page.wait_for_url("**/calibration/queue/")
        assert "the reply only" in page.locator("#instructions .instructions strong").inner_text()
        navigations = []
        page.on("framenavigated", lambda frame, seen=navigations: seen.append(frame.url))
        labelled = 0
        while uuid := page.locator("#queue-item").get_attribute("data-assignment"):
            with django_db_blocker.unblock():
                item = Assignment.objects.select_related("item").get(uuid=uuid).item
            score = 6 - int(verdicts[(item.case_key, item.criterion, judge_name)])
            if differ and labelled == 0:
                score = 5 if score <= 2 else 1  # three or four points from ines: an item to resolve
            if username == "ines" and labelled in (0, 1):
                _note(page, "comment" if labelled == 0 else "flag", f"item {labelled + 1}: the reply quotes an order number")
            if labelled == 2:
                _shoot(page, screenshots, f"team-2-{username}-item")
            page.keyboard.press(str(score))
            labelled += 1
            page.wait_for_function(
                "([uuid, n]) => { const q = document.querySelector('#queue-item');"
                " return q && q.dataset.assignment !== uuid && q.dataset.labelled === String(n); }",
                arg=[uuid, labelled],
            )
        last_label_at = time.monotonic()
        assert navigations == [], f"htmx swaps each item in place, the page never reloads: {navigations}"
        assert f"{labelled} of {labelled} done" in page.locator("#queue-progress").inner_text()
        _shoot(page, screenshots, f"team-3-{username}-done")
        page.context.close()
        with django_db_blocker.unblock():
            assert labelled == Assignment.objects.filter(item__sample=sample, annotator__username=username).count() >= 20

    # The gate of the run judged with the same judge, prompt and rubric shows the lock within 10 s of the last label.
    gate = reverse("releases:gate", args=["demo-pointwise-candidate"])
    while True:
        lead.goto(gate)
        if "judge locked" in lead.locator("#gate-panel").inner_text():
            break
        assert time.monotonic() - last_label_at < 60, worker.log()[-3000:]
        time.sleep(0.25)
    took = time.monotonic() - last_label_at
    with capsys.disabled():
        print(f"\nlast label -> the gate shows the lock: {took:.2f} s")
    assert lead.locator("#gate-panel").get_attribute("data-passed") == "false"
    _shoot(lead, screenshots, "team-4-gate-locked")
    # The figure is for the embedded broker a fresh clone runs; CI's second pass (PostgreSQL and Redis,
    # on a shared machine) is held to the same path with room for its load.
    assert took < (10 if settings.CELERY_BROKER_URL.startswith("filesystem://") else 30)

    # The lead reads the comment and the flag on the sample's page, and resolves the disagreement with a key.
    lead.goto(f"/calibration/samples/{sample.uuid}/")
    notes = lead.locator("#item-notes").inner_text()
    assert "item 2: the reply quotes an order number" in notes and "1 flagged" in notes
    _shoot(lead, screenshots, "team-5-sample")
    lead.click("#to-resolve-link a")
    lead.wait_for_selector(".adjudication-item")
    assert lead.locator("#to-resolve").inner_text() == "1 item to resolve"
    lead.keyboard.press("3")
    lead.wait_for_function("() => document.querySelector('#to-resolve').textContent === '0 items to resolve'")
    _shoot(lead, screenshots, "team-6-resolved")
    with django_db_blocker.unblock():
        assert Adjudication.objects.filter(item__sample=sample, value="3").count() == 1
        assert ItemNote.objects.filter(item__sample=sample, annotator__username="ines").count() == 2
    # The resolved label counts from the next agreement; the judge stays locked.
    lead.goto(gate)
    assert "judge locked" in lead.locator("#gate-panel").inner_text()


def _logged_in(browser, live_server, username):
    """A page logged in as a demo account (whose password `up` prints; the test makes a session instead)."""
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    client = Client()
    client.force_login(User.objects.get(username=username))
    context = browser.new_context(base_url=live_server.url)
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                          "url": live_server.url}])
    page = context.new_page()
    page.set_default_timeout(15_000)
    return page


def _note(page, kind: str, text: str) -> None:
    """Comment on or flag the item on screen, with the keyboard: `c`, type, Tab to the button, Enter, Escape."""
    page.keyboard.press("c")
    page.keyboard.type(text)
    page.keyboard.press("Tab")
    if kind == "flag":
        page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.value") == kind
    page.keyboard.press("Enter")
    page.wait_for_function("t => (document.querySelector('#my-notes') || {}).innerText?.includes(t)", arg=text)
    page.keyboard.press("Escape")
    page.evaluate("() => document.activeElement && document.activeElement.blur()")


def _shoot(page, folder, name: str) -> None:
    for width, size in WIDTHS.items():
        page.set_viewport_size(size)
        page.screenshot(path=folder / f"{name}-{width}.png", full_page=True)
    page.set_viewport_size(WIDTHS["1280"])
