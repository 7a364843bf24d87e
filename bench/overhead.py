"""The app's own overhead per judgment, and the concurrency it achieves against a slow judge.

    .venv/bin/python bench/overhead.py [--units 400] [--slow-units 320] [--concurrency 16]

1. Overhead (judge latency zero): the same N distinct judgments (a) as bare client calls, (b) through the
   run machinery in process (claims, records, progress, cache, limiter: database work) one at a time, then
   on --concurrency lanes as `evaluate` runs them, (c) through Celery worker processes (plus the broker).
   Overhead per judgment = (b) minus (a).
2. Concurrency (judge latency 0.2 s, max_concurrency = worker concurrency): the fake judge counts the
   requests in flight; mean concurrency = summed request time / wall time, against the configured one.

DATABASE_URL / CELERY_BROKER_URL pick the services (default: a fresh SQLite file and the embedded broker).
"""

import argparse
import os
import time
import uuid

from _setup import RUBRIC, FakeJudgeProcess, Worker, setup_django, testset_bytes, wait_finished


def make_run(judge, n: int, executor: str):
    from judgeapp.judging.content import prompt_register, rubric_store, testset_store
    from judgeapp.judging.runs import run_create
    from judgeapp.models import RunKind

    nonce = uuid.uuid4().hex[:8]
    return run_create(
        kind=RunKind.POINTWISE,
        executor=executor,
        judge=judge,
        testset=testset_store(data=testset_bytes(n, nonce), name=f"bench-{nonce}.jsonl"),
        rubric=rubric_store(data=RUBRIC, name="bench.toml"),
        prompt=prompt_register(prompt="pointwise"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, default=400, help="judgments for the overhead measurement")
    parser.add_argument("--slow-units", type=int, default=320, help="judgments for the concurrency measurement")
    parser.add_argument("--concurrency", type=int, default=16, help="worker processes and judge max_concurrency")
    args = parser.parse_args()
    where = setup_django()

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from judgeapp.judging.client import JudgeClient
    from judgeapp.judging.judge_calls import EndpointConfig
    from judgeapp.judging.runs import run_enqueue, run_execute_inline
    from judgeapp.models import Judge

    print(f"judgeapp overhead benchmark ({where})")
    fast = FakeJudgeProcess(latency=0.0)
    try:
        judge = Judge.objects.create(
            name="bench-fast", model="fake-judge", family="scripted", base_url=fast.url, max_concurrency=args.concurrency,
        )

        # (a) bare client calls, no cache, no database
        client = JudgeClient(EndpointConfig(name="bare", model="fake-judge", base_url=fast.url))
        from judgeapp.judging.parsing import score_spec
        from judgeapp.judging.prompts import load_prompt, user_message

        prompt = load_prompt("pointwise")
        nonce = uuid.uuid4().hex[:8]
        started = time.perf_counter()
        for i in range(args.units):
            client.judge(
                user_message(prompt.render(rubric="r", input=f"[{nonce}] q{i}", output="a")), score_spec(),
                judged=(f"[{nonce}] q{i}", "a"),
            )
        bare = (time.perf_counter() - started) / args.units

        # (b) the run machinery in process, one at a time
        run = make_run(judge, args.units, "inline")
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            run_execute_inline(run=run, concurrency=1)
            inline = (time.perf_counter() - started) / args.units
        queries_per_judgment = len(queries) / args.units

        # (b') the run machinery in process on as many lanes as a command's --concurrency (evaluate's)
        run = make_run(judge, args.units, "inline")
        started = time.perf_counter()
        run_execute_inline(run=run, concurrency=args.concurrency)
        lanes_rate = args.units / (time.perf_counter() - started)

        # (c) Celery workers
        worker = Worker(args.concurrency)
        try:
            warm = make_run(judge, args.concurrency * 2, "celery")  # workers boot and import Django first
            run_enqueue(run=warm)
            wait_finished(warm, 120)
            run = make_run(judge, args.units, "celery")
            started = time.perf_counter()
            run_enqueue(run=run)
            wait_finished(run, 600)
            celery_wall = time.perf_counter() - started
        finally:
            worker.stop()
    finally:
        fast.stop()

    print("\n1. Overhead per judgment, judge latency zero")
    print(f"   bare client call (HTTP to the fake judge, parse):        {bare * 1000:7.2f} ms")
    print(
        f"   in process, run machinery (claim, record, cache, limit):  {inline * 1000:7.2f} ms  -> overhead "
        f"{(inline - bare) * 1000:6.2f} ms, {queries_per_judgment:.1f} queries"
    )
    print(f"   in process, {args.concurrency} lanes (a command's --concurrency): {lanes_rate:7.1f} judgments/s at zero latency")
    cores = os.cpu_count() or 1
    per_judgment = celery_wall / args.units
    print(f"   Celery, {args.concurrency} worker processes: {args.units / celery_wall:7.1f} judgments/s at zero latency "
          f"-> {per_judgment * 1000:.2f} ms of the whole machine per judgment ({cores} cores: about "
          f"{per_judgment * cores * 1000:.1f} ms of CPU, broker, worker, database and fake judge together)")

    slow = FakeJudgeProcess(latency=0.2)
    try:
        judge = Judge.objects.create(
            name="bench-slow", model="fake-judge", family="scripted", base_url=slow.url, max_concurrency=args.concurrency,
        )
        worker = Worker(args.concurrency)
        try:
            warm = make_run(judge, args.concurrency, "celery")
            run_enqueue(run=warm)
            wait_finished(warm, 120)
            slow.reset()
            run = make_run(judge, args.slow_units, "celery")
            started = time.perf_counter()
            run_enqueue(run=run)
            wait_finished(run, 600)
            wall = time.perf_counter() - started
        finally:
            worker.stop()
        stats = slow.stats()
    finally:
        slow.stop()
    ideal = args.slow_units * 0.2 / args.concurrency
    mean_concurrency = stats["busy_seconds"] / (stats["last_at"] - stats["first_at"] + 0.2)
    print(f"\n2. Concurrency against the fake judge at 0.2 s latency, {args.slow_units} judgments, limit {args.concurrency}")
    print(f"   wall {wall:.2f} s against the ideal {ideal:.2f} s ({ideal / wall:.0%} of ideal)")
    print(
        f"   achieved concurrency: mean {mean_concurrency:.1f}, max {stats['max_in_flight']} (limit {args.concurrency}); "
        f"{stats['chat_requests']} calls for {args.slow_units} judgments"
    )


if __name__ == "__main__":
    main()
