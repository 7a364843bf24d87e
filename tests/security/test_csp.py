"""The Content-Security-Policy (settings; django-csp): on every response, in every environment (production's is
checked in tests/test_settings.py); no template holds what it refuses; htmx is configured to need nothing it
refuses. tests/browser/test_csp.py drives the pages under it in Chromium."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
TEMPLATE_DIRS = [ROOT / "templates", ROOT / "calibration" / "templates"]

# What script-src 'self' and style-src 'self' refuse in a template: an inline script (a <script> without src;
# type="application/json" is data, never run), an event-handler attribute, htmx's hx-on (eval), a <style>
# element, a javascript: URL.
REFUSED = {
    "inline script": re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.IGNORECASE),
    "event-handler attribute": re.compile(r"<[^>]*\son[a-z]+\s*=", re.IGNORECASE),
    "hx-on": re.compile(r"\b(?:data-)?hx-on", re.IGNORECASE),
    "style element": re.compile(r"<style\b", re.IGNORECASE),
    "javascript: URL": re.compile(r"javascript:", re.IGNORECASE),
}


def test_every_response_carries_the_policy(client, reviewer):
    client.force_login(reviewer)
    for path in ["/login/", "/", "/api/v1/openapi.json"]:
        policy = client.get(path)["Content-Security-Policy"]
        directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
        assert directives["default-src"] == "'self'" and directives["script-src"] == "'self'"
        assert directives["style-src"] == "'self'" and directives["style-src-attr"] == "'unsafe-inline'"
        assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"
        assert "unsafe" not in directives["script-src"]


def test_report_only_sends_the_same_policy_unenforced(client, settings):
    settings.CONTENT_SECURITY_POLICY_REPORT_ONLY, settings.CONTENT_SECURITY_POLICY = settings.CONTENT_SECURITY_POLICY, None
    response = client.get("/login/")
    assert "Content-Security-Policy" not in response
    assert "script-src 'self'" in response["Content-Security-Policy-Report-Only"]


@pytest.mark.parametrize("what", sorted(REFUSED))
def test_no_template_holds_what_the_policy_refuses(what):
    found = []
    for folder in TEMPLATE_DIRS:
        for template in folder.rglob("*.html"):
            text = re.sub(r"\{#.*?#\}|\{% comment %\}.*?\{% endcomment %\}", "", template.read_text(), flags=re.DOTALL)
            found += [f"{template.relative_to(ROOT)}: {m.group(0)[:80]}" for m in REFUSED[what].finditer(text)]
    assert found == [], f"{what} (refused by the Content-Security-Policy; use a static file or an htmx attribute)"


def test_htmx_needs_no_eval_and_injects_no_style(client):
    page = client.get("/login/").content.decode()
    config = re.search(r"<meta name=\"htmx-config\" content='([^']*)'>", page).group(1)
    assert '"allowEval": false' in config and '"includeIndicatorStyles": false' in config
    css = (ROOT / "static" / "judgeapp" / "app.css").read_text()
    assert ".htmx-request .htmx-indicator" in css  # the indicator style htmx no longer injects
