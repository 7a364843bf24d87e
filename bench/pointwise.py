"""Pointwise at scale: N cases x 1 criterion against the fake judge at a fixed latency, judge concurrency C.

    .venv/bin/python bench/pointwise.py [--cases 1000] [--latency 0.2] [--concurrency 16] [--pool 24] [--mode both] \
[--by-statement]
    .venv/bin/python bench/pointwise.py --breakdown 300 --latency 0      # CPU of one judgment, layer by layer

For each path: the wall time against the ideal (cases x latency / concurrency: 12.5 s for the defaults),
judgments per second, database queries per judgment, the judge's mean concurrency (summed call time / wall),
CPU milliseconds per judgment (this process or the worker pool, and the fake judge), and the wall time spent
inside database calls per judgment (lock and CPU waits included; `--by-statement` splits it by statement):

- celery: the web's path. A run created for Celery and enqueued; real worker processes (prefork,
  --pool P, default 1.5 C) claim and judge one unit per task. Wall = from enqueue to the run's finished_at. The
  pool is warmed first with a small run (a deployed worker is already running).
- inline: the CLI's path. `run_execute_inline` on a thread pool of P threads in this process (warmed too).

The judge's limit is C whatever the pool: with P = C a slot stands idle while its process claims, records
and fetches the next task; with P > C the extra processes do that bookkeeping while the others wait on
the judge, and the judge still never sees more than C calls at once (the fake judge's own count of calls
in flight is printed: "max in flight at the judge"). A waiter polls the limiter every few tens of ms.
`--pool 16` gives the figure for a pool the size of the limit.

The fake judge runs in its own process (its threads must not share this process's GIL). Queries are
counted on every connection that runs a judgment (the workers count theirs with bench/_querycount.py).
The response cache is emptied before each path, so every judgment reaches the judge. The machine's load
average is printed: on a shared machine other processes' CPU shows up as lost efficiency.

DATABASE_URL and CELERY_BROKER_URL pick the services (default: a fresh SQLite file and the embedded
filesystem broker, the laptop defaults); DATA_DIR defaults to a fresh temp folder, removed at the end.
BENCH_PROFILE_WORKERS=out.txt records the worker pool with py-spy (raw stacks, GIL holders only).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RUBRIC = b'''name = "bench"
[[criteria]]
name = "helpfulness"
description = "Does the reply solve the customer's problem?"
scale = { 1 = "ignores it", 2 = "barely helps", 3 = "partly solves it", 4 = "solves it with gaps", 5 = "solves it fully" }
examples = { 1 = "Not my problem.", 2 = "Try later.", 3 = "Check settings.", 4 = "Reset in Settings.", \
5 = "Reset in Settings; the link lasts 2 hours." }
'''


def setup(args) -> Path:
    scratch = Path(tempfile.mkdtemp(prefix="judgeapp-bench-pointwise-"))
    os.environ.setdefault("DATA_DIR", str(scratch / "data"))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{scratch / 'bench.sqlite3'}")
    os.environ.setdefault("CELERY_QUEUE", f"judgeapp-bench-pointwise-{os.getpid()}")
    os.environ["JUDGES_FILE"] = str(scratch / "none.toml")
    os.environ["JUDGE_MODEL"] = ""
    os.environ["BENCH_QUERYCOUNT_DIR"] = str(scratch / "querycount")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "judgeapp.settings")
    (scratch / "querycount").mkdir()
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return scratch


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listening on port {port}")


def sql_kind(sql: str) -> str:
    """'UPDATE judgeapp_run', 'SELECT judgeapp_judgeslot'...: the statement and its first table."""
    words = sql.split(None, 1)
    verb = words[0].upper() if words else "?"
    table = re.search(r'(?:FROM|UPDATE|INTO)\s+"?(\w+)"?', sql, re.I)
    return f"{verb} {table.group(1) if table else ''}".strip()


def print_kinds(by_kind: dict, judged: int) -> None:
    for key, (count, seconds) in sorted(by_kind.items(), key=lambda kv: -kv[1][1])[:12]:
        print(
            f"    {key:<36} {count / judged:5.2f} per judgment · {1000 * seconds / judged:7.2f} ms per judgment · "
            f"{1000 * seconds / count:6.2f} ms each",
            flush=True,
        )


class QueryCounter:
    """Counts the SQL statements of every connection opened in this process (one per thread)."""

    def __init__(self):
        self.count = 0
        self.seconds = 0.0  # wall time inside the database calls, lock waits included
        self.by_kind: dict[str, tuple[int, float]] = {}
        self.enabled = False
        self._lock = threading.Lock()

    def __call__(self, execute, sql, params, many, context):
        if not self.enabled:
            return execute(sql, params, many, context)
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            elapsed = time.perf_counter() - started
            key = sql_kind(sql)
            with self._lock:
                self.count += 1
                self.seconds += elapsed
                count, seconds = self.by_kind.get(key, (0, 0.0))
                self.by_kind[key] = (count + 1, seconds + elapsed)

    def install(self) -> None:
        from django.db import connection
        from django.db.backends.signals import connection_created

        connection_created.connect(lambda sender, connection, **kw: connection.execute_wrappers.append(self), weak=False)
        connection.ensure_connection()
        if self not in connection.execute_wrappers:
            connection.execute_wrappers.append(self)


def make_run(judge, cases: int, executor: str, tag: str):
    from judgeapp.judging.content import InputFile
    from judgeapp.pointwise.services import pointwise_run_create

    rows = [
        {"id": f"c{i:05d}", "input": f"[{tag}] I can't reset my password (ticket {i}).",
         "output": "Sorry for the trouble! Go to Settings > Password and click reset; the link arrives within 2 minutes."}
        for i in range(cases)
    ]
    testset = "\n".join(json.dumps(r) for r in rows).encode() + b"\n"
    return pointwise_run_create(
        testset=InputFile(data=testset, name=f"bench-{tag}.jsonl"),
        rubric=InputFile(data=RUBRIC, name="bench.toml"),
        judge=judge,
        threshold=1.0,
        executor=executor,
    )


def mean_concurrency(run) -> float:
    """The judge calls in flight on average while the run judged: summed call time / judging span."""
    from django.db.models import Max, Min, Sum

    agg = run.judgments.aggregate(latency=Sum("latency_ms"), first=Min("created_at"), last=Max("finished_at"))
    started = run.started_at or agg["first"]
    span = (agg["last"] - started).total_seconds() if agg["last"] and started else 0
    return (agg["latency"] or 0) / 1000 / span if span else 0.0


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a running process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def judge_stats(port: int, reset: bool = False) -> dict:
    """The fake judge's own counters (requests, most calls in flight at once); `reset` zeroes them."""
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/{'_reset' if reset else '_stats'}", timeout=10) as reply:
        return json.loads(reply.read())


