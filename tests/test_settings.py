"""Production settings: the deploy checks pass, the development secret key is refused, and every response
carries the Content-Security-Policy."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STRONG_KEY = "k" * 20 + "-production-secret-for-the-deploy-check-" + "x" * 20


def manage(*args, **env):
    # The browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process; a deployment never would.
    base = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE")}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=60
    )


def test_check_deploy_is_clean_with_production_settings():
    result = manage(
        "check", "--deploy", "--fail-level", "WARNING", JUDGEAPP_ENV="production", SECRET_KEY=STRONG_KEY,
        ALLOWED_HOSTS="judge.example.com",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_the_development_secret_key():
    result = manage("check", JUDGEAPP_ENV="production", ALLOWED_HOSTS="judge.example.com")
    assert result.returncode != 0
    assert "development key is refused" in result.stderr


def test_development_debug_is_on_for_the_pages_and_off_for_commands_that_judge():
    # DEBUG logs every query (on SQLite with a second query to quote its parameters): a command that
    # judges thousands of units has no page to show a traceback on.
    shown = manage("shell", "-c", "from django.conf import settings; print('DEBUG', settings.DEBUG)")
    assert "DEBUG True" in shown.stdout, shown.stdout + shown.stderr
    differing = manage("diffsettings")  # prints DEBUG only where it differs from Django's False
    assert differing.returncode == 0 and "DEBUG = True" not in differing.stdout
    assert "DEBUG = True" in manage("diffsettings", DJANGO_DEBUG="1").stdout


def test_production_sends_the_content_security_policy():
    ask = (
        "from django.test import Client; "
        "r = Client().get('/api/v1/openapi.json', secure=True, HTTP_HOST='judge.example.com'); "
        "print(r.status_code); print(r.get('Content-Security-Policy')); print(r.get('Content-Security-Policy-Report-Only'))"
    )
    production = {"JUDGEAPP_ENV": "production", "SECRET_KEY": STRONG_KEY, "ALLOWED_HOSTS": "judge.example.com"}
    status, enforced, reported = manage("shell", "-v", "0", "-c", ask, **production).stdout.split("\n")[:3]
    assert status == "200" and reported == "None"
    directives = dict(d.strip().split(" ", 1) for d in enforced.split(";"))
    assert directives["default-src"] == directives["script-src"] == directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    # CSP_REPORT_ONLY: reported, not enforced (to try a change of policy on a live site).
    status, enforced, reported = manage(
        "shell", "-v", "0", "-c", ask, **production, CSP_REPORT_ONLY="true",
    ).stdout.split("\n")[:3]
    assert enforced == "None" and "script-src 'self'" in reported

