"""Test settings: the real settings, with every file output and the broker queue in a fresh place.

pytest-django imports this before any conftest, so the environment set here is also what a worker
process started by a test inherits (same DATA_DIR, same queue).
"""

import os
import tempfile
import uuid

os.environ.setdefault("DATA_DIR", tempfile.mkdtemp(prefix="judgeapp-test-"))
os.environ.setdefault("CELERY_QUEUE", f"judgeapp-test-{uuid.uuid4().hex[:10]}")
# A developer's own judges file and default judge must not leak into the tests.
os.environ["JUDGES_FILE"] = os.path.join(os.environ["DATA_DIR"], "judges.toml")
os.environ["JUDGE_MODEL"] = ""
# Nor a developer's real endpoint and key: a judge without a base URL must fail, not call out (see also the
# socket guard in tests/conftest.py). Worker processes started by the tests inherit this environment.
os.environ.pop("OPENAI_BASE_URL", None)
os.environ.pop("OPENAI_API_KEY", None)
os.environ.setdefault("JUDGE_BACKOFF_SECONDS", "0.05")
# A test that leaves a service out of reach gives up in a minute, not after the production wait of ten.
os.environ.setdefault("SERVICE_OUTAGE_SECONDS", "60")

from judgeapp.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Threads of the live server and of in-process runs would otherwise keep their connections open past the
# tests, and PostgreSQL could not drop the test database at the end. Worker processes the tests start keep
# the production setting (their connections end when the test stops them).
if not IS_CELERY_WORKER:  # noqa: F405
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405