def phases(run, t0) -> dict:
    """Seconds from the start (t0) to the first judge call, and from the last judgment to the run's end
    (the report: means, histogram, bootstrap intervals). The rest of the wall is judging."""
    from datetime import timedelta

    first, last = None, None
    for finished, latency in run.judgments.exclude(finished_at=None).values_list("finished_at", "latency_ms"):
        began = finished - timedelta(milliseconds=latency or 0)
        first = began if first is None or began < first else first
        last = finished if last is None or finished > last else last
    if first is None or run.finished_at is None:
        return {}
    return {
        "to_first_call_s": round((first - t0).total_seconds(), 2), "report_s": round((run.finished_at - last).total_seconds(), 2),
    }


def report(
    label: str, run, wall: float, queries: int, ideal: float, cpu: dict, db_seconds: float, extra: str = "", *, pool: int,
    port: int, t0
) -> dict:
    judged = run.done_units + run.failed_units
    max_in_flight = judge_stats(port)["max_in_flight"]
    extra = (
        f" · start to first call {phases(run, t0).get('to_first_call_s')} s, report {phases(run, t0).get('report_s')} s" + extra
    )
    figures = {
        "path": label,
        "pool": pool,
        "judge_max_in_flight": max_in_flight,
        "status": run.status,
        "judgments": judged,
        "wall_s": round(wall, 2),
        "ideal_s": round(ideal, 2),
        "efficiency": round(ideal / wall, 3) if wall else 0,
        "judgments_per_s": round(judged / wall, 1) if wall else 0,
        "queries_per_judgment": round(queries / judged, 1) if judged else 0,
        "judge_mean_concurrency": round(mean_concurrency(run), 1),
        "cpu_ms_per_judgment": {k: round(1000 * v / judged, 2) for k, v in cpu.items()} if judged else {},
        "db_wall_ms_per_judgment": round(1000 * db_seconds / judged, 1) if judged else 0,
    }
    print(
        f"{label:>7}: {judged} judgments ({run.status}) in {wall:.2f} s vs ideal {ideal:.2f} s "
        f"= {100 * figures['efficiency']:.1f}% · {figures['judgments_per_s']} judgments/s · "
        f"{figures['queries_per_judgment']} queries/judgment · pool {pool} · judge concurrency mean "
        f"{figures['judge_mean_concurrency']}, max in flight at the judge {max_in_flight} · "
        f"CPU ms/judgment {figures['cpu_ms_per_judgment']} · in database calls {figures['db_wall_ms_per_judgment']} "
        f"ms/judgment{extra}",
        flush=True,
    )
    return figures


