"""From a shell, start-up included: `manage.py evaluate pointwise` against the fake judge.

    .venv/bin/python bench/shell.py [--cases 480,1000] [--latency 0.2] [--concurrency 16]

For each size, a fresh test set of N distinct cases (nothing cached) and one `manage.py evaluate pointwise
--concurrency C` in a new process, timed from the process's start to its exit: Python starting, Django
setting up, the judges file loaded, the run planned, judged and reported. The ideal is N x latency / C
(the judge's time alone); the figure is ideal / wall. Where the rest goes is printed beneath, from the
run's timestamps: start-up (Python, Django, the judges file, the test set read and stored, up to the run's
creation), planning (the run started, its units created, until the first judgment could have begun), judging
(first to last judgment), finalize (the report computed and stored) and exit (the report written, printed).

The fake judge (fakejudge/) runs in its own process; the database is a fresh SQLite file (DATABASE_URL
overrides), migrated before the first timed command.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _setup import ROOT, RUBRIC, FakeJudgeProcess, testset_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="480,1000", help="comma-separated test set sizes")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the fake judge takes per call")
    parser.add_argument("--concurrency", type=int, default=16, help="judge calls in flight (and the judge's limit)")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="judgeapp-bench-shell-"))
    fake = FakeJudgeProcess(args.latency)
    env = os.environ.copy()
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as on a developer's machine: compiled modules are cached
    env.setdefault("DATABASE_URL", f"sqlite:///{scratch / 'bench.sqlite3'}")
    env.update(
        DATA_DIR=str(scratch / "data"),
        DJANGO_SETTINGS_MODULE="judgeapp.settings",
        JUDGES_FILE=str(scratch / "judges.toml"),
        JUDGE_MODEL="",
    )
    (scratch / "judges.toml").write_text(
        f'[judges.bench]\nmodel = "fake-judge"\nfamily = "scripted"\nbase_url = "{fake.url}"\nmax_concurrency = '
        f'{args.concurrency}\n'
    )
    (scratch / "rubric.toml").write_bytes(RUBRIC)
    results = []
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        for n in (int(s) for s in args.cases.split(",")):
            testset = scratch / f"cases-{n}.jsonl"
            testset.write_bytes(testset_bytes(n, uuid.uuid4().hex[:8]))
            fake.reset()
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "manage.py", "evaluate", "pointwise", "--testset", str(testset), "--rubric",
                 str(scratch / "rubric.toml"), "--judge", "bench", "--concurrency", str(args.concurrency), "--format", "json",
                 "--report", str(scratch / f"report-{n}.json")],
                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )
            wall = time.perf_counter() - started
            wall_clock_start = time.time() - wall
            if done.returncode not in (0, 1):  # 1: the gate blocked, which is fine here
                raise SystemExit(f"evaluate exited {done.returncode}: {done.stderr[-2000:]}")
            stats = fake.stats()
            phases = run_phases(env, wall_clock_start, wall, args.latency)
            span = (stats["last_at"] - stats["first_at"] + args.latency) if stats["first_at"] else 0
            phases["mean calls at once"] = stats["busy_seconds"] / span if span else 0
            phases["judge's mean seconds a call"] = stats["busy_seconds"] / max(stats["chat_requests"], 1)
            results.append((n, wall, n * args.latency / args.concurrency, stats["max_in_flight"], stats["chat_requests"], phases))
    finally:
        fake.stop()
    print(f"from a shell, start-up included: evaluate pointwise at {args.latency} s latency, concurrency {args.concurrency} "
          f"(load average {os.getloadavg()[0]:.2f})")
    for n, wall, ideal, max_in_flight, calls, phases in results:
        print(f"   {n:>6} judgments: {wall:6.2f} s against the ideal {ideal:5.2f} s ({ideal / wall:4.0%} of ideal); "
              f"max {max_in_flight} calls at once, {calls} calls")
        print("          " + " · ".join(
            f"{name} {value:.2f}" + (" s" if name in PHASE_NAMES else "") for name, value in phases.items()
        ))


PHASES = """
import json
from django.db.models import Max, Min
from judgeapp.models import Run
run = Run.objects.order_by("-created_at").first()
units = run.judgments.aggregate(first=Min("finished_at"), last=Max("finished_at"))
print(json.dumps({k: v.timestamp() for k, v in {"created": run.created_at, "started": run.started_at, "first": units["first"],
                  "last": units["last"], "finished": run.finished_at}.items()}))
"""


PHASE_NAMES = ("start-up", "planning", "judging", "finalize", "exit")


def run_phases(env: dict, process_start: float, wall: float, latency: float) -> dict[str, float]:
    """Seconds of each phase of the newest run, from its timestamps (see the module's docstring)."""
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", PHASES], cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )
    t = json.loads(done.stdout.strip().splitlines()[-1])
    judging_start = t["first"] - latency
    return {
        "start-up": t["created"] - process_start,
        "planning": judging_start - t["created"],
        "judging": t["last"] - judging_start,
        "finalize": t["finished"] - t["last"],
        "exit": process_start + wall - t["finished"],
    }


if __name__ == "__main__":
    main()
