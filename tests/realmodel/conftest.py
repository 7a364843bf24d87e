"""A real model for the tests in this folder: llama.cpp's OpenAI-compatible server on SmolLM2-135M-Instruct
(tests/realmodel/server.py), started once per session on a free loopback port and stopped at the end.

Without the venv that scripts/real-model.sh builds, the tests skip, unless REQUIRE_REAL_MODEL=1 (CI), where
a missing venv is a failure. The check-up test (test_checkup.py) reads JUDGEAPP_REALMODEL_BASE_URL and
JUDGEAPP_REALMODEL_MODEL, which the fixture sets.
"""

import os

import pytest

from tests.realmodel.server import LlamaServer, ServerFailed, realmodel_venv, venv_ready

ENV = ("JUDGEAPP_REALMODEL_BASE_URL", "JUDGEAPP_REALMODEL_MODEL")


@pytest.fixture(scope="session")
def real_model(tmp_path_factory):
    venv = realmodel_venv()
    if not venv_ready(venv):
        message = f"no real-model venv at {venv}: run scripts/real-model.sh"
        if os.environ.get("REQUIRE_REAL_MODEL") == "1":
            pytest.fail(message + " (REQUIRE_REAL_MODEL=1)")
        pytest.skip(message)
    try:
        server = LlamaServer(venv, log=tmp_path_factory.mktemp("realmodel") / "llama-server.log").__enter__()
    except ServerFailed as exc:
        pytest.fail(str(exc))
    saved = {key: os.environ.get(key) for key in ENV}
    os.environ.update(dict(zip(ENV, (server.base_url, server.model))))
    try:
        yield server
    finally:
        server.__exit__()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
