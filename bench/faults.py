"""What a run survives: one service fault at a time, against PostgreSQL, a private Redis broker and real
Celery worker processes, and what each fault cost the run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> .venv/bin/python bench/faults.py \\
        [--fault all|database|broker|stream|cases|create] [--units 200] [--cases 100000] [--concurrency 8] [--timeout 120]

1. database: the workers reach PostgreSQL through a TCP proxy (tests/helpers.py TcpProxy) which, when the
   run is 30% done, closes every connection and refuses new ones for 10 s.
2. broker: the private redis-server (no persistence) is SIGKILLed when the run is 30% done and started again
   on the same port 8 s later, empty.
3. stream: a judge that answers 200 and streams a body that never ends (fakejudge.StreamForever), judge
   timeout 2 s, one unit per pool process; then a 10-case run on a healthy judge. The judge is reached
   through the proxy, which times every call (each gets a connection of its own: the client drops it).
4. cases: a run of --cases cases (default 100,000; the issue's figure is 1,000,000) on a zero-latency judge:
   seconds to its first judgment, seconds a 10-case run started behind it takes, the workers' peak memory.
5. create: a run started over the HTTP API (Django's test client, in this process) while the broker is
   down: the answer's status; then the broker starts and the run should start and finish.

One line per fault:
- lost: units not done or failed when the run ended (or at the timeout);
- judged twice: prompts the fake judge was asked afresh more than once (a parse retry is not a fresh ask);
- paid twice: calls beyond one per prompt;
- against judge: failed units with no reply from the judge (the report counts them against it) although
  the judge was healthy;
- moved: seconds from the service's return until the run recorded a unit again (create: until it started;
  stream: until the run behind it recorded its first unit; cases: until the first judgment);
- status of the run at the end, wall seconds of the scenario's run.
The fake judge answers in 0.2 s (1, 2, 3, 5). A run that does not finish within --timeout of the service's
return is cancelled so that the next fault starts clean. Every fault has a redis-server of its own.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from _setup import RUBRIC, FakeJudgeProcess, peak_above, setup_django, testset_bytes

FAULTS = ("database", "broker", "stream", "cases", "create")
COLUMNS = (
    f"{'fault':<34} {'units':>7} {'lost':>6} {'judged2x':>8} {'paid2x':>7} {'vs judge':>8} {'moved s':>8} {'status':>10} "
    f"{'wall s':>7}  notes"
)
LOGS = Path(tempfile.mkdtemp(prefix="judgeapp-faults-"))


def line(fault: str, *, units, lost="-", twice="-", paid="-", against="-", moved=None, status="-", wall=None, notes="") -> None:
    moved_text = "never" if moved is None else f"{moved:.1f}"
    wall_text = "-" if wall is None else f"{wall:.1f}"
    print(
        f"{fault:<34} {units!s:>7} {lost!s:>6} {twice!s:>8} {paid!s:>7} {against!s:>8} {moved_text:>8} {status:>10} "
        f"{wall_text:>7}  {notes}",
        flush=True,
    )


def url_with_port(url: str, port: int) -> str:
    parts = urlsplit(url)
    auth = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return urlunsplit(parts._replace(netloc=f"{auth}127.0.0.1:{port}"))


class Scenario:
    """What every fault needs: a private redis-server this process sends to, fake judges, worker processes,
    all stopped at the end whatever happened."""

    def __init__(self, name: str, args):
        from tests.helpers import RedisServer, celery_broker

        self.name, self.args = name, args
        self.stack = ExitStack()  # what close() stops, last started first
        self.redis = RedisServer().start()
        self.stack.callback(self.redis.stop)
        self.stack.enter_context(celery_broker(self.redis.url))
        self.workers: list = []
        self.runs: list[int] = []

    def judge_server(self, action=None, latency: float = 0.2):
        from fakejudge import DemoBrain, FakeJudgeServer

        return self.stack.enter_context(FakeJudgeServer(action or DemoBrain(), latency=latency))

    def judge(self, url: str, **fields):
        from judgeapp.models import Judge

        return Judge.objects.create(
            name=f"faults-{self.name}-{uuid.uuid4().hex[:6]}", model="fake-judge", family="scripted", base_url=url,
            max_concurrency=fields.pop("max_concurrency", self.args.concurrency),
            timeout_seconds=fields.pop("timeout_seconds", 10.0), **fields,
        )

    def worker(self, database_url: str | None = None):
        from tests.helpers import WorkerProcess

        env = {**os.environ, "CELERY_BROKER_URL": self.redis.url, "DATABASE_URL": database_url or os.environ["DATABASE_URL"]}
        worker = WorkerProcess(
            env, self.args.concurrency, LOGS / f"{self.name}-{len(self.workers)}.log", settings="judgeapp.settings",
        )
        worker.start()
        self.workers.append(worker)
        return worker

    def run(self, judge, n: int, *, start: bool = True):
        from judgeapp.judging.content import prompt_register, rubric_store, testset_store
        from judgeapp.judging.runs import run_create, run_enqueue
        from judgeapp.models import RunKind

        nonce = uuid.uuid4().hex[:8]
        run = run_create(
            kind=RunKind.POINTWISE, executor="celery", judge=judge,
            testset=testset_store(data=testset_bytes(n, nonce), name=f"faults-{nonce}.jsonl"),
            rubric=rubric_store(data=RUBRIC, name="faults.toml"), prompt=prompt_register(prompt="pointwise"),
        )
        self.runs.append(run.pk)
        if start:
            run_enqueue(run=run)  # outside a transaction: sent now
        return run

    def close(self) -> None:
        from judgeapp.judging.audit import SYSTEM
        from judgeapp.judging.runs import run_cancel
        from judgeapp.models import Run

        for run in Run.objects.filter(pk__in=self.runs):
            run_cancel(run=run, actor=SYSTEM, reason="bench/faults.py: scenario over")
        for worker in self.workers:
            if worker.proc is not None and worker.proc.poll() is None:
                worker.kill()
        try:
            self.stack.close()
        except Exception as exc:  # noqa: BLE001 - a stop that fails must not keep the next fault from running
            print(f"   (stopping {self.name}: {type(exc).__name__}: {exc})", file=sys.stderr)


def wait_done_share(run_pk: int, units: int, share: float, timeout: float) -> None:
    """Until `share` of the run's `units` are done or failed."""
    from tests.helpers import run_state, units_finished, wait_for

    wait_for(lambda: units_finished(run_pk) >= share * units, timeout, message=f"the run to be {share:.0%} done",
             explain=lambda: run_state(run_pk))


