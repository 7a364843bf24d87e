"""Memory and throughput of a large in-process run: peak RSS at N cases, for several N.

    .venv/bin/python bench/memory.py [--sizes 10000,100000] [--concurrency 16]

Each size runs in a fresh process: a pointwise run of N cases x 1 criterion against the fake judge at
zero latency, executed in process (`run_execute_inline`, the CLI's path) on a pool of --concurrency
threads. Printed per size: the wall time, judgments per second, and the process's peak resident memory
(ru_maxrss) before the run (Django set up, test set stored) and at its end; then the peak of each phase
alone (the kernel's high-water mark, reset as the phase starts: /proc/self/clear_refs) and its time: storing
the test set, starting the run (planning and creating its units), judging (from the start's end to the
finalize), the finalize (the report), the whole run (all three), and writing the judgments' CSV after it. \
Flat in N means these barely grow
from 10k to 100k.

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

CHILD = """
import json, resource, sys, tempfile, time, uuid
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from _setup import setup_django, FakeJudgeProcess, testset_bytes
setup_django()
from overhead import make_run
from judgeapp.judging import runs
from judgeapp.judging.runkind import handler_for
from judgeapp.models import Judge, RunKind
n, concurrency = int(sys.argv[1]), int(sys.argv[2])
phases = {}

def status_kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

open_peaks = []

def high_water_reset():
    # The kernel's high-water mark since the last reset; the phases open keep what it had reached.
    high = status_kib("VmHWM")
    open_peaks[:] = [max(peak, high) for peak in open_peaks]
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return high

def phase(name, call):
    # The peak resident memory and the time of one phase (and of the phases it is nested in).
    high_water_reset()
    open_peaks.append(0)
    started = time.perf_counter()
    try:
        return call()
    finally:
        high_water_reset()
        phases[name] = {"peak_kib": open_peaks.pop(), "seconds": time.perf_counter() - started}

def finalize_phase(run):
    phases["judging"] = {"peak_kib": high_water_reset(), "seconds": time.perf_counter() - judging_started[0]}
    return phase("finalize", lambda: finalize(run))

judging_started = [0.0]

def start_phase(**kw):
    try:
        return phase("start (plan, create units)", lambda: run_start(**kw))
    finally:
        judging_started[0] = time.perf_counter()

handler = handler_for(RunKind.POINTWISE)
finalize, run_start = handler.finalize, runs.run_start
handler.finalize = finalize_phase
runs.run_start = start_phase
fake = FakeJudgeProcess(latency=0.0)
try:
    judge = Judge.objects.create(name="bench-memory", model="fake-judge", family="scripted", base_url=fake.url, \
max_concurrency=concurrency)
    # ru_maxrss follows the resets of the high-water mark: the peaks before and after are the phases' own.
    setup_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run = phase("store the test set", lambda: make_run(judge, n, "inline"))
    before = max(setup_peak, phases["store the test set"]["peak_kib"])
    started = time.perf_counter()
    run = phase("run", lambda: runs.run_execute_inline(run=run, concurrency=concurrency))
    wall = time.perf_counter() - started
    after = max(before, phases["run"]["peak_kib"])
    # The judgments' CSV, as `evaluate --csv` writes it and the export page streams it.
    from judgeapp.judging.atomic import write_text_atomic
    from judgeapp.pointwise import services as pointwise_services
    csv_path = Path(tempfile.mkdtemp()) / "judgments.csv"
    phase("CSV export", lambda: write_text_atomic(csv_path, pointwise_services.judgments_csv_chunks(run=run)))
    phases["CSV export"]["bytes"] = csv_path.stat().st_size
finally:
    fake.stop()
print(json.dumps({"n": n, "wall": wall, "status": run.status, "done": run.done_units, "rss_before_kib": before, \
"rss_peak_kib": after, "phases": phases}))
"""

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated case counts")
    parser.add_argument("--concurrency", type=int, default=16, help="threads judging at once (and the judge's limit)")
    args = parser.parse_args()
    print(f"in-process runs at zero judge latency, concurrency {args.concurrency} (load average {os.getloadavg()[0]:.2f})")
    for n in (int(s) for s in args.sizes.split(",")):
        env = os.environ.copy()
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(n), str(args.concurrency), str(HERE)], cwd=HERE.parent, env=env,
            capture_output=True, text=True,
        )
        if done.returncode != 0:
            raise SystemExit(done.stderr[-3000:])
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"   {n:>7} cases: {figures['wall']:7.1f} s, {figures['done'] / figures['wall']:6.1f} judgments/s "
            f"({figures['status']}); peak RSS {figures['rss_before_kib'] / 1024:6.1f} MiB before the run, "
            f"{figures['rss_peak_kib'] / 1024:6.1f} MiB at its end"
        )
        judging = figures["phases"]["judging"]["seconds"]
        print(f"            judging alone (from the start's end to the finalize): {figures['done'] / judging:6.1f} judgments/s")
        for name, phase in figures["phases"].items():
            size = f", {phase['bytes'] / 2**20:.1f} MiB written" if "bytes" in phase else ""
            print(f"            {name:<28} peak RSS {phase['peak_kib'] / 1024:6.1f} MiB, {phase['seconds']:7.1f} s{size}")
        time.sleep(1)


if __name__ == "__main__":
    main()
