"""The report of a large pointwise run: how long finalizing takes, and the first and later views of its page.

    .venv/bin/python bench/report.py [--cases 10000]

A pointwise run of N cases x 1 criterion is planned, its units are marked judged (scores 1-5, no judge
called: this measures the report, not the judging), and the run is finalized (`run_advance`: the report is
computed and stored). Then a fresh process loads judgeapp.wsgi as the web server does when it starts (nothing
else warmed), signs in and GETs the run's page three times: the first view is the figure that matters.

DATABASE_URL picks the database (default: a fresh SQLite file).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid

from _setup import ROOT, RUBRIC, setup_django, testset_bytes

VIEW = r"""
import json, os, sys, time
t0 = time.perf_counter()
import judgeapp.wsgi  # what the web server (gunicorn judgeapp.wsgi, runserver) loads when it starts
from django.contrib.auth.models import User
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.db import connection
user = User.objects.get(username="bench-reader")
client = Client()
client.force_login(user)
setup = time.perf_counter() - t0
views = []
for _ in range(3):
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        response = client.get(f"/runs/{sys.argv[1]}/", HTTP_HOST="localhost")
        views.append((time.perf_counter() - started, len(queries), response.status_code, len(response.content)))
print(json.dumps({"setup": setup, "views": views}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=10_000, help="judgments in the run")
    args = parser.parse_args()
    where = setup_django()

    from django.contrib.auth.models import Group, User
    from django.urls import reverse

    from judgeapp.judging.content import prompt_register, rubric_store, testset_store
    from judgeapp.judging.runs import run_advance, run_create, run_start
    from judgeapp.models import Executor, Judge, Judgment, Run, RunKind, UnitStatus

    judge = Judge.objects.create(name="bench-report", model="fake-judge", family="scripted", base_url="http://127.0.0.1:9/v1")
    nonce = uuid.uuid4().hex[:8]
    run = run_create(
        kind=RunKind.POINTWISE,
        executor=Executor.INLINE,
        judge=judge,
        testset=testset_store(data=testset_bytes(args.cases, nonce), name=f"bench-{nonce}.jsonl"),
        rubric=rubric_store(data=RUBRIC, name="bench.toml"),
        prompt=prompt_register(prompt="pointwise"),
    )
    run_start(run_pk=run.pk)
    units = list(Judgment.objects.filter(run=run).order_by("id"))
    for i, unit in enumerate(units):
        score = 1 + (i * 7) % 5
        unit.status = UnitStatus.DONE
        unit.parsed = {"score": score, "reasoning": f"reasoning for case {i}: the reply scores {score}."}
        unit.raw_reply = json.dumps(unit.parsed)
        unit.messages = [{"role": "user", "content": f"prompt {i}"}]
    Judgment.objects.bulk_update(units, ["status", "parsed", "raw_reply", "messages"], batch_size=500)
    Run.objects.filter(pk=run.pk).update(done_units=len(units))

    started = time.perf_counter()
    run_advance(run_pk=run.pk)
    finalize = time.perf_counter() - started
    run.refresh_from_db()
    assert run.status in ("done", "invalid"), (run.status, run.error)

    reader, _ = User.objects.get_or_create(username="bench-reader")
    reader.groups.add(Group.objects.get_or_create(name="reviewer")[0])
    assert reverse("run_detail", args=[run.run_id]) == f"/runs/{run.run_id}/"

    env = os.environ | {"DJANGO_ALLOWED_HOSTS": "localhost"}
    done = subprocess.run([sys.executable, "-c", VIEW, run.run_id], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    figures = json.loads(done.stdout.strip().splitlines()[-1])

    print(f"report of a {len(units)}-judgment pointwise run ({where}; load average {os.getloadavg()[0]:.2f})")
    print(f"   finalize (report computed and stored once): {finalize * 1000:8.1f} ms")
    print(f"   a fresh web process: judgeapp.wsgi loaded and signed in in {figures['setup'] * 1000:.0f} ms, then")
    for label, (seconds, queries, status, size) in zip(("first view", "second view", "third view"), figures["views"]):
        print(f"   {label:<12} of the run page: {seconds * 1000:8.1f} ms, {queries} queries (HTTP {status}, {size // 1024} KiB)")


if __name__ == "__main__":
    main()
