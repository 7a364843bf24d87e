"""Issue 30, item 5: every page each role reaches on the demo has no critical or serious axe-core violation
(WCAG 2.x A and AA rules), and the skip link is the first thing the keyboard reaches.

The pages are those tests/crawl.py finds for the role (the vocabulary test reads the same ones); each is opened
in headless Chromium, one browser context per role with a session made by Django's test client."""

import re
from collections import Counter

import pytest
from django.test import Client

from tests.browser.axe import AXE_VERSION, IMPACTS, axe_run
from tests.crawl import crawl, demo  # noqa: F401 (demo is a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROLES = ("lead", "reviewer", "annotator")
# Pages of one shape share their template (a run's judgments, a filter's values): one of each is checked.
ID_IN_URL = re.compile(r"[0-9a-f]{8}-[0-9a-f-]{27}|[0-9a-f]{12}|\d+")
DUPLICATE_IDS = """() => {
    const seen = {};
    for (const el of document.querySelectorAll('[id]')) seen[el.id] = (seen[el.id] || 0) + 1;
    return Object.keys(seen).filter(id => seen[id] > 1);
}"""


def one_of_each_shape(urls) -> list[str]:
    shapes: dict[str, str] = {}
    for url in sorted(urls):
        shapes.setdefault(ID_IN_URL.sub("#", url), url)
    return sorted(shapes.values())


def _context_as(browser, live_server, username):
    from django.conf import settings
    from django.contrib.auth.models import User

    client = Client()
    client.force_login(User.objects.get(username=username))
    context = browser.new_context(base_url=live_server.url, bypass_csp=True)  # axe is injected as an inline script
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                          "url": live_server.url}])
    return client, context


def test_every_page_as_every_role_has_no_critical_or_serious_violation(demo, browser, live_server, django_db_blocker):
    counts: Counter = Counter()
    problems: dict[tuple, list[str]] = {}
    visited = 0
    with django_db_blocker.unblock():
        pages_by_role = {}
        for username in ROLES:
            client, context = _context_as(browser, live_server, username)
            pages_by_role[username] = (one_of_each_shape(crawl(client)), context)
        anonymous = browser.new_context(base_url=live_server.url, bypass_csp=True)
        pages_by_role["anonymous"] = (["/login/"], anonymous)
        for username, (urls, context) in pages_by_role.items():
            page = context.new_page()
            page.set_default_timeout(15_000)
            for url in urls + ["/no-such-page/"]:
                page.goto(url)
                visited += 1
                for violation in axe_run(page):
                    counts[violation["impact"]] += len(violation["nodes"])
                    if violation["impact"] in ("critical", "serious"):
                        node = violation["nodes"][0]
                        problems.setdefault((violation["id"], violation["help"]), []).append(
                            f"{username} {url} {node['target']} {node['html']} — {node['summary']}")
                # axe-core 4 no longer counts a repeated id; a label's for= or a fragment link finds the first.
                if duplicates := page.evaluate(DUPLICATE_IDS):
                    problems.setdefault(("duplicate-id", "ids must be unique"), []).append(f"{username} {url} {duplicates}")
            context.close()
    print(f"\naxe-core {AXE_VERSION} on {visited} pages as {', '.join(pages_by_role)}: "
          + ", ".join(f"{counts[impact]} {impact}" for impact in IMPACTS))
    assert visited >= 2 * 15 + 4, visited
    report = [f"{rule} ({help_}): {len(where)} pages, e.g.\n    " + "\n    ".join(where[:3])
              for (rule, help_), where in problems.items()]
    assert not problems, "\n".join(report)


def test_the_first_tab_reaches_skip_to_content_and_enter_moves_past_the_menu(page, reviewer):
    from tests.browser.conftest import log_in

    log_in(page, "rita")
    page.goto("/runs/")
    page.keyboard.press("Tab")
    focused = page.evaluate("() => [document.activeElement.textContent.trim(), document.activeElement.getAttribute('href')]")
    assert focused == ["Skip to content", "#content"]
    assert page.locator(".skip-link").bounding_box()["x"] >= 0  # shown when focused, off-screen otherwise
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    # The next stop is inside the page's content, not the menu's first link.
    assert page.evaluate("() => !!document.activeElement.closest('main#content')")
