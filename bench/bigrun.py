"""A very large test set end to end, on PostgreSQL + Redis + real workers and the zero-latency fake judge.

    .venv/bin/python bench/bigrun.py                              # 2,000 and 20,000 cases (a minute)
    .venv/bin/python bench/bigrun.py --sizes 100000,1000000       # the issue's figures (minutes)

For each size a CSV test set of that many cases is generated and uploaded through the web form (Django's
test client in a child process of its own: the request's multipart parsing, the form, pointwise_run_create,
the test set streamed into the database, the run queued), and measured:

- upload: the request's seconds, and the peak memory of the process that stored it above what it held
  before (the test client's own copy of the request body, the file's size, is in it);
- planning: from the run's start to its planner's end (the stage's units all created), in a worker;
- first judgment: from the upload's end to the first unit judged;
- small run: a 10-case run started once the big one judges, to its end (target: under 60 s);
- worker peak RSS: the largest resident memory of the worker's processes (main and pool), from a fresh
  worker per size, read once planning ended.

The big run is cancelled after that: nothing waits for its million judgments. MAX_TESTSET_CASES is raised
to the largest size. DATABASE_URL defaults to a fresh PostgreSQL database on 127.0.0.1:5432 (user
postgres), dropped at the end (one given is used as it is, and kept); CELERY_BROKER_URL to
redis://127.0.0.1:6379/0, with a queue of this bench's own.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from _setup import ROOT, RUBRIC, FakeJudgeProcess, Worker, setup_django

SERVER_URL = "postgres://postgres@127.0.0.1:5432"

# The child that uploads: logs a reviewer in, posts the form with the file, prints its figures as JSON.
UPLOAD = """
import json, os, sys, time
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "judgeapp.settings")
import django
django.setup()
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

def kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

path, judge_pk, rubric = sys.argv[1], sys.argv[2], sys.argv[3]
client = Client()
client.force_login(User.objects.get(username="bench-reviewer"))
client.get(reverse("pointwise:new"))  # the form's page once: its imports and templates are not in the figure
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = kib("VmRSS")
started = time.perf_counter()
with open(path, "rb") as testset, open(rubric, "rb") as rubric_file:
    response = client.post(reverse("pointwise:new"), {"judge": judge_pk, "threshold": "3", "testset_file": testset, \
"rubric_file": rubric_file})
seconds = time.perf_counter() - started
if response.status_code != 302:
    raise SystemExit(f"upload answered {response.status_code}: {response.content[:2000]!r}")
