"""What the queries a run makes once per batch cost as the run grows: the cause of a large run's slower judging.

    .venv/bin/python bench/batch_queries.py [--sizes 10000,100000] [--repeat 200]

For each size: a pointwise run of N units is planned (no judge is called), every unit but the last batch is
marked done, and the statements that run for every batch of judgments are timed (mean of --repeat): whether
the stage has units left (after each recorded batch) and the next pending ids (the CLI's claim). Each is
printed with its query plan. Flat in N means the figures barely change from 10k to 100k.

DATABASE_URL picks the database (default: a fresh SQLite file).
"""

from __future__ import annotations

import argparse
import os
import time

from _setup import setup_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated unit counts")
    parser.add_argument("--repeat", type=int, default=200, help="timings of each statement, averaged")
    args = parser.parse_args()
    where = setup_django()

    from django.conf import settings
    from django.db import connection
    from overhead import make_run

    from judgeapp.judging.runs import run_start
    from judgeapp.models import ACTIVE_UNIT_STATUSES, Judge, Judgment, UnitStatus

    print(f"per-batch queries of a run ({where}, load average {os.getloadavg()[0]:.2f})")
    judge = Judge.objects.create(name="bench-queries", model="fake-judge", family="scripted", base_url="http://127.0.0.1:9/v1")
    for n in (int(s) for s in args.sizes.split(",")):
        run = make_run(judge, n, "inline")
        run_start(run_pk=run.pk)
        last = Judgment.objects.filter(run=run).order_by("-id").values_list("pk", flat=True)[settings.UNIT_BATCH_SIZE - 1]
        Judgment.objects.filter(run=run, pk__lt=last).update(status=UnitStatus.DONE)
        statements = {
            "units left in the stage": lambda: Judgment.objects.filter(
                run=run, stage=0, status__in=ACTIVE_UNIT_STATUSES,
            ).exists(),
            "next pending ids": lambda: list(
                Judgment.objects.filter(run=run, stage=0, status=UnitStatus.PENDING).order_by("id").values_list("pk", flat=True)[
                    : settings.UNIT_BATCH_SIZE
                ]
            ),
        }
        print(f"   {n:>7} units, {settings.UNIT_BATCH_SIZE} left:")
        for name, statement in statements.items():
            statement()
            started = time.perf_counter()
            for _ in range(args.repeat):
                statement()
            mean = (time.perf_counter() - started) / args.repeat
            print(f"      {name:<26} {mean * 1000:8.3f} ms")
        query = Judgment.objects.filter(run=run, stage=0, status__in=ACTIVE_UNIT_STATUSES)[:1].query
        sql, params = query.sql_with_params()
        if connection.vendor == "sqlite":
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
                print("      plan of the first:", "; ".join(row[-1] for row in cursor.fetchall()))


if __name__ == "__main__":
    main()
