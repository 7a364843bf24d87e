"""Issue 30, item 5 (layout): every page the crawl reaches (two of each view), as each role, at a phone's width (390 px)
and a laptop's (1,280 px), fits the window: the page never scrolls sideways, and every button and primary action link
in <main> is in view, or inside a scroll frame (a wide table's) that is itself in view. At 1,280 px the actions are in
view without scrolling anything sideways. A frame that scrolls is keyboard-reachable and named."""

from urllib.parse import urlsplit

import pytest
from django.test import Client

from tests.crawl import crawl, demo  # noqa: F401 (demo is a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROLES = ["lead", "reviewer", "annotator"]
WIDTHS = {390: 844, 1280: 800}

# What is off the page sideways: the page's own overflow, and each action (a button, a submit, a link drawn as a
# button) whose box ends past the window, unless it sits in a scroll container that is in view (at 390 px only).
MEASURE = """(strict) => {
  const width = window.innerWidth;
  const actions = document.querySelectorAll(
    'main button, main input[type=submit], main input[type=button], main a.button, main [role=button]');
  const scroller = (element) => {
    for (let node = element.parentElement; node && node !== document.body; node = node.parentElement) {
      const overflow = getComputedStyle(node).overflowX;
      if ((overflow === 'auto' || overflow === 'scroll') && node.scrollWidth > node.clientWidth + 1) return node;
    }
    return null;
  };
  const off = [];
  for (const action of actions) {
    if (!action.checkVisibility({visibilityProperty: true})) continue;
    const box = action.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    const container = scroller(action);
    let fits = box.left >= -1 && box.right <= width + 1;
    if (container) {
      const frame = container.getBoundingClientRect();
      const inFrame = box.left >= frame.left - 1 && box.right <= frame.right + 1;
      const frameInView = frame.left >= -1 && frame.right <= width + 1;
      fits = frameInView && (strict ? inFrame : true);
    }
    if (!fits) off.push((action.innerText || action.value || action.getAttribute('aria-label') || \
action.tagName).trim().slice(0, 40)
                        + ` (right ${Math.round(box.right)})`);
  }
  // A table wider than its frame scrolls in a frame the keyboard can reach and a screen reader can name.
  const unreachable = [];
  let widestTable = 0;
  for (const table of document.querySelectorAll('main table')) {
    const frame = scroller(table);
    widestTable = Math.max(widestTable, table.getBoundingClientRect().width);
    if (frame && !(frame.tabIndex >= 0 && frame.getAttribute('role') === 'region' && frame.getAttribute('aria-label')))
      unreachable.push(table.id || table.className || 'table');
  }
  // Two frames of one name would be two landmarks a screen reader cannot tell apart.
  const names = [...document.querySelectorAll('.table-scroll')].map((frame) => frame.getAttribute('aria-label'));
  const repeated = [...new Set(names.filter((name, index) => names.indexOf(name) !== index))];
  return {scrollWidth: document.documentElement.scrollWidth, width, off, unreachable, repeated,
          widestTable: Math.round(widestTable)};
}"""


def _logged_in(username: str) -> Client:
    from django.contrib.auth.models import User

    client = Client()
    client.force_login(User.objects.get(username=username))
    return client


def _session_cookie(live_server, username: str) -> dict:
    from django.conf import settings

    client = _logged_in(username)
    return {"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
            "url": live_server.url}


def _a_few_of_each_view(urls: list[str], per_view: int = 2) -> list[str]:
    """Two pages of each view: the jury's 72 judgment pages share one template, and a browser load costs ~0.1 s."""
    from django.urls import resolve

    kept: dict[tuple[str, bool], list[str]] = {}
    for url in urls:
        parts = urlsplit(url)
        kept.setdefault((resolve(parts.path).view_name, bool(parts.query)), []).append(url)
    return [url for group in kept.values() for url in group[:per_view]]


def test_every_page_fits_a_phone_and_a_laptop_as_every_role(demo, browser, live_server):
    # One test, not one per role: the live server's database is emptied after each test, and the demo loads once.
    problems: list[str] = []
    checked = 0
    pages: set[str] = set()
    widest = widest_table = (0, "")
    for username in ROLES:
        found = sorted(crawl(_logged_in(username)))
        assert len(found) >= (1 if username == "annotator" else 25), found
        urls = _a_few_of_each_view(found)
        pages.update(urls)
        for width, height in WIDTHS.items():
            context = browser.new_context(base_url=live_server.url, viewport={"width": width, "height": height})
            context.add_cookies([_session_cookie(live_server, username)])
            page = context.new_page()
            page.set_default_timeout(15_000)
            for url in urls:
                page.goto(url, wait_until="load")
                seen = page.evaluate(MEASURE, width >= 1280)
                checked += 1
                if width == 390 and seen["scrollWidth"] > widest[0]:
                    widest = (seen["scrollWidth"], url)
                if seen["scrollWidth"] > seen["width"] + 1:
                    problems.append(f"{username} {width}px {url}: page {seen['scrollWidth']} px wide")
                problems += [f"{username} {width}px {url}: {action} off screen" for action in seen["off"]]
                problems += [f"{username} {width}px {url}: table {table} scrolls in a frame without tabindex, role "
                             f"and name" for table in seen["unreachable"]]
                problems += [f"{username} {width}px {url}: two table frames named {name!r}" for name in seen["repeated"]]
                if width == 390 and seen["widestTable"] > widest_table[0]:
                    widest_table = (seen["widestTable"], url)
            context.close()
    print(f"\nlayout: {len(pages)} pages, {checked} page views (each role at 390 and 1,280 px); the widest at 390 px: "
          f"{widest[0]} px ({widest[1]}); the widest table there: {widest_table[0]} px, in its frame ({widest_table[1]})")
    assert not problems, "\n".join(problems[:60])

