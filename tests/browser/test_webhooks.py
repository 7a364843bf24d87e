"""A lead, in headless Chromium: opens Webhooks from the menu, adds one pointing at a receiver on this machine
(its secret shown once), sends it a test message that the receiver gets signed, and deletes it after saying
no once to the question. The page has no critical or serious axe-core violation and fits a phone (390 px)."""

import pytest

from judgeapp.models import Webhook
from tests.browser.axe import axe_run
from tests.browser.conftest import log_in
from tests.browser.test_layout import MEASURE
from tests.webhooks.conftest import Receiver

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def serious(page) -> list[str]:
    return [
        f"{v['id']}: {v['help']} ({v['nodes'][0]['target']})" for v in axe_run(page) if v["impact"] in ("critical", "serious")
    ]


def test_lead_adds_tests_and_deletes_a_webhook_that_a_local_receiver_gets(browser, live_server, lead, screenshots):
    context = browser.new_context(base_url=live_server.url, bypass_csp=True, viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.set_default_timeout(15_000)
    with Receiver() as receiver:
        log_in(page, "leo")
        page.goto("/help/")
        page.click("label.nav-button")  # the phone's folded menu
        page.click("nav >> text=Webhooks")
        page.wait_for_url("**/webhooks/")
        page.fill("#id_name", "release-channel")
        page.fill("#id_url", receiver.url)
        page.click("#webhook-create button[type=submit]")
        secret = page.locator("#webhook-secret").inner_text().strip()
        hook = Webhook.objects.get()
        assert secret == hook.secret and secret.startswith("whsec_")
        assert serious(page) == []
        page.screenshot(path=screenshots / "webhook-created.png", full_page=True)

        page.locator("#webhooks button", has_text="Send test").click()
        page.wait_for_selector("text=Test message delivered to release-channel")
        assert receiver.events() == ["webhook.test"] and receiver.requests[0].signed_with(secret)
        assert secret not in page.content()
        assert "delivered" in page.locator("#deliveries").inner_text()
        seen = page.evaluate(MEASURE, False)
        assert seen["scrollWidth"] <= seen["width"] + 1 and seen["off"] == [] and seen["unreachable"] == []
        assert serious(page) == []
        page.screenshot(path=screenshots / "webhook-tested.png", full_page=True)

        asked = []
        page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
        page.locator("#webhooks button", has_text="Delete").click()
        assert asked == ["Delete webhook 'release-channel' and its delivery log? It gets no more messages."]
        assert Webhook.objects.exists()
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator("#webhooks button", has_text="Delete").click()
        page.wait_for_selector("text=No webhook yet.")
        assert not Webhook.objects.exists()
    context.close()
