"""Helpers for tests that run real processes and threads."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def database_url_for_subprocess(*, port: int | None = None) -> str:
    """DATABASE_URL of the database this test process uses (the test database), for a child process; with
    `port`, reached on that loopback port instead (a TcpProxy in front of the server)."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(s['NAME']).resolve()}"
    user = quote(s.get("USER") or "")
    password = f":{quote(s['PASSWORD'])}" if s.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    where = f"127.0.0.1:{port}" if port else f"{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}"
    return f"postgres://{auth}{where}/{s['NAME']}"


def database_address() -> tuple[str, int]:
    """The (host, port) of the test database's server (PostgreSQL)."""
    s = connection.settings_dict
    return s.get("HOST") or "127.0.0.1", int(s.get("PORT") or 5432)


def chats_at_once(client, n: int, label: str = "q") -> None:
    """`client.chat` from n threads at once, each with its own message; returns when all have answered."""
    threads = [threading.Thread(target=client.chat, args=([{"role": "user", "content": f"{label}{i}"}],)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def wait_for(predicate, timeout: float, interval: float = 0.1, message: str = "condition", explain=None):
    """`predicate()`'s first true value within `timeout` seconds. On timeout, AssertionError with `message`
    and, when given, what `explain()` says of the state then (so a failure in CI says where it stuck)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    detail = f"\n{explain()}" if explain is not None else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {message}{detail}")


def run_state(run_pk: int, *workers: "WorkerProcess", log_lines: int = 25) -> str:
    """A run's status and counters, its units by status and claimer, and each worker's last log lines."""
    from django.db.models import Count

    from judgeapp.models import Judgment, Run

    run = Run.objects.get(pk=run_pk)
    units = Judgment.objects.filter(run_id=run_pk).values("status", "claimed_by").annotate(n=Count("id")).order_by("status")
    lines = [
        f"run {run.run_id}: {run.status} stage {run.stage}, {run.done_units} done, {run.failed_units} failed, error {run.error!r}"
    ]
    lines += [f"  {row['n']} {row['status']} {row['claimed_by']}" for row in units]
    for number, worker in enumerate(workers):
        alive = worker.proc is not None and worker.proc.poll() is None
        lines.append(f"worker {number} ({'alive' if alive else 'ended'}), last log lines:")
        lines += [f"  {line}" for line in worker.log().splitlines()[-log_lines:]]
    return "\n".join(lines)


class WorkerProcess:
    """`celery -A judgeapp worker` in its own process group, so that a test can SIGKILL all of it. A bench
    starts it with the app's own settings (`settings="judgeapp.settings"`)."""

    def __init__(self, env: dict, concurrency: int, log_path: Path, settings: str = "tests.settings"):
        self.env = {**env, "DJANGO_SETTINGS_MODULE": settings, "PYTHONUNBUFFERED": "1"}
        self.concurrency = concurrency
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> None:
        self._log = open(self.log_path, "w")  # noqa: SIM115 - open while the worker runs; stop() closes it
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "celery", "-A", "judgeapp", "worker",
                "--pool", "prefork", "--concurrency", str(self.concurrency),
                "--loglevel", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat",
                "-Q", os.environ["CELERY_QUEUE"], "-n", f"test-{os.getpid()}-{time.monotonic_ns()}@%h",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for(lambda: " ready." in self.log() or self.proc.poll() is not None, timeout, message="worker ready")
        if self.proc.poll() is not None:
            raise RuntimeError(f"worker exited at start:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def pool_pids(self) -> list[int]:
        """The pids of the worker's pool processes (its main process's children)."""
        children = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                if ppid == self.proc.pid:
                    children.append(int(entry))
        return children

    def kill(self) -> None:
        """SIGKILL the worker and its pool children: a machine dying mid-run."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=15)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
        finally:
            self._log.close()


def free_port() -> int:
    """A loopback port nothing listens on now (for a server a test starts)."""

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    """Whether something accepts connections on this loopback port."""

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


# --- Faults: a proxy that can refuse, a private Redis that can be killed, what a fault cost -------------


class TcpProxy:
    """A TCP proxy on a free loopback port in front of `target_port`: what a worker reaches instead of the
    service, so that a test or bench can take the service away from it. `refuse(seconds)` closes every open
    connection and refuses new ones (connection refused) for that long, then accepts again. It also times
    each connection (`connections`), which in front of a judge whose every call gets a connection of its own
    is how long each call lasted. Threads: one accepting, two per connection."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1"):
        self.target = (target_host, target_port)
        self.port = free_port()
        self.connections: list[list[float | None]] = []  # [opened, closed or None], monotonic seconds
        self.returned_at: float | None = None  # when the last refusal ended
        self._lock = threading.Lock()
        self._open: set = set()
        self._refusing_until = 0.0
        self._stopping = threading.Event()
        self._listener = None
        self._thread: threading.Thread | None = None

    def start(self) -> "TcpProxy":
        self._listen()
        self._thread = threading.Thread(target=self._accept_loop, name="tcp-proxy", daemon=True)
        self._thread.start()
        return self

    def __enter__(self) -> "TcpProxy":  # noqa: PYI034 - start() returns the proxy
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def refuse(self, seconds: float) -> None:
        """From now on and for `seconds`: every open connection closed, every new one refused."""
        with self._lock:
            self._refusing_until = time.monotonic() + seconds
            self.returned_at = None
        self._drop_all()

    def refusing(self) -> bool:
        with self._lock:
            return self._listener is None and not self._stopping.is_set()

    def wait_back(self, timeout: float = 60) -> float:
        """Block until the proxy accepts again; returns that moment (monotonic)."""
        wait_for(lambda: self.returned_at is not None, timeout, interval=0.02, message="the proxy to accept again")
        return self.returned_at

    def longest_connection(self) -> tuple[float, bool]:
        """(seconds of the longest connection so far, whether it is still open)."""
        now = time.monotonic()
        with self._lock:
            spans = [((closed or now) - opened, closed is None) for opened, closed in self.connections]
        return max(spans, default=(0.0, False))

    def stop(self) -> None:
        self._stopping.set()
        self._drop_all()

    def _drop_all(self) -> None:
        """Stop listening and close every open connection."""
        with self._lock:
            listener, self._listener = self._listener, None
            open_now = list(self._open)
        if listener is not None:
            listener.close()
        for pair in open_now:
            self._close(pair)

    def _listen(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        listener.settimeout(0.05)
        with self._lock:
            self._listener = listener

    def _accept_loop(self) -> None:

        while not self._stopping.is_set():
            with self._lock:
                listener, until = self._listener, self._refusing_until
            if listener is None:
                if time.monotonic() >= until:
                    self._listen()
                    self.returned_at = time.monotonic()
                else:
                    time.sleep(0.02)
                continue
            try:
                client, _ = listener.accept()
            except OSError:  # no one this tick (a timeout), or closed by refuse() or stop()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            record = [time.monotonic(), None]
            pair = _Connection(client, upstream, record)
            with self._lock:
                refused = self._listener is None  # refuse() came while this one was being accepted
                if not refused:
                    self._open.add(pair)
                    self.connections.append(record)
            if refused:
                client.close()
                upstream.close()
                continue
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink, pair), daemon=True).start()

    def _pump(self, source, sink, pair) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        self._close(pair)

    def _close(self, pair) -> None:

        client, upstream, record = pair.client, pair.upstream, pair.record
        with self._lock:
            if pair not in self._open:
                return
            self._open.discard(pair)
            record[1] = time.monotonic()
        for sock in (client, upstream):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


class _Connection:
    """One proxied connection: the client's socket, the service's, and [opened, closed] (monotonic)."""

    def __init__(self, client, upstream, record: list):
        self.client, self.upstream, self.record = client, upstream, record


class RedisServer:
    """A private redis-server on a free loopback port, without persistence (`--save "" --appendonly no`):
    killed, it loses every message it held, as a broker without a disk does. `start()` again after `kill()`
    comes back empty on the same port. Never the machine's own Redis."""

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10) -> "RedisServer":
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        wait_for(
            lambda: listening(self.port) or self.proc.poll() is not None, timeout, interval=0.02,
            message="redis-server to listen",
        )
        if self.proc.poll() is not None:
            raise RuntimeError(f"redis-server did not start on port {self.port}")
        return self

    def kill(self) -> None:
        """SIGKILL: the broker dies with everything it held."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def judge_tally(requests) -> dict:
    """What a fake judge's chat requests (`FakeJudgeServer.chat_requests`) say about a run's calls: `calls`,
    distinct `prompts`, `judged_twice` (prompts asked afresh more than once: a parse retry, which carries
    the judge's earlier reply, is not a fresh ask) and `paid_twice` (calls beyond one per prompt)."""
    asks: dict[str, int] = {}
    for request in requests:
        if not any(message.get("role") == "assistant" for message in request.messages):
            asks[request.conversation_key] = asks.get(request.conversation_key, 0) + 1
    prompts = {request.conversation_key for request in requests}
    return {
        "calls": len(requests),
        "prompts": len(prompts),
        "judged_twice": sum(1 for n in asks.values() if n > 1),
        "paid_twice": len(requests) - len(prompts),
    }


def units_finished(run_pk: int) -> int:
    """How many of the run's units are done or failed (the rows, not the run's counters)."""
    from judgeapp.models import Judgment, UnitStatus

    return Judgment.objects.filter(run_id=run_pk, status__in=[UnitStatus.DONE, UnitStatus.FAILED]).count()


def run_fault_tally(run_pk: int, *, units: int) -> dict:
    """What a fault cost a run, from its rows: `lost` (of the `units` it should judge, those not done or
    failed: never planned, pending, claimed), `failed`, and `against_judge` (failed units with no reply from
    the judge, which the report counts against it: `judgment_category` "no_reply"), with one such error."""
    from judgeapp.models import Judgment, Run, UnitStatus

    run = Run.objects.get(pk=run_pk)
    failed = list(Judgment.objects.filter(run_id=run_pk, status=UnitStatus.FAILED))
    from judgeapp.judging.accounting import judgment_category

    no_reply = [unit for unit in failed if judgment_category(unit) == "no_reply"]
    return {
        "status": run.status,
        "lost": units - units_finished(run_pk),
        "failed": len(failed),
        "against_judge": len(no_reply),
        "example_error": (no_reply or failed)[0].error[:160] if failed else "",
    }


def moved_again(run_pk: int, *, since: float, timeout: float) -> float | None:
    """Seconds from `since` (monotonic: the service's return; call this then) until the run records one
    more unit or finishes; None if it did neither within `timeout` of `since`."""
    from judgeapp.models import Run

    finished_then = units_finished(run_pk)
    deadline = since + timeout
    while time.monotonic() < deadline:
        if units_finished(run_pk) > finished_then or Run.objects.get(pk=run_pk).is_finished:
            return time.monotonic() - since
        time.sleep(0.05)
    return None


@contextmanager
def celery_broker(url: str):
    """This process's Celery app sends to `url` (a test's private broker, or a port nobody listens on) inside
    the block, with no connection to the old one kept; the configured broker again after it. Celery reads
    CELERY_BROKER_URL from the environment before its configuration, so both change; the embedded broker's
    transport and options are set aside; dropping the connections is what Celery itself does in a forked
    child (Celery._after_fork)."""
    from judgeapp.celery import app

    keys = ("broker_url", "broker_transport", "broker_transport_options")
    before_env, before_conf = os.environ.get("CELERY_BROKER_URL"), {key: app.conf[key] for key in keys}
    os.environ["CELERY_BROKER_URL"] = url
    app.conf.update(broker_url=url, broker_transport=None, broker_transport_options={})
    app._after_fork()
    try:
        yield
    finally:
        if before_env is None:
            os.environ.pop("CELERY_BROKER_URL", None)
        else:
            os.environ["CELERY_BROKER_URL"] = before_env
        app.conf.update(before_conf)
        app._after_fork()


def support_inputs_stored():
    """evals/support's test set and rubric stored as the demo stores them ("support (v1, 24 cases)",
    "support-quality (v1)"): what the run forms pick. `form`: the fields that pick them."""
    from types import SimpleNamespace

    from judgeapp.demo.registry import EVALS, support_testset
    from judgeapp.judging.content import rubric_load, testset_save

    testset = testset_save(support_testset())
    rubric = rubric_load(path=EVALS / "support" / "rubric.toml")
    return SimpleNamespace(testset=testset, rubric=rubric, form={"testset": testset.pk, "rubric": rubric.pk})


def rendered_without_queries(template: str, context: dict) -> str:
    """`template` rendered with `context` (what its view or its kind's page read gave): fails if rendering
    itself queries the database (a template tag that reads, a lazy relation the read did not load)."""
    from django.template.loader import render_to_string
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        html = render_to_string(template, context)
    assert [q["sql"] for q in queries.captured_queries] == [], f"{template} queried the database while rendering"
    return html


class MemoryCache:
    """The judge client's response cache in a dict (the app's is the database's): for tests of the client alone."""

    def __init__(self):
        self._data: dict[str, dict] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict | None:
        with self._lock:
            return self._data.get(key)

    def set(self, key: str, value: dict) -> None:
        with self._lock:
            self._data[key] = value


def lock_reasons_for_run(*, run) -> list[str]:
    """The calibration lock's reason (`lock_reason_for_scope`) for each judge configuration of `run`, in the
    run's prompt and rubric scope, for a run of any kind; the gate reads the same per-scope reason through
    each judge's status (`calibration_for_gate`)."""
    from calibration.selectors.locks import lock_reason_for_scope
    from calibration.selectors.run_judges import judge_configurations_for_run, scope_for_run

    prompt, rubric = scope_for_run(run=run)
    reasons = (
        lock_reason_for_scope(judge_name=name, judge_version=config["version"], prompt_version=prompt, rubric_version=rubric)
        for name, config in judge_configurations_for_run(run=run).items()
    )
    return [reason for reason in reasons if reason]