def bench_inline(judge, args, counter: QueryCounter, ideal: float, fake_pid: int, port: int) -> dict:
    from judgeapp.judging.runs import run_execute_inline
    from judgeapp.models import CachedResponse, Executor

    run_execute_inline(run=make_run(judge, 2 * args.pool, Executor.INLINE, f"warm-{uuid.uuid4().hex[:6]}"), concurrency=args.pool)
    CachedResponse.objects.all().delete()
    run = make_run(judge, args.cases, Executor.INLINE, f"inline-{uuid.uuid4().hex[:6]}")
    judge_stats(port, reset=True)
    counter.count, counter.seconds, counter.by_kind, counter.enabled = 0, 0.0, {}, True
    fake_cpu, app_cpu = proc_cpu_seconds(fake_pid), time.process_time()
    from django.utils import timezone

    t0 = timezone.now()
    started = time.perf_counter()
    run = run_execute_inline(run=run, concurrency=args.pool)
    wall = time.perf_counter() - started
    cpu = {"app": time.process_time() - app_cpu, "fake_judge": proc_cpu_seconds(fake_pid) - fake_cpu}
    counter.enabled = False
    figures = report("inline", run, wall, counter.count, ideal, cpu, counter.seconds, pool=args.pool, port=port, t0=t0)
    if args.by_statement:
        print_kinds(counter.by_kind, run.total_units)
    return figures


