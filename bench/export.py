"""Memory and time of the judgments' CSV export of a large pointwise run, alone.

    .venv/bin/python bench/export.py [--sizes 10000,100000] [--text-bytes 2500]

For each size, one process stores a finished pointwise run of N cases x 1 criterion (planned by the app's
own run_start, then every unit marked judged in one UPDATE) whose case input, reply and judge reasoning
together are about --text-bytes per judgment, as real ones are. Then a fresh process, with Django set up
and nothing else read, exports the CSV twice, each time measuring its own peak resident memory above
what the process held before (the kernel's high-water mark, reset first: /proc/self/clear_refs):
`evaluate --csv`'s path (write_text_atomic of the export) and the export page (GET
/pointwise/runs/<id>/report.csv through Django's test client, its body read and dropped as a browser
would save it). Flat in N means the export holds a page of rows, not the run.

DATABASE_URL picks the database (default: a fresh SQLite file per size).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from _setup import child, fresh_database_env

HERE = Path(__file__).resolve().parent

BUILD = r"""
import sys
sys.path.insert(0, sys.argv[3])
from _setup import setup_django
setup_django()
from django.db.models import Value
from django.db.models.functions import Concat
from overhead import make_run
from judgeapp.judging import runs
from judgeapp.models import Case, Judge, Output
n, text_bytes = int(sys.argv[1]), int(sys.argv[2])
judge = Judge.objects.create(name="bench-export", model="fake-judge", family="scripted", base_url="http://127.0.0.1:9/v1")
run = make_run(judge, n, "inline")
runs.run_start(run_pk=run.pk)
third = "x" * (text_bytes // 3)
Case.objects.filter(testset=run.testset).update(input=Concat("input", Value(" " + third)))
Output.objects.filter(run=run).update(text=Concat("text", Value(" " + third)))
run.judgments.update(status="done", parsed={"score": 4, "reasoning": "The reply solves it. " + third}, latency_ms=812, attempts=1)
run.status = "done"
run.save(update_fields=["status"])
print(run.run_id)
"""

MEASURE = r"""
import json, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from _setup import peak_above, setup_django
setup_django()
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from judgeapp.judging.atomic import write_text_atomic
from judgeapp.models import Run
from judgeapp.pointwise import services
from judgeapp.roles import Role

run = Run.objects.get(run_id=sys.argv[1])
user = get_user_model().objects.create_user("bench-reader")
from django.contrib.auth.models import Group
user.groups.add(Group.objects.get_or_create(name=Role.REVIEWER)[0])
client = Client()
client.force_login(user)

def to_file():
    path = Path(tempfile.mkdtemp()) / "judgments.csv"
    write_text_atomic(path, services.judgments_csv_chunks(run=run))
    return path.stat().st_size

def page():
    response = client.get(reverse("pointwise:export", args=[run.run_id, "csv"]))
    assert response.status_code == 200, response.status_code
    if getattr(response, "streaming", False):
        return sum(len(piece) for piece in response.streaming_content)
    return len(response.content)

client.get(reverse("pointwise:export", args=[run.run_id, "none"]))  # loads the URLs, the view and the middleware: a 404
print(json.dumps({"file": peak_above(to_file), "page": peak_above(page)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated case counts")
    parser.add_argument("--text-bytes", type=int, default=2500, help="input + reply + reasoning per judgment")
    args = parser.parse_args()
    print(
        f"CSV export of a finished pointwise run, about {args.text_bytes} bytes of text a judgment (load average "
        f"{os.getloadavg()[0]:.2f})"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        env = fresh_database_env()
        run_id = child(BUILD, str(n), str(args.text_bytes), str(HERE), env=env)
        figures = json.loads(child(MEASURE, run_id, str(HERE), env=env))
        for name, label in (("file", "evaluate --csv (to a file)"), ("page", "the export page")):
            f = figures[name]
            print(
                f"   {n:>7} judgments, {label:<27}: {f['seconds']:6.1f} s, {n / f['seconds']:8.0f} rows/s, "
                f"peak RSS {f['peak_above_kib'] / 1024:7.1f} MiB above the process's, {f['result'] / 2**20:6.1f} MiB of CSV"
            )


if __name__ == "__main__":
    main()
