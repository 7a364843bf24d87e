"""Issue 30, item 5: a missing page, a refused one and an error are the site's own pages (its look, a way back),
never Django's debug pages: no list of URL patterns, no traceback. `up` serves with DEBUG off unless
DJANGO_DEBUG says otherwise, and its static files still load."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from django.urls import path

from judgeapp import urls as site_urls

ROOT = Path(__file__).resolve().parents[2]


def _raises(request):
    raise RuntimeError("secret-internal-detail in a view")


# The site's URLs and one view that fails (pytest.mark.urls below points here).
urlpatterns = [path("test-boom/", _raises), *site_urls.urlpatterns]
handler500 = getattr(site_urls, "handler500", "django.views.defaults.server_error")

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]


def _client_as(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def _looks_like_the_site(page: str) -> None:
    assert 'class="topbar"' in page and "judgeapp/app.css" in page and 'id="content"' in page, page


def test_a_missing_page_is_the_sites_404_without_the_url_list(reviewer):
    response = _client_as(reviewer).get("/no-such-page/here/")
    page = response.content.decode()
    assert response.status_code == 404
    assert "Page not found" in page and 'href="/"' in page
    _looks_like_the_site(page)
    assert 'id="main-nav"' in page  # the menu: a logged-in user carries on from here
    for leak in ("URLconf", "urlpatterns", "api/v1", "calibration/queue", "Traceback", "DEBUG = True"):
        assert leak not in page, leak


def test_a_view_that_raises_gives_the_500_page_and_no_traceback(reviewer):
    response = _client_as(reviewer, raise_request_exception=False).get("/test-boom/")
    page = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong" in page
    _looks_like_the_site(page)
    for leak in ("Traceback", "RuntimeError", "secret-internal-detail", "_raises"):
        assert leak not in page, leak


def test_a_page_the_role_may_not_see_is_the_sites_403(annotator):
    response = _client_as(annotator).get("/runs/")
    page = response.content.decode()
    assert response.status_code == 403
    assert "Not allowed" in page and "Back to your start page" in page
    _looks_like_the_site(page)


def test_up_serves_the_web_app_with_debug_off_unless_asked(monkeypatch):
    from judgeapp.demo.cli import web_environment

    monkeypatch.delenv("DJANGO_DEBUG", raising=False)
    assert web_environment()["DJANGO_DEBUG"] == "0"
    monkeypatch.setenv("DJANGO_DEBUG", "1")
    assert web_environment()["DJANGO_DEBUG"] == "1"


PROBE = """
import django
django.setup()
from django.conf import settings
from django.test import Client
css = Client().get("/static/judgeapp/app.css")
print(settings.DEBUG, css.status_code, css.get("Content-Type", ""), b".skip-link" in b"".join(css.streaming_content))
"""


def test_with_debug_off_the_stylesheet_is_still_served(tmp_path):
    """What `up`'s web process runs with: DEBUG off, static files served by WhiteNoise from the apps' folders."""
    environment = os.environ | {"DJANGO_SETTINGS_MODULE": "judgeapp.settings", "DJANGO_DEBUG": "0",
                                "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "No directory at" not in done.stderr  # no collectstatic on a laptop, and no warning about it
    assert done.stdout.split() == ["False", "200", "text/css;", 'charset="utf-8"', "True"], done.stdout + done.stderr[-500:]
