"""The production web server, gunicorn with the project's gunicorn.conf.py, as a real process (slow): the
answers it gives itself, before Django sees the request (a URL over its request-line limit, a header over
its field limit, a request line it cannot parse), are JSON `{"error", "detail"}`; the ones Django gives
under /api/ (405 with `Allow`, 404, a NUL in the query, an over-long path) too."""

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from judgeapp.api.services import api_token_create
from tests.helpers import database_url_for_subprocess, free_port, listening, wait_for

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture
def gunicorn(transactional_db, tmp_path):
    """`gunicorn judgeapp.wsgi` from the project folder (so it reads gunicorn.conf.py), one sync worker."""
    port = free_port()
    log_path = tmp_path / "gunicorn.log"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": database_url_for_subprocess(),
           "PYTHONUNBUFFERED": "1", "WEB_WARM_UP": "0"}
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [str(Path(sys.executable).parent / "gunicorn"), "judgeapp.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        wait_for(lambda: listening(port) or server.poll() is not None, 60, message="gunicorn")
        assert server.poll() is None, log_path.read_text()
        yield port
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)


def exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes as one request; (status, headers, body) of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(raw)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


def get(path: str, *headers: str, method: str = "GET") -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + "".join(h + "\r\n" for h in headers) + "\r\n"
    ).encode("latin-1")


def assert_json_error(answer, status: int, error: str) -> dict:
    code, headers, body = answer
    assert code == status, (code, headers, body[:300])
    assert headers["content-type"].startswith("application/json"), headers
    document = json.loads(body)
    assert set(document) == {"error", "detail"} and document["error"] == error and document["detail"], document
    return document


def test_gunicorns_own_answers_and_djangos_under_api_are_json(gunicorn, reviewer):
    token = api_token_create(user=reviewer, name="ci")[1]
    bearer = f"Authorization: Bearer {token}"

    # gunicorn's own: before Django, whatever the path
    detail = assert_json_error(exchange(gunicorn, get("/api/v1/runs?system=" + "x" * 5000, bearer)), 414, "uri_too_long")
    assert "URI Too Long" in detail["detail"]
    assert_json_error(
        exchange(gunicorn, get("/api/v1/runs", bearer, "X-Padding: " + "y" * 9000)), 431, "request_header_fields_too_large",
    )
    assert_json_error(
        exchange(gunicorn, get("/api/v1/runs", *[f"X-H{i}: v" for i in range(120)])), 431, "request_header_fields_too_large",
    )
    assert_json_error(exchange(gunicorn, b"NOT A REQUEST LINE\r\n\r\n"), 400, "bad_request")
    assert_json_error(exchange(gunicorn, get("/api/v1/runs", bearer, method="G(E)T")), 400, "bad_request")

    # Django's, under /api/
    code, headers, _body = exchange(gunicorn, get("/api/v1/runs", bearer, method="DELETE"))
    assert_json_error((code, headers, _body), 405, "method_not_allowed")
    assert headers["allow"] == "GET"
    assert_json_error(exchange(gunicorn, get("/api/v1/runs?system=%00", bearer)), 400, "bad_request")
    assert_json_error(exchange(gunicorn, get("/api/v1/runs?limit=-1", bearer)), 400, "bad_request")
    assert_json_error(exchange(gunicorn, get("/api/v1/nothing-here", bearer)), 404, "not_found")
    assert_json_error(exchange(gunicorn, get("/api/v1/runs/" + "r" * 3000, bearer)), 404, "not_found")
    code, headers, _body = exchange(gunicorn, get("/api/v1/runs"))
    assert_json_error((code, headers, _body), 401, "unauthorized")
    assert headers["www-authenticate"].startswith("Bearer")
