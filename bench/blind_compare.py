"""Benchmark: the blind comparator on generated versions — the leakage scan alone, then a whole
comparison through `manage.py blind-compare` (rubric, one judge call per run, aggregation, comparison.json)
against the fake judge server at a fixed latency, on a fresh SQLite database. The fake judge runs in its
own process, as a real judge server would, so its work does not count as ours.

    .venv/bin/python bench/blind_compare.py                           # 6 versions x 5 runs, 0.2 s latency
    .venv/bin/python bench/blind_compare.py --versions 10 --runs 10 --concurrency 16
    .venv/bin/python bench/blind_compare.py --database-url postgres://postgres@127.0.0.1:5432/bench_blind

Prints the leakage scan's speed (MB of version text per second, with 30 configured names to look for)
and the comparison's wall time against the ideal: (1 + ceil(V x R / concurrency)) x latency, the rubric
call followed by perfectly parallel scoring calls.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SECTION = """## Step {n}
1. Notify the on-call engineer and #billing-ops {n} minutes ahead.
2. Rotate the password in the vault: `vault write -f secret/billing/db/rotate-{n}`.
3. Restart the {n} billing pods one at a time and watch the error rate.
- Roll back: restore the vault's previous version and restart.
- Verify: the health check returns 200 within {n} minutes.
"""


def version_text(version: int, run: int, size: int) -> str:
    text = f"# Billing password rotation, draft {version}.{run}\n\n"
    n = 0
    while len(text) < size:
        n += 1
        text += SECTION.format(n=n + version)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", type=int, default=6, help="versions compared (default 6)")
    parser.add_argument("--runs", type=int, default=5, help="run-* directories per version (default 5)")
    parser.add_argument("--size", type=int, default=8000, help="characters of output per run (default 8000)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the fake judge takes per call (default 0.2)")
    parser.add_argument("--concurrency", type=int, default=8, help="judge calls in flight (default 8)")
    parser.add_argument("--database-url", help="an existing database to use instead of a fresh SQLite file (migrated first)")
    args = parser.parse_args()
    if not 2 <= args.versions <= 26 or args.runs < 1 or args.latency <= 0:
        parser.error("--versions must be 2-26, --runs at least 1, --latency positive")

    workdir = Path(tempfile.mkdtemp(prefix="judgeapp-bench-blind-"))
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

    from judgeapp.blind.core.inputs import read_version_dir
    from judgeapp.blind.core.leakage import scan_inputs
    from judgeapp.judging.leakage.names import KnownName
    from judgeapp.models import Judge, Run

    call_command("migrate", verbosity=0)
    nonce = uuid.uuid4().hex[:8]  # a database used before must not answer from its response cache
    labels = [chr(ord("A") + i) for i in range(args.versions)]
    directories = []
    for i, label in enumerate(labels):
        directory = workdir / "versions" / f"version-{i}"
        for r in range(1, args.runs + 1):
            (directory / f"run-{r}").mkdir(parents=True)
            (directory / f"run-{r}" / "runbook.md").write_text(version_text(i, r, args.size) + f"\n{nonce}\n")
        directories.append(directory)
    prompt = workdir / "task.md"
    prompt.write_text("Write a runbook for rotating the billing database password: steps, notify, roll back, verify.")
    expectations = workdir / "expectations.txt"
    expectations.write_text("Lists the steps\nSays how to roll back\nNames who to notify\n")

    # 1. The leakage scan alone, with as many configured names as a busy team has.
    contents = [(f"version {label}", read_version_dir(d, max_run_bytes=10**7)) for label, d in zip(labels, directories)]
    known = [KnownName(f"support-bot-v{i}", "configured system") for i in range(15)]
    known += [KnownName(f"team-judge-{i}", "configured judge") for i in range(15)]
    text_bytes = sum(len(f.text.encode()) for _, c in contents for r in c.runs for f in r.files)
    started = time.perf_counter()
    rounds = 5
    for _ in range(rounds):
        flags = scan_inputs(versions=contents, eval_prompt=prompt.read_text(), expectations=[], known=known, labels=labels)
    scan_seconds = (time.perf_counter() - started) / rounds
    assert not flags, flags

    # 2. A whole comparison through the command, against the fake judge in its own process.
    server = subprocess.Popen(
        [sys.executable, "-m", "fakejudge", "--port", "0", "--latency", str(args.latency)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    try:
        server_url = server.stdout.readline().strip().rsplit(" ", 1)[-1]
        Judge.objects.create(name=f"bench-{nonce}", model="scripted", family="scripted", base_url=server_url,
                             max_concurrency=args.concurrency, timeout_seconds=60)
        output = workdir / "comparison.json"
        argv = [f"--version={label}={d}" for label, d in zip(labels, directories)]
        started, cpu_started = time.monotonic(), time.process_time()
        call_command("blind-compare", *argv, "--prompt", str(prompt), "--expectations", str(expectations),
                     "--output", str(output), "--judge", f"bench-{nonce}", "--concurrency", str(args.concurrency),
                     stdout=io.StringIO())
        wall, cpu = time.monotonic() - started, time.process_time() - cpu_started
    finally:
        server.terminate()
        server.wait(timeout=10)

    run = Run.objects.get(kind="blind", judge__name=f"bench-{nonce}")
    doc = json.loads(output.read_text())
    calls = run.done_units + run.failed_units
    ideal = (1 + math.ceil((calls - 1) / args.concurrency)) * args.latency
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    print(f"blind comparison benchmark: {args.versions} versions x {args.runs} runs, {args.size:,} characters per run, {engine}")
    print(f"  leakage scan     {scan_seconds * 1000:8.1f} ms   for {text_bytes / 1e6:.2f} MB of text "
          f"({text_bytes / 1e6 / scan_seconds:.1f} MB/s, {len(known)} configured names + structure checks)")
    print(f"  comparison       {wall:8.1f} s    {calls} judge calls (1 rubric + {calls - 1} runs), latency {args.latency:g} s, "
          f"concurrency {args.concurrency}; run {run.status}, winner {doc['winner'] or 'none'}")
    print(f"  ideal            {ideal:8.1f} s    ((1 + ceil({calls - 1} / {args.concurrency})) x {args.latency:g} s)")
    print(f"  efficiency       {ideal / wall:8.0%}")
    print(
        f"  CPU time         {cpu:8.1f} s    in this process ({cpu / calls * 1000:.0f} ms per call: reading, ORM, claims, HTTP, "
        "report)"
    )
    print(f"  machine load     {os.getloadavg()[0]:8.1f}    (1-minute load average on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
