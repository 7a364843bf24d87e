# The headless-browser fixtures (Debian's Chromium through Playwright) for this mode's browser test.
from tests.browser.conftest import browser, page, screenshots  # noqa: F401
