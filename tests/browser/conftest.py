"""Headless Chromium (Debian's package) driven by Playwright's Python package; never its own download."""

import os
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("REQUIRE_BROWSER"):
            pytest.fail(f"{CHROMIUM} not found (apt-get install chromium chromium-driver)")
        pytest.skip(f"{CHROMIUM} not found: install Debian's chromium to run the browser tests")
    # Playwright's sync API runs an event loop in this thread; the live server's database access is fine.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def log_in(page, username: str, password: str = "pw-for-tests-1") -> None:
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_load_state()


@pytest.fixture
def screenshots(tmp_path):
    """Where a test saves what it saw; kept under DATA_DIR/screenshots when SAVE_SCREENSHOTS is set."""
    folder = Path(os.environ.get("SAVE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
