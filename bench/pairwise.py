"""Benchmark: a pairwise A/B run of N inputs (2N judge calls, both orders) against the fake judge server
at a fixed latency, through the same path as `manage.py evaluate pairwise` (the run machinery's thread
pool, the database-backed response cache and the per-judge slot limiter), on a fresh SQLite database. The
fake judge runs in its own process, as a real judge server would, so its work does not count as ours.

    .venv/bin/python bench/pairwise.py                      # 500 inputs, 0.2 s latency, concurrency 8
    .venv/bin/python bench/pairwise.py --concurrency 16 --cases 200
    .venv/bin/python bench/pairwise.py --database-url postgres://postgres@127.0.0.1:5432/bench_pairwise

Prints the wall time against the ideal for the configured concurrency: ceil(2N / concurrency) x latency,
what a perfectly parallel client would need when every call takes exactly the server's latency.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=500, help="inputs compared (default 500)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the fake judge takes per call (default 0.2)")
    parser.add_argument("--concurrency", type=int, default=None, help="calls in flight (default JUDGE_MAX_CONCURRENCY, 8)")
    parser.add_argument("--database-url", help="an existing database to use instead of a fresh SQLite file (migrated first)")
    args = parser.parse_args()
    if args.latency <= 0 or args.cases < 1:
        parser.error("--latency must be positive and --cases at least 1")

    workdir = Path(tempfile.mkdtemp(prefix="judgeapp-bench-pairwise-"))
    try:
        run_benchmark(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run_benchmark(args, workdir: Path) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "judgeapp.settings",
            "DATABASE_URL": args.database_url or f"sqlite:///{workdir / 'bench.sqlite3'}",
            "DATA_DIR": str(workdir / "data"),
            "JUDGES_FILE": str(workdir / "no-judges.toml"),
            "JUDGE_MODEL": "",
        }
    )
    import uuid

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from judgeapp.judging.content import InputFile
    from judgeapp.judging.runs import run_execute_inline
    from judgeapp.models import Executor, Judge
    from judgeapp.pairwise.services import VersionSource, pairwise_run_create

    concurrency = args.concurrency or settings.JUDGE_MAX_CONCURRENCY
    call_command("migrate", verbosity=0)
    # A nonce in every input: a database used before must not answer from its response cache.
    nonce = uuid.uuid4().hex[:8]
    ids = [f"q{i:04d}" for i in range(args.cases)]

    def jsonl(rows) -> bytes:
        return "\n".join(json.dumps(r) for r in rows).encode() + b"\n"

    testset = jsonl({"id": i, "input": f"My order {i} ({nonce}) has not arrived. Where is it?"} for i in ids)
    replies_a = jsonl({"id": i, "output": f"Sorry about order {i}: it ships today, tracking by email."} for i in ids)
    replies_b = jsonl({"id": i, "output": f"Order {i} is delayed."} for i in ids)
    rubric = (ROOT / "evals" / "support" / "rubric.toml").read_bytes()

    server = subprocess.Popen(
        [sys.executable, "-m", "fakejudge", "--port", "0", "--latency", str(args.latency)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    try:
        server_url = server.stdout.readline().strip().rsplit(" ", 1)[-1]
        judge = Judge.objects.create(name=f"bench-{nonce}", model="fake-judge", family="scripted", base_url=server_url,
                                     max_concurrency=concurrency, timeout_seconds=30)
        run = pairwise_run_create(
            testset=InputFile(testset, "bench.jsonl"),
            rubric=InputFile(rubric, "rubric.toml"),
            judge=judge,
            version_a=VersionSource(outputs=InputFile(replies_a, "a.jsonl")),
            version_b=VersionSource(outputs=InputFile(replies_b, "b.jsonl")),
            executor=Executor.INLINE,
        )
        # The report's sign test imports scipy.stats, once per process (a worker pays it once, not per run):
        # import it before the clock starts and say how long it took.
        import_started = time.monotonic()
        import scipy.stats  # noqa: F401

        scipy_import = time.monotonic() - import_started
        started, cpu_started = time.monotonic(), time.process_time()
        run = run_execute_inline(run=run, concurrency=concurrency)
        wall, cpu = time.monotonic() - started, time.process_time() - cpu_started
        run.refresh_from_db()
    finally:
        server.terminate()
        server.wait(timeout=10)

    units = run.done_units + run.failed_units
    ideal = math.ceil(units / concurrency) * args.latency
    report = run.report or {}
    print(f"pairwise benchmark: {args.cases} inputs x 2 orders = {units} judge calls, latency {args.latency:g} s, "
          f"concurrency {concurrency}, {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}")
    print(f"  run {run.status}: {run.done_units} done, {run.failed_units} failed; "
          f"wins A {report.get('wins_a')}, wins B {report.get('wins_b')}, ties {report.get('ties')}")
    print(f"  wall time        {wall:8.1f} s")
    print(f"  ideal            {ideal:8.1f} s   (ceil({units} / {concurrency}) x {args.latency:g} s)")
    print(f"  efficiency       {ideal / wall:8.0%}   (ideal / wall)")
    print(f"  throughput       {units / wall:8.1f} calls/s   (ideal {concurrency / args.latency:.1f})")
    print(f"  overhead         {(wall - ideal) / units * 1000 * concurrency:8.0f} ms per call per lane beyond the latency")
    print(
        f"  CPU time         {cpu:8.1f} s   in this process ({cpu / units * 1000:.0f} ms per call: ORM, claims, cache, HTTP "
        "client)"
    )
    print(f"  not timed        {scipy_import:8.1f} s   importing scipy.stats for the sign test (once per process)")
    print(f"  machine load     {os.getloadavg()[0]:8.1f}   (1-minute load average on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