def bench_celery(judge, args, scratch: Path, ideal: float, fake_pid: int, port: int) -> dict:
    from django.conf import settings

    from judgeapp.judging.runs import run_enqueue
    from judgeapp.models import CachedResponse, Executor, Run

    CachedResponse.objects.all().delete()
    log_path = scratch / "worker.log"
    log = open(log_path, "w")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "judgeapp", "worker", "--pool", "prefork",
         "--concurrency", str(args.pool), "--loglevel", "INFO", "--without-gossip", "--without-mingle",
         "--without-heartbeat", "-Q", settings.CELERY_TASK_DEFAULT_QUEUE, "-n", f"bench-{os.getpid()}@%h",
         "-I", "bench._querycount"],
        cwd=ROOT, env=os.environ.copy(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while " ready." not in log_path.read_text(errors="replace"):
            if worker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the worker did not start:\n" + log_path.read_text(errors="replace")[-3000:])
            time.sleep(0.1)
        # Warm the pool first (each process imports the HTTP stack and builds its client on its first call):
        # the figures are for a worker that is already running, as a deployed one is.
        warm = make_run(judge, 2 * args.pool, Executor.CELERY, f"warm-{uuid.uuid4().hex[:6]}")
        run_enqueue(run=warm)
        while not Run.objects.get(pk=warm.pk).is_finished:
            if time.monotonic() > deadline + 120:
                raise RuntimeError("the warm-up run did not finish")
            time.sleep(0.2)
        run = make_run(judge, args.cases, Executor.CELERY, f"celery-{uuid.uuid4().hex[:6]}")
        from django.utils import timezone

        profiler = None
        if os.environ.get("BENCH_PROFILE_WORKERS"):  # py-spy raw stacks of the worker and its pool, for profiling
            profiler = subprocess.Popen(
                [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(worker.pid), "--subprocesses",
                 "-r", "100", "-f", "raw", "--nonblocking", "--gil", "-o", os.environ["BENCH_PROFILE_WORKERS"]],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            time.sleep(2)
        judge_stats(port, reset=True)
        enqueued_at = timezone.now()
        fake_cpu = proc_cpu_seconds(fake_pid)
        workers_cpu, parent_cpu = _tree_cpu_seconds(worker.pid), proc_cpu_seconds(worker.pid)
        run_enqueue(run=run)  # outside a transaction: sent at once
        deadline = time.monotonic() + 60 + 5 * ideal
        while True:
            run = Run.objects.get(pk=run.pk)
            if run.is_finished or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        wall = ((run.finished_at or timezone.now()) - enqueued_at).total_seconds()
        cpu = {
            "workers": _tree_cpu_seconds(worker.pid) - workers_cpu,
            "of which worker parent": proc_cpu_seconds(worker.pid) - parent_cpu,
            "fake_judge": proc_cpu_seconds(fake_pid) - fake_cpu,
        }
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            profiler.wait(timeout=60)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        log.close()
    counts = [json.loads(p.read_text()) for p in Path(os.environ["BENCH_QUERYCOUNT_DIR"]).glob("*.json")]
    # The workers count the warm-up's judgments too (same queries per judgment): scale to the measured run.
    warm_units = 2 * args.pool
    share = run.total_units / (run.total_units + warm_units)
    queries = sum(c["queries"] for c in counts) * share
    db_seconds = sum(c.get("seconds", 0.0) for c in counts) * share
    figures = report(
        "celery", run, wall, queries, ideal, cpu, db_seconds, extra=f" · {len(counts)} worker processes reported", pool=args.pool,
        port=port, t0=enqueued_at,
    )
    if args.by_statement:
        by_kind: dict[str, tuple[int, float]] = {}
        for c in counts:
            for key, (count, seconds) in c.get("by_kind", {}).items():
                total = by_kind.get(key, (0, 0.0))
                by_kind[key] = (total[0] + count * share, total[1] + seconds * share)
        print_kinds(by_kind, run.total_units)
    return figures


def _tree_cpu_seconds(pid: int) -> float:
    """CPU of a process and its children (the worker's pool), read while they run."""
    total = proc_cpu_seconds(pid)
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return total + sum(_tree_cpu_seconds(int(child)) for child in children)


def bench_breakdown(judge, args, counter: QueryCounter) -> None:
    """What one judgment costs this process, layer by layer: one thread, a judge that answers at once
    (start the fake judge with --latency 0 for this), the same prompts each time, cache emptied."""
    from judgeapp.judging import endpoints, limiters
    from judgeapp.judging.client import JudgeClient
    from judgeapp.judging.judge_calls import ThreadLimiter
    from judgeapp.judging.parsing import score_spec
    from judgeapp.judging.prompts import load_prompt, user_message
    from judgeapp.judging.runs import run_execute_inline
    from judgeapp.models import CachedResponse, Executor

    n = args.breakdown
    prompts = [
        user_message(
            load_prompt("pointwise").render(rubric="r", input=f"[{uuid.uuid4().hex}] ticket {i}", output="Go to Settings.")
        )
        for i in range(n)
    ]
    config = endpoints.endpoint_config(judge)
    layers = {
        "client only (no database)": JudgeClient(config, cache=None, limiter=ThreadLimiter()),
        "+ database response cache": JudgeClient(config, cache=endpoints.DatabaseResponseCache(), limiter=ThreadLimiter()),
        "+ database slot limiter (client_for)": JudgeClient(
            config, cache=endpoints.DatabaseResponseCache(), limiter=limiters.DatabaseSlotLimiter()
        ),
    }
    print(f"breakdown: {n} judgments, one thread, CPU of this process per judgment", flush=True)
    for label, client in layers.items():
        CachedResponse.objects.all().delete()
        counter.count, counter.enabled = 0, True
        cpu, wall = time.process_time(), time.perf_counter()
        for messages in prompts:
            client.judge(messages, score_spec(1, 5), judged=())
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        counter.enabled = False
        print(
            f"  {label:<40} {1000 * cpu / n:6.2f} ms CPU · {1000 * wall / n:6.2f} ms wall · {counter.count / n:4.1f} queries",
            flush=True,
        )
    CachedResponse.objects.all().delete()
    run = make_run(judge, n, Executor.INLINE, f"breakdown-{uuid.uuid4().hex[:6]}")
    parts = _instrument(counter)
    counter.count, counter.enabled = 0, True
    cpu, wall = time.process_time(), time.perf_counter()
    run_execute_inline(run=run, concurrency=1)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    counter.enabled = False
    print(
        f"  {'full unit: claim, execute, record, report':<40} {1000 * cpu / n:6.2f} ms CPU · {1000 * wall / n:6.2f} ms wall · "
        f"{counter.count / n:4.1f} queries",
        flush=True,
    )
    print("  inside the full unit (inclusive, CPU per judgment):", flush=True)
    for label, (seconds, queries, calls) in parts.items():
        print(f"    {label:<54} {1000 * seconds / n:6.2f} ms · {queries / n:4.1f} queries · {calls / n:4.1f} calls", flush=True)


def _instrument(counter: QueryCounter) -> dict:
    """Wrap the run machinery's steps to add up their CPU time and queries (one thread: no overlap)."""
    import functools

    from judgeapp.judging import endpoints, limiters
    from judgeapp.judging import runs as run_services
    from judgeapp.judging.client import JudgeClient
    from judgeapp.pointwise.runkind import PointwiseHandler
    parts: dict[str, list] = {}

    def wrap(owner, name: str, label: str) -> None:
        original = getattr(owner, name)
        parts[label] = [0.0, 0, 0]

        @functools.wraps(original)
        def timed(*args, **kwargs):
            cpu, queries = time.thread_time(), counter.count
            try:
                return original(*args, **kwargs)
            finally:
                parts[label][0] += time.thread_time() - cpu
                parts[label][1] += counter.count - queries
                parts[label][2] += 1

        setattr(owner, name, timed)

    wrap(run_services, "judgment_execute", "judgment_execute (all of a unit)")
    wrap(run_services, "judgment_claim", "  judgment_claim (conditional UPDATE)")
    wrap(PointwiseHandler, "execute", "  handler.execute (prompt + judge call)")
    wrap(JudgeClient, "judge", "    JudgeClient.judge (parse, retry)")
    wrap(JudgeClient, "chat", "      JudgeClient.chat (cache, limiter, HTTP)")
    wrap(endpoints.DatabaseResponseCache, "get", "        response cache get (SELECT)")
    wrap(endpoints.DatabaseResponseCache, "set", "        response cache set (INSERT)")
    _wrap_context_manager(parts, counter, limiters.DatabaseSlotLimiter, "        slot limiter: take + give back a slot")
    wrap(run_services, "judgment_record", "  judgment_record (UPDATEs, EXISTS, advance)")
    wrap(PointwiseHandler, "finalize", "    handler.finalize (the report, once)")
    return parts


def _wrap_context_manager(parts: dict, counter: QueryCounter, owner, label: str) -> None:
    """Time what a context manager does on entry and exit, not what runs inside it."""
    original = owner.__call__
    parts[label] = [0.0, 0, 0]

    class Timed:
        def __init__(self, inner):
            self.inner = inner

        def _timed(self, step, *args):
            cpu, queries = time.thread_time(), counter.count
            try:
                return step(*args)
            finally:
                parts[label][0] += time.thread_time() - cpu
                parts[label][1] += counter.count - queries

        def __enter__(self):
            parts[label][2] += 1
            return self._timed(self.inner.__enter__)

        def __exit__(self, *exc):
            return self._timed(self.inner.__exit__, *exc)

    owner.__call__ = lambda self, *args, **kwargs: Timed(original(self, *args, **kwargs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000, help="cases (one criterion each)")
    parser.add_argument("--latency", type=float, default=0.2, help="the fake judge's seconds per answer")
    parser.add_argument("--concurrency", type=int, default=16, help="the judge's max_concurrency (the ideal's C)")
    parser.add_argument("--pool", type=int, help="worker processes (celery) and threads (inline); default: 1.5 x the concurrency")
    parser.add_argument("--mode", choices=["both", "celery", "inline"], default="both")
    parser.add_argument("--json", metavar="OUT", help="also write the figures as JSON here")
    parser.add_argument("--by-statement", action="store_true", help="also print the database time per kind of statement")
    parser.add_argument(
        "--breakdown", type=int, metavar="N", help="instead: the CPU per judgment of each layer, N judgments at zero latency",
    )
    args = parser.parse_args()
    args.pool = args.pool or args.concurrency + args.concurrency // 2

    scratch = setup(args)
    from django.conf import settings

    from judgeapp.models import Judge

    port = free_port()
    fake = subprocess.Popen(
        [sys.executable, "-m", "fakejudge", "--port", str(port), "--latency", str(args.latency)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        wait_port(port)
        judge = Judge.objects.create(
            name=f"bench-judge-{uuid.uuid4().hex[:8]}", model="fake-judge", family="scripted",
            base_url=f"http://127.0.0.1:{port}/v1",
            max_concurrency=args.concurrency, timeout_seconds=30,
        )
        ideal = args.cases * args.latency / args.concurrency
        engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        print(
            f"pointwise bench: {args.cases} cases x 1 criterion, judge latency {args.latency}s, concurrency "
            f"{args.concurrency}, pool {args.pool}; ideal {ideal:.2f} s · database {engine}, broker "
            f"{settings.CELERY_BROKER_URL.split('://')[0]} · {os.cpu_count()} CPUs · load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        if args.breakdown:
            counter = QueryCounter()
            counter.install()
            bench_breakdown(judge, args, counter)
            return
        results = []
        if args.mode in ("both", "celery"):
            results.append(bench_celery(judge, args, scratch, ideal, fake.pid, port))
        if args.mode in ("both", "inline"):
            counter = QueryCounter()
            counter.install()
            results.append(bench_inline(judge, args, counter, ideal, fake.pid, port))
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    finally:
        os.killpg(fake.pid, signal.SIGTERM)
        fake.wait(timeout=10)
        if os.environ.get("BENCH_KEEP"):
            print(f"kept {scratch}", flush=True)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