def wait_finished(run_pk: int, until: float) -> bool:
    from judgeapp.models import Run

    while time.monotonic() < until:
        if Run.objects.get(pk=run_pk).is_finished:
            return True
        time.sleep(0.1)
    return False


def lost_where(run_pk: int) -> str:
    """Where a run's unfinished units are: pending, or claimed (and how far ahead their leases run)."""
    from django.db.models import Max
    from django.utils import timezone

    from judgeapp.models import Judgment, UnitStatus

    units = Judgment.objects.filter(run_id=run_pk)
    pending = units.filter(status=UnitStatus.PENDING).count()
    claimed = units.filter(status=UnitStatus.CLAIMED)
    lease = claimed.aggregate(last=Max("lease_expires_at"))["last"]
    ahead = f" (leases up to {(lease - timezone.now()).total_seconds() / 60:.0f} min ahead)" if lease else ""
    return f"{pending} pending, {claimed.count()} claimed{ahead}"


def service_fault(s: Scenario, fault: str, *, label: str, database_url: str | None, inject, proxy=None) -> None:
    """The run of --units on a 0.2 s judge; `inject()` at 30% takes the service away and returns the moment
    (monotonic) it came back."""
    from tests.helpers import judge_tally, moved_again, run_fault_tally

    args = s.args
    server = s.judge_server()
    judge = s.judge(server.url)
    s.worker(database_url)
    run = s.run(judge, args.units)
    started = time.monotonic()
    wait_done_share(run.pk, args.units, 0.3, args.timeout)
    back = inject()
    moved = moved_again(run.pk, since=back, timeout=args.timeout)
    finished = wait_finished(run.pk, back + args.timeout)
    wall = time.monotonic() - started
    tally, calls = run_fault_tally(run.pk, units=args.units), judge_tally(server.chat_requests)
    notes = f"{tally['failed']} failed" + (f" ({tally['example_error']})" if tally["failed"] else "")
    if not finished:
        notes += f"; not finished {args.timeout:g} s after the service's return: {lost_where(run.pk)}"
    line(label, units=args.units, lost=tally["lost"], twice=calls["judged_twice"], paid=calls["paid_twice"],
         against=tally["against_judge"], moved=moved, status=tally["status"], wall=wall, notes=notes)


