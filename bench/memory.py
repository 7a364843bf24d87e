"""Memory and throughput of a large in-process run: peak RSS at N cases, for several N.

    .venv/bin/python bench/memory.py [--sizes 10000,100000] [--concurrency 16]

Each size runs in a fresh process: a pointwise run of N cases x 1 criterion against the fake judge at
zero latency, executed in process (`run_execute_inline`, the CLI's path) on a pool of --concurrency
threads. Printed per size: the wall time, judgments per second, and the process's peak resident memory
(ru_maxrss) before the run (Django set up, test set stored) and at its end. Flat in N means the second
figure barely grows from 10k to 100k.

DATABASE_URL picks the database (default: a fresh SQLite file per size).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, resource, sys, time, uuid
sys.path.insert(0, sys.argv[3])
from _setup import setup_django, FakeJudgeProcess, testset_bytes
setup_django()
from overhead import make_run
from judgeapp.judging.runs import run_execute_inline
from judgeapp.models import Judge
n, concurrency = int(sys.argv[1]), int(sys.argv[2])
fake = FakeJudgeProcess(latency=0.0)
try:
    judge = Judge.objects.create(name="bench-memory", model="fake-judge", family="scripted", base_url=fake.url, max_concurrency=concurrency)
    run = make_run(judge, n, "inline")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    run = run_execute_inline(run=run, concurrency=concurrency)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
finally:
    fake.stop()
print(json.dumps({"n": n, "wall": wall, "status": run.status, "done": run.done_units, "rss_before_kib": before, "rss_peak_kib": after}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated case counts")
    parser.add_argument("--concurrency", type=int, default=16, help="threads judging at once (and the judge's limit)")
    args = parser.parse_args()
    print(f"in-process runs at zero judge latency, concurrency {args.concurrency} (load average {os.getloadavg()[0]:.2f})")
    for n in (int(s) for s in args.sizes.split(",")):
        env = os.environ.copy()
        done = subprocess.run([sys.executable, "-c", CHILD, str(n), str(args.concurrency), str(HERE)], cwd=HERE.parent, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(done.stderr[-3000:])
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"   {n:>7} cases: {figures['wall']:7.1f} s, {figures['done'] / figures['wall']:6.1f} judgments/s ({figures['status']}); "
            f"peak RSS {figures['rss_before_kib'] / 1024:6.1f} MiB before the run, {figures['rss_peak_kib'] / 1024:6.1f} MiB at its end"
        )
        time.sleep(1)


if __name__ == "__main__":
    main()
