"""Scale-out: 1, 2 and 4 separate `celery worker` processes share one run, on PostgreSQL and Redis.

    .venv/bin/python bench/scaleout.py [--workers 1,2,4] [--concurrency 8] [--limit 16] [--latency 0.5] [--units 320]

Each worker is its own `celery -A judgeapp worker` process (its own pool of --concurrency processes), as
on separate machines: they share only the database, the broker and the judge. The fake judge (fakejudge/,
its own process) answers after --latency seconds and counts the calls in flight; the judge's
max_concurrency is --limit, enforced across every worker by the Redis slot limiter. Printed per worker
count: wall time (from sending the run to its report), judgments per second against the ceiling
min(workers x concurrency, limit) / latency, and the calls the judge saw at once: the most (must never
exceed the limit) and the mean from its first call to its last (the planning before and the report after
are in the wall time, not in this mean).

DATABASE_URL defaults to a fresh PostgreSQL database on 127.0.0.1:5432 (user postgres), dropped at the
end (a DATABASE_URL given is used as it is, and kept); CELERY_BROKER_URL to redis://127.0.0.1:6379/0 with
a queue of this run's own.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid

from _setup import ROOT, FakeJudgeProcess

SERVER_URL = "postgres://postgres@127.0.0.1:5432"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2,4", help="comma-separated worker counts")
    parser.add_argument("--concurrency", type=int, default=8, help="pool processes per worker")
    parser.add_argument("--limit", type=int, default=16, help="the judge's max_concurrency (all workers together)")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds the fake judge takes per call")
    parser.add_argument("--units", type=int, default=320, help="judgments per run")
    args = parser.parse_args()

    database = None
    if "DATABASE_URL" not in os.environ:
        database = f"judgeapp_bench_scaleout_{os.getpid()}"
        subprocess.run(
            ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc", f"CREATE DATABASE {database}"], check=True,
        )
        os.environ["DATABASE_URL"] = f"{SERVER_URL}/{database}"
    os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    os.environ["CELERY_QUEUE"] = f"judgeapp-bench-scaleout-{uuid.uuid4().hex[:8]}"
    os.environ["JUDGE_LIMITER"] = "redis"
    os.environ["DJANGO_DEBUG"] = "false"
    try:
        run_bench(args)
    finally:
        if database:
            from django.db import connections

            connections.close_all()
            subprocess.run(
                [
                    "psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc",
                    f"DROP DATABASE IF EXISTS {database} WITH (FORCE)",
                ]
            )


def run_bench(args) -> None:
    from _setup import setup_django, wait_finished

    where = setup_django()
    from overhead import make_run

    from judgeapp.judging.runs import run_enqueue
    from judgeapp.models import Judge

    fake = FakeJudgeProcess(args.latency)
    results = []
    try:
        judge = Judge.objects.create(
            name=f"bench-scaleout-{uuid.uuid4().hex[:6]}", model="fake-judge", family="scripted", base_url=fake.url,
            max_concurrency=args.limit,
        )
        for count in (int(w) for w in args.workers.split(",")):
            workers = [start_worker(f"bench{i}-{uuid.uuid4().hex[:6]}", args.concurrency) for i in range(count)]
            try:
                time.sleep(3)  # every worker connected to the broker
                warm = make_run(judge, args.concurrency * count, "celery")
                run_enqueue(run=warm)
                wait_finished(warm, 120)
                fake.reset()
                run = make_run(judge, args.units, "celery")
                started = time.perf_counter()
                run_enqueue(run=run)
                wait_finished(run, 900)
                wall = time.perf_counter() - started
                stats = fake.stats()
            finally:
                for worker in workers:
                    stop_worker(worker)
            lanes = min(count * args.concurrency, args.limit)
            mean_in_flight = stats["busy_seconds"] / (stats["last_at"] - stats["first_at"] + args.latency)
            results.append((
                count, wall, args.units / wall, lanes / args.latency, stats["max_in_flight"], mean_in_flight,
                stats["chat_requests"], run.status,
            ))
    finally:
        fake.stop()

    print(f"scale-out ({where}): {args.units} judgments at {args.latency} s latency, judge limit {args.limit}, "
          f"{args.concurrency} pool processes per worker (load average {os.getloadavg()[0]:.2f})")
    for count, wall, rate, ceiling, max_in_flight, mean_in_flight, calls, status in results:
        print(f"   {count} worker(s): {wall:6.2f} s, {rate:6.1f} judgments/s (ceiling {ceiling:5.1f}/s, {rate / ceiling:4.0%}); "
              f"calls at once at the judge: max {max_in_flight} (limit {args.limit}), mean {mean_in_flight:4.1f} from its first "
              f"call to its last; {calls} calls; run {status}")


def start_worker(name: str, concurrency: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "judgeapp", "--quiet", "worker", "--pool", "prefork", "--concurrency",
         str(concurrency), "--loglevel", "WARNING", "-Q", os.environ["CELERY_QUEUE"], "-n", f"{name}@%h", "--without-gossip",
         "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=os.environ.copy(), start_new_session=True, stderr=subprocess.DEVNULL,
    )


def stop_worker(proc: subprocess.Popen) -> None:
    import signal

    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