def fault_database(s: Scenario) -> None:
    from django.conf import settings

    from tests.helpers import TcpProxy

    db = settings.DATABASES["default"]
    proxy = s.stack.enter_context(TcpProxy(int(db.get("PORT") or 5432), db.get("HOST") or "127.0.0.1"))

    def inject() -> float:
        proxy.refuse(10)
        return proxy.wait_back(30)

    service_fault(s, "database", label="database refuses connections 10 s",
                  database_url=url_with_port(os.environ["DATABASE_URL"], proxy.port), inject=inject)


def fault_broker(s: Scenario) -> None:
    def inject() -> float:
        s.redis.kill()
        time.sleep(8)
        s.redis.start()
        return time.monotonic()

    service_fault(s, "broker", label="broker killed, back after 8 s", database_url=None, inject=inject)


def fault_stream(s: Scenario) -> None:
    try:
        from fakejudge import StreamForever
    except ImportError:
        line("judge streams forever (timeout 2 s)", units="-", notes="skipped: needs fakejudge.StreamForever")
        return
    from judgeapp.models import Run
    from tests.helpers import TcpProxy, run_fault_tally, units_finished, wait_for

    args = s.args
    streaming = s.judge_server(StreamForever(), latency=0.0)
    proxy = s.stack.enter_context(TcpProxy(streaming.port))
    stuck = s.judge(f"http://127.0.0.1:{proxy.port}/v1", timeout_seconds=2.0)
    healthy = s.judge(s.judge_server().url)
    s.worker()
    n = args.concurrency  # one unit per pool process: every process is held by the streaming judge
    run = s.run(stuck, n)
    started = time.monotonic()
    wait_for(lambda: len(streaming.chat_requests) >= n, args.timeout, message="every pool process to call the streaming judge")
    behind = s.run(healthy, 10)
    behind_started = time.monotonic()
    first = behind_wall = None
    while time.monotonic() < behind_started + args.timeout:
        if first is None and units_finished(behind.pk):
            first = time.monotonic() - behind_started
        if Run.objects.get(pk=behind.pk).is_finished:
            behind_wall = time.monotonic() - behind_started
            break
        time.sleep(0.1)
    wait_finished(run.pk, started + args.timeout)
    wall = time.monotonic() - started
    longest, still_open = proxy.longest_connection()
    tally = run_fault_tally(run.pk, units=n)
    behind_text = f"finished in {behind_wall:.1f} s" if behind_wall is not None else f"not finished in {args.timeout:g} s"
    line("judge streams forever (timeout 2 s)", units=n, lost=tally["lost"], moved=first, status=tally["status"], wall=wall,
         notes=f"longest call {longest:.1f} s{' (still open)' if still_open else ''} against a 2 s deadline, "
               f"{len(streaming.chat_requests)} calls; a 10-case run on a healthy judge started behind it {behind_text}")


