"""Helpers for tests that run real processes and threads."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Self
from urllib.parse import quote

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def database_url_for_subprocess(*, port: int | None = None) -> str:
    """DATABASE_URL of the database this test process uses (the test database), for a child process;
    `port`: reached through that loopback port instead (a TcpProxy's)."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(s['NAME']).resolve()}"
    user = quote(s.get("USER") or "")
    password = f":{quote(s['PASSWORD'])}" if s.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    address = f"127.0.0.1:{port}" if port else f"{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}"
    return f"postgres://{auth}{address}/{s['NAME']}"


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
    lines = [f"run {run.run_id}: {run.status} stage {run.stage}, {run.done_units} done, {run.failed_units} failed, error {run.error!r}"]
    lines += [f"  {row['n']} {row['status']} {row['claimed_by']}" for row in units]
    for number, worker in enumerate(workers):
        alive = worker.proc is not None and worker.proc.poll() is None
        lines.append(f"worker {number} ({'alive' if alive else 'ended'}), last log lines:")
        lines += [f"  {line}" for line in worker.log().splitlines()[-log_lines:]]
    return "\n".join(lines)


class WorkerProcess:
    """`celery -A judgeapp worker` in its own process group, so that a test can SIGKILL all of it."""

    def __init__(self, env: dict, concurrency: int, log_path: Path):
        self.env = {**env, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONUNBUFFERED": "1"}
        self.concurrency = concurrency
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> None:
        self._log = open(self.log_path, "w")
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
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    """Whether something accepts connections on this loopback port."""
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class TcpProxy:
    """A loopback TCP proxy to `target` that a test cuts and restores: while cut, every connection through it
    is dropped and new ones are refused, as a database server that goes away does, seen only by the
    processes pointed at the proxy (a worker's DATABASE_URL; the test itself keeps its own connection).

        with TcpProxy(database_address()) as proxy:
            worker_factory(DATABASE_URL=database_url_for_subprocess(port=proxy.port))
            proxy.cut(); time.sleep(5); proxy.restore()
    """

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.port = free_port()
        self._listener = None
        self._open: set = set()
        self._lock = threading.Lock()

    def __enter__(self) -> Self:
        self.restore()
        return self

    def __exit__(self, *exc) -> None:
        self.cut()

    def restore(self) -> None:
        """Accept connections again, on the same port."""
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name="tcp-proxy", daemon=True).start()

    def cut(self) -> None:
        """Drop every connection and refuse new ones until `restore`."""
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
            except OSError:
                pass
            listener.close()
        with self._lock:
            open_sockets, self._open = list(self._open), set()
        for sock in open_sockets:
            self._drop(sock)

    def _accept(self, listener) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    self._drop(client)
                    self._drop(upstream)
                    return
                self._open.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), name="tcp-proxy-pipe", daemon=True).start()

    def _pipe(self, source, sink) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            with self._lock:
                self._open.discard(sock)
            self._drop(sock)

    @staticmethod
    def _drop(sock) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()
