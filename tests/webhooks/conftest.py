"""Webhook fixtures: a real HTTP receiver on the loopback (a threaded http.server) that answers as a test
scripts it and keeps every request; webhooks made through the lead's service; Celery tasks run in the
caller, after commit, as in production (the calibration fixtures are reused for the judge lock)."""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from judgeapp.judging.notify import signature
from judgeapp.webhooks.services import webhook_create
from tests.calibration.conftest import eager_tasks, fast_bootstrap, planted_run, planted_server  # noqa: F401 - fixtures


@dataclass
class Answer:
    status: int = 200
    body: bytes = b"ok"
    headers: dict = field(default_factory=dict)
    delay: float = 0.0  # seconds before the answer (a receiver that hangs)


@dataclass
class Received:
    path: str
    headers: dict
    body: bytes

    @property
    def json(self) -> dict:
        return json.loads(self.body)

    def signed_with(self, secret: str) -> bool:
        return signature(secret, self.headers["x-judgeapp-timestamp"], self.body) == self.headers["x-judgeapp-signature"]


class Receiver:
    """Answers each POST with the next scripted Answer (the last one again when they run out)."""

    def __init__(self):
        self.answers: list[Answer] = [Answer()]
        self.requests: list[Received] = []
        self._stop = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                answer = receiver.answers.pop(0) if len(receiver.answers) > 1 else receiver.answers[0]
                if answer.delay:
                    receiver._stop.wait(answer.delay)
                try:
                    self.send_response(answer.status)
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                except OSError:
                    pass  # the sender gave up first

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def script(self, *answers: Answer) -> None:
        self.answers = list(answers)

    def events(self) -> list[str]:
        return [r.headers["x-judgeapp-event"] for r in self.requests]

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    with Receiver() as running:
        yield running


@pytest.fixture
def make_webhook(lead, receiver):
    def make(name="release-channel", *, events=None, url=None):
        return webhook_create(name=name, url=url or receiver.url, events=events, actor=lead)

    return make


@pytest.fixture
def delivered(eager_tasks, django_capture_on_commit_callbacks):  # noqa: F811 - the fixture imported above
    """`with delivered():` — what commits inside is sent to the webhooks at once, as a worker would."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def no_waits(settings):
    settings.WEBHOOK_RETRY_SECONDS = [0.0, 0.0, 0.0, 0.0]


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)