def fault_cases(s: Scenario) -> None:
    from judgeapp.judging.content import prompt_register, rubric_store, testset_store
    from judgeapp.judging.runs import run_create, run_enqueue
    from judgeapp.models import Run, RunKind
    from tests.helpers import units_finished

    args = s.args
    fast = FakeJudgeProcess(latency=0.0)
    s.stack.callback(fast.stop)
    judge = s.judge(fast.url)
    worker = s.worker()
    peaks: dict[int, int] = {}  # pid -> VmHWM kB: the highest each worker process reached

    def sample() -> None:
        for pid in [worker.proc.pid, *worker.pool_pids()]:
            try:
                with open(f"/proc/{pid}/status") as f:
                    hwm = next(int(row.split()[1]) for row in f if row.startswith("VmHWM:"))
            except (OSError, StopIteration):
                continue
            peaks[pid] = max(peaks.get(pid, 0), hwm)

    nonce = uuid.uuid4().hex[:8]
    data = ("id,input,output\n" + "".join(f"{i},q{i} {nonce},a\n" for i in range(args.cases))).encode()

    def create():
        return run_create(
            kind=RunKind.POINTWISE, executor="celery", judge=judge,
            testset=testset_store(data=data, name=f"cases-{nonce}.csv"),
            rubric=rubric_store(data=RUBRIC, name="faults.toml"), prompt=prompt_register(prompt="pointwise"),
        )

    try:
        made = peak_above(create)
    except Exception as exc:  # noqa: BLE001 - a refused size is this fault's answer: one line
        line(f"{args.cases:,} cases", units=args.cases, notes=f"not created: {type(exc).__name__}: {str(exc)[:200]}")
        return
    big = made["result"]
    s.runs.append(big.pk)
    run_enqueue(run=big)
    started = time.monotonic()
    first = None
    while time.monotonic() < started + args.timeout:
        sample()
        if Run.objects.filter(pk=big.pk, done_units__gt=0).exists() or Run.objects.get(pk=big.pk).is_finished:
            first = time.monotonic() - started
            break
        time.sleep(0.5)
    small = s.run(judge, 10)
    small_started = time.monotonic()
    small_wall = None
    while time.monotonic() < small_started + args.timeout:
        sample()
        if Run.objects.get(pk=small.pk).is_finished:
            small_wall = time.monotonic() - small_started
            break
        time.sleep(0.2)
    sample()
    big = Run.objects.get(pk=big.pk)
    planned = big.total_units
    done = units_finished(big.pk)
    largest = max(peaks.values(), default=0)
    first_text = f"first judgment after {first:.1f} s" if first is not None else f"no judgment in {args.timeout:g} s"
    small_text = f"{small_wall:.1f} s" if small_wall is not None else f"not finished in {args.timeout:g} s"
    line(f"{args.cases:,} cases", units=args.cases, moved=first, status=big.status, wall=time.monotonic() - started,
         notes=f"{first_text} ({planned:,} planned, {done:,} judged by the end); a 10-case run started behind it: {small_text}; "
               f"workers' peak RSS: largest of {len(peaks)} processes {largest / 1024:.0f} MB; "
               f"storing and creating the run in this process (as the API does): +{made['peak_above_kib'] / 1024:.0f} MB, "
               f"{made['seconds']:.1f} s")


