"""Shared set-up for the benchmark scripts: a throw-away database and data directory (unless DATABASE_URL /
CELERY_BROKER_URL say otherwise), the fake judge in its own process, real worker processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_django() -> str:
    """Point Django at a fresh SQLite file (or DATABASE_URL), migrate, return a one-line description."""
    scratch = Path(tempfile.mkdtemp(prefix="judgeapp-bench-"))
    os.environ.setdefault("DATA_DIR", str(scratch / "data"))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{scratch / 'bench.sqlite3'}")
    os.environ.setdefault("CELERY_QUEUE", f"judgeapp-bench-{os.getpid()}")
    os.environ["JUDGES_FILE"] = str(scratch / "none.toml")
    os.environ["JUDGE_MODEL"] = ""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "judgeapp.settings")
    os.environ.setdefault("DJANGO_DEBUG", "0")  # as in a command and a worker (judgeapp/settings.py)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    return f"database {engine}, broker {settings.CELERY_BROKER_URL.split('://')[0]}"


def child(script: str, *args: str, env: dict) -> str:
    """`python -c script args` from the checkout; its last line of output (exits with its error if it fails)."""
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return done.stdout.strip().splitlines()[-1]


def fresh_database_env() -> dict:
    """This environment, with a fresh SQLite file and data directory unless DATABASE_URL names a database:
    what a bench's build step and its measuring process share."""
    env = os.environ.copy()
    if "DATABASE_URL" not in env:
        scratch = Path(tempfile.mkdtemp(prefix="judgeapp-bench-"))
        env.update(DATABASE_URL=f"sqlite:///{scratch / 'bench.sqlite3'}", DATA_DIR=str(scratch / "data"))
    return env


def peak_above(call) -> dict:
    """Run `call()` and measure it: seconds, and its peak resident memory above what the process held before
    (the kernel's high-water mark, reset first: /proc/self/clear_refs). `result`: what it returned."""

    def kib(field: str) -> int:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = kib("VmRSS")
    started = time.perf_counter()
    result = call()
    return {"seconds": time.perf_counter() - started, "peak_above_kib": kib("VmHWM") - base, "result": result}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeJudgeProcess:
    """`python -m fakejudge` in its own process, so its threads don't share the benchmark's GIL."""

    def __init__(self, latency: float = 0.0, *extra: str):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fakejudge", "--port", str(self.port), "--latency", str(latency), *extra],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("fake judge did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict:
        with urllib.request.urlopen(f"{self.url}/_stats") as response:
            return json.load(response)

    def reset(self) -> None:
        urllib.request.urlopen(f"{self.url}/_reset").read()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Worker:
    def __init__(self, concurrency: int):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "judgeapp", "--quiet", "worker", "--pool", "prefork",
             "--concurrency", str(concurrency), "--loglevel", "WARNING", "-Q", os.environ["CELERY_QUEUE"],
             "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=ROOT, env=os.environ.copy(), start_new_session=True,
        )
        time.sleep(0.5)

    def stop(self) -> None:
        import signal

        self.proc.terminate()  # warm shutdown: the main process stops its pool children itself
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)


def testset_bytes(n: int, nonce: str) -> bytes:
    """n distinct cases (the nonce keeps the response cache from answering them)."""
    rows = [
        {
            "id": f"c{i:05d}", "input": f"[{nonce}] My order {i} has not arrived.",
            "output": f"Sorry! Order {i} ships within 2 days; here is the tracking link.",
        }
        for i in range(n)
    ]
    return "\n".join(json.dumps(r) for r in rows).encode()


RUBRIC = b'''name = "bench"
[[criteria]]
name = "helpfulness"
description = "Does the reply solve the problem?"
scale = { 1 = "no", 2 = "barely", 3 = "partly", 4 = "mostly", 5 = "fully" }
examples = { 1 = "a", 2 = "b", 3 = "c", 4 = "d", 5 = "e" }
'''


def wait_finished(run, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.is_finished:
            return
        time.sleep(0.05)
    raise RuntimeError(f"run {run.run_id} did not finish in {timeout}s ({run.done_units}/{run.total_units})")