print(json.dumps({"seconds": seconds, "peak_above_kib": kib("VmHWM") - base, \
"run": response["Location"].rstrip("/").rsplit("/", 1)[-1]}))
"""


def testset_csv(path: Path, cases: int, nonce: str) -> int:
    """A CSV test set of `cases` short cases (the nonce keeps the response cache out); its size in bytes."""
    with open(path, "w", newline="") as f:
        f.write("id,input,output\n")
        f.writelines(f"c{i},{nonce} q{i},a{i}\n" for i in range(cases))
    return path.stat().st_size


def tree_peak_rss_kib(root_pid: int) -> int:
    """The largest peak resident memory (VmHWM) among a process and its children."""
    peak = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if int(fields["Pid"]) == root_pid or int(fields.get("PPid", "0")) == root_pid:
            peak = max(peak, int(fields.get("VmHWM", "0 kB").split()[0]))
    return peak


def wait(predicate, timeout: float, what: str) -> float:
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)
    return time.monotonic() - started


def bench_size(cases: int, *, judge, args, scratch: Path) -> dict:
    from judgeapp.judging.audit import SYSTEM
    from judgeapp.judging.content import InputFile
    from judgeapp.judging.runs import run_cancel
    from judgeapp.models import Run
    from judgeapp.pointwise.services import pointwise_run_create

    nonce = uuid.uuid4().hex[:8]
    path = scratch / f"big-{cases}.csv"
    size = testset_csv(path, cases, nonce)
    rubric = scratch / "bench.toml"
    rubric.write_bytes(RUBRIC)
    worker = Worker(args.concurrency)
    run = None
    try:
        done = subprocess.run([sys.executable, "-c", UPLOAD, str(path), str(judge.pk), str(rubric)], cwd=ROOT,
                              env=os.environ.copy(), capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(done.stderr[-3000:])
        upload = json.loads(done.stdout.strip().splitlines()[-1])
        uploaded = time.monotonic()
        run = Run.objects.get(run_id=upload["run"])
        if args.upload_only:
            return {
                "cases": cases, "file_mb": size / 1e6, "upload_s": upload["seconds"],
                "upload_peak_mb": upload["peak_above_kib"] / 1024,
            }

        def current() -> Run:
            return Run.objects.get(pk=run.pk)

        planned_at: list = []

        def watch_planning() -> None:  # when the planner ends, seen every 50 ms (other writes move updated_at)
            from django.db import connections
            from django.utils import timezone

            try:
                while not planned_at:
                    row = current()
                    if row.status != "running" or row.claim_token is None:
                        planned_at.append(timezone.now())
                    time.sleep(0.05)
            finally:
                connections.close_all()

        watcher = threading.Thread(target=watch_planning, daemon=True)
        watcher.start()
        first = wait(lambda: current().done_units >= 1, args.timeout, "the first judgment")
        small = pointwise_run_create(
            testset=InputFile(
                data="\n".join(
                    json.dumps({"id": f"s{i}", "input": f"{nonce} small {i}", "output": "ok"}) for i in range(10)
                ).encode(),
                name="small.jsonl",
            ),
            rubric=InputFile(data=RUBRIC, name="bench.toml"), judge=judge, threshold=1.0,
        )
        small_seconds = wait(lambda: Run.objects.get(pk=small.pk).is_finished, args.timeout, "the 10-case run")
        big_done_then = current().done_units
        wait(lambda: bool(planned_at), args.timeout, "planning to end")
        planned = current()
        planning = (planned_at[0] - planned.started_at).total_seconds()
        worker_peak = tree_peak_rss_kib(worker.proc.pid)
    finally:
        if run is not None:  # nothing waits for its judgments, nor leaves it to the next size's worker
            run_cancel(run=Run.objects.get(pk=run.pk), actor=SYSTEM, reason="bench/bigrun.py: figures taken")
        worker.stop()
    return {
        "cases": cases, "file_mb": size / 1e6, "upload_s": upload["seconds"], "upload_peak_mb": upload["peak_above_kib"] / 1024,
        "planning_s": planning, "units": planned.total_units, "first_judgment_s": first,
        "small_run_s": small_seconds, "small_status": Run.objects.get(pk=small.pk).status,
        "big_done_when_small_ended": big_done_then,
        "worker_peak_mb": worker_peak / 1024, "since_upload_s": time.monotonic() - uploaded,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="2000,20000", help="comma-separated test set sizes (cases)")
    parser.add_argument("--concurrency", type=int, default=4, help="worker pool processes")
    parser.add_argument("--limit", type=int, default=4, help="the judge's max_concurrency")
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for any one figure")
    parser.add_argument("--upload-only", action="store_true", help="measure the upload alone (the run is cancelled at once)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    database = None
    if "DATABASE_URL" not in os.environ:
        database = f"judgeapp_bench_bigrun_{os.getpid()}"
        subprocess.run(
            ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc", f"CREATE DATABASE {database}"], check=True,
        )
        os.environ["DATABASE_URL"] = f"{SERVER_URL}/{database}"
    os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    os.environ["CELERY_QUEUE"] = f"judgeapp-bench-bigrun-{uuid.uuid4().hex[:8]}"
    os.environ["JUDGE_LIMITER"] = "redis"
    os.environ["DJANGO_DEBUG"] = "false"
    os.environ["MAX_TESTSET_CASES"] = str(max(sizes))
    os.environ.setdefault("UPLOAD_MAX_BYTES", str(100_000_000))
    scratch = Path(tempfile.mkdtemp(prefix="judgeapp-bench-bigrun-"))
    try:
        print(setup_django())
        from django.contrib.auth.models import Group, User

        from judgeapp.models import Judge

        reviewer, _ = User.objects.get_or_create(username="bench-reviewer")
        reviewer.groups.add(Group.objects.get_or_create(name="reviewer")[0])
        fake = FakeJudgeProcess(0.0)
        try:
            judge = Judge.objects.create(
                name=f"bench-bigrun-{uuid.uuid4().hex[:6]}", model="fake-judge", family="scripted", base_url=fake.url,
                max_concurrency=args.limit
            )
            print(f"zero-latency fake judge, limit {args.limit}; one worker of {args.concurrency} processes per size")
            for cases in sizes:
                row = bench_size(cases, judge=judge, args=args, scratch=scratch)
                if args.upload_only:
                    print(
                        f"{row['cases']:>9,} cases ({row['file_mb']:.1f} MB CSV): upload {row['upload_s']:.1f}s, storing process "
                        f"peak +{row['upload_peak_mb']:.0f} MB",
                        flush=True,
                    )
                    continue
                print(
                    f"{row['cases']:>9,} cases ({row['file_mb']:.1f} MB CSV): upload {row['upload_s']:.1f}s, storing process "
                    f"peak +{row['upload_peak_mb']:.0f} MB | planning {row['units']:,} units {row['planning_s']:.1f}s | first "
                    f"judgment {row['first_judgment_s']:.1f}s after the upload | 10-case run behind it {row['small_run_s']:.1f}s "
                    f"({row['small_status']}; the big run had {row['big_done_when_small_ended']:,} judged) | worker peak RSS "
                    f"{row['worker_peak_mb']:.0f} MB",
                    flush=True,
                )
        finally:
            fake.stop()
    finally:
        if database:
            from django.db import connections

            connections.close_all()
            subprocess.run(
                [
                    "psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc",
                    f"DROP DATABASE IF EXISTS {database} WITH (FORCE)",
                ],
                check=False,
            )


if __name__ == "__main__":
    main()
