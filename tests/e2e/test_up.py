"""`manage.py up` (what ./start.sh runs): stopped by `kill`, Ctrl-C or its terminal closing, it stops the worker
and the web it started (they run in their own sessions, so nothing else would)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import free_port, listening, wait_for

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_up_stops_its_worker_and_web_when_it_is_stopped(tmp_path, signum):
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "judgeapp.settings",
        "DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'up.sqlite3'}",
        "CELERY_BROKER_URL": "",
        "JUDGES_FILE": str(tmp_path / "none.toml"),
    }
    # As from a terminal: SIGINT and SIGHUP at their defaults (a test run started in the background or under
    # nohup, as CI's may be, would pass on an ignored signal, and such a job is rightly deaf to it).
    up = subprocess.Popen(
        [sys.executable, "manage.py", "up", "--no-demo", "--port", str(port), "--concurrency", "1"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=lambda: [signal.signal(signum, signal.SIG_DFL) for signum in (signal.SIGINT, signal.SIGHUP)],
    )
    try:
        wait_for(lambda: listening(port), 60, message="the web app")
        started = children_of(up.pid)
        assert len(started) == 2  # the worker and the web
        # The worker's pool processes too: `up` signals the worker, which stops its own pool.
        pool = wait_for(lambda: [pid for child in started for pid in children_of(child)], 60, message="the worker's pool")
        up.send_signal(signum)
        assert up.wait(timeout=30) != 0
        wait_for(lambda: not any(alive(pid) for pid in started + pool), 30, message="the worker, its pool and the web to stop")
        assert not listening(port)
    finally:
        if up.poll() is None:
            up.kill()
        for pid in children_of(up.pid):
            os.killpg(pid, signal.SIGKILL)