def fault_create(s: Scenario) -> None:
    from django.conf import settings
    from django.contrib.auth.models import Group, User
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    from judgeapp.api.services import api_token_create
    from judgeapp.models import Run
    from tests.helpers import judge_tally, run_fault_tally, units_finished

    args = s.args
    server = s.judge_server()
    judge = s.judge(server.url)
    s.worker()
    warm = s.run(judge, args.concurrency)  # the worker is connected to the broker and has judged
    if not wait_finished(warm.pk, time.monotonic() + args.timeout):
        line("broker down at create", units=args.units, notes="the warm-up run did not finish")
        return
    server.reset()
    user = User.objects.create_user(username=f"faults-{uuid.uuid4().hex[:8]}")
    user.groups.add(Group.objects.get_or_create(name="reviewer")[0])
    token = api_token_create(user=user, name="faults")[1]
    if "testserver" not in settings.ALLOWED_HOSTS and "*" not in settings.ALLOWED_HOSTS:
        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    title = f"faults-create-{uuid.uuid4().hex[:8]}"
    s.redis.kill()
    client = Client(raise_request_exception=False)
    asked = time.monotonic()
    response = client.post(
        "/api/v1/runs/pointwise",
        {"testset": SimpleUploadedFile("cases.jsonl", testset_bytes(args.units, title)),
         "rubric": SimpleUploadedFile("rubric.toml", RUBRIC), "judge": judge.name, "title": title},
        headers={"Authorization": f"Bearer {token}"},
    )
    answered = time.monotonic() - asked
    s.redis.start()
    back = time.monotonic()
    run = Run.objects.filter(title=title).first()
    answer = f"POST answered {response.status_code} in {answered:.1f} s"
    if run is None:
        line("broker down at create", units=args.units, lost=args.units, status="none", notes=f"{answer}; no run was kept")
        return
    s.runs.append(run.pk)
    started = None
    while time.monotonic() < back + args.timeout:
        if Run.objects.get(pk=run.pk).status != "queued":
            started = time.monotonic() - back
            break
        time.sleep(0.1)
    finished = wait_finished(run.pk, back + args.timeout)
    finished_after = time.monotonic() - back
    tally, calls = run_fault_tally(run.pk, units=args.units), judge_tally(server.chat_requests)
    done_text = (
        f"finished {finished_after:.1f} s after the broker's return" if finished else f"not finished {args.timeout:g} s after "
        f"the broker's return ({units_finished(run.pk)} units)"
    )
    line("broker down at create", units=args.units, lost=tally["lost"], twice=calls["judged_twice"], paid=calls["paid_twice"],
         against=tally["against_judge"], moved=started, status=tally["status"], wall=finished_after,
         notes=f"{answer} (want 202); started {'never' if started is None else f'{started:.1f} s'} after the broker's return, "
         f"{done_text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fault", choices=("all", *FAULTS), default="all", help="one fault, or all in turn")
    parser.add_argument("--units", type=int, default=200, help="units of the run a fault hits (database, broker, create)")
    parser.add_argument("--cases", type=int, default=100_000, help="cases of the large run (the issue's is 1,000,000)")
    parser.add_argument("--concurrency", type=int, default=8, help="worker processes and the judge's max_concurrency")
    parser.add_argument("--timeout", type=float, default=120, help="seconds to wait for a run after the service's return")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        raise SystemExit("bench/faults.py needs PostgreSQL: set DATABASE_URL=postgres://user@host:port/database")
    os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:1/0")  # replaced by each fault's own redis-server
    try:
        where = setup_django()
    except Exception as exc:  # noqa: BLE001 - a database that is missing or out of reach: one line, not a traceback
        raise SystemExit(f"bench/faults.py: the database cannot be used: {' '.join(str(exc).split())[:300]}") from None
    print(
        f"judgeapp fault bench ({where}: a private redis-server per fault; {args.concurrency} worker processes; logs in {LOGS})"
    )
    print(COLUMNS, flush=True)
    for fault in FAULTS if args.fault == "all" else (args.fault,):
        scenario = Scenario(fault, args)
        try:
            globals()[f"fault_{fault}"](scenario)
        except Exception as exc:  # noqa: BLE001 - one fault's harness failing must not hide the others'
            line(fault, units="-", notes=f"harness error: {type(exc).__name__}: {str(exc)[:600]}")
        finally:
            scenario.close()


if __name__ == "__main__":
    main()
