"""Memory and time of finalizing a large pairwise or jury run: the report alone.

    .venv/bin/python bench/report_memory.py [--kinds pairwise,jury] [--sizes 10000,50000] [--text-bytes 1000]

For each kind and size, one process stores a run of N inputs (pairwise: two versions' replies from files;
jury: a panel of three jurors of three families), plans it with the app's own run_start, and marks every
unit judged in one UPDATE, with a prompt of the size a real one has (the input and the replies judged,
--text-bytes each) and a raw reply. Then a fresh process, with Django set up and nothing else read,
finalizes the run (the handler's `finalize`: the report) and prints its time and its peak resident memory
above what the process held before (the kernel's high-water mark, reset first: /proc/self/clear_refs).

DATABASE_URL picks the database (default: a fresh SQLite file per kind and size).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from _setup import child, fresh_database_env

HERE = Path(__file__).resolve().parent

BUILD = """
import json, sys
sys.path.insert(0, sys.argv[4])
from _setup import setup_django, RUBRIC
setup_django()
from judgeapp.judging import runs
from judgeapp.judging.content import InputFile
from judgeapp.models import Executor, Judge
kind, n, text_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
text = "x" * text_bytes

def jsonl(rows):
    return "\\n".join(json.dumps(row) for row in rows).encode()

def judge(name, family):
    return Judge.objects.create(name=name, model=f"{name}-model", family=family, base_url="http://127.0.0.1:9/v1")

rubric = InputFile(data=RUBRIC, name="bench.toml")
if kind == "pairwise":
    from judgeapp.pairwise.services import VersionSource, pairwise_run_create
    replies = lambda slot: InputFile(data=jsonl({"id": f"c{i:06d}", "output": f"{slot} {i} {text}"} for i in range(n)), \
name=f"{slot}.jsonl")
    run = pairwise_run_create(
        testset=InputFile(data=jsonl({"id": f"c{i:06d}", "input": f"question {i} {text}"} for i in range(n)), name="t.jsonl"),
        rubric=rubric, judge=judge("bench-judge", "qwen"), version_a=VersionSource(outputs=replies("A")),
        version_b=VersionSource(outputs=replies("B")), executor=Executor.INLINE,
    )
    parsed = {"winner": "1", "reasoning": "The first reply answers it. " + text[:300]}
else:
    from judgeapp.jury.services import jury_run_create
    run = jury_run_create(
        testset=InputFile(data=jsonl({"id": f"c{i:06d}", "input": f"question {i} {text}", \
"output": f"reply {i} {text}"} for i in range(n)), name="t.jsonl"),
        rubric=rubric, judges=[judge("juror-a", "meta"), judge("juror-b", "mistral"), judge("juror-c", "google")],
        executor=Executor.INLINE,
    )
    parsed = {"verdict": "pass", "reasoning": "It answers the question. " + text[:300]}
runs.run_start(run_pk=run.pk)
prompt = [{"role": "system", "content": "You are a careful judge."}, {"role": "user", "content": "y" * (3 * text_bytes)}]
run.judgments.update(status="done", parsed=parsed, messages=prompt, raw_reply=json.dumps(parsed), latency_ms=812, attempts=1)
print(run.run_id)
"""

MEASURE = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from _setup import peak_above, setup_django
setup_django()
from judgeapp.judging.runkind import handler_for
from judgeapp.models import Run
run = Run.objects.select_related("judge", "testset", "rubric").get(run_id=sys.argv[1])
handler = handler_for(run.kind)
# What a report imports (statistics, calibration's figures), loaded before the measure: its cost is not N's.
import numpy, scipy.stats, calibration.selectors.agreement, judgeapp.pairwise.core, judgeapp.jury.core  # noqa: E401,F401

measured = peak_above(lambda: handler.finalize(run))
status, report = measured.pop("result")
print(json.dumps({**measured, "status": status, "units": report["counts"]["units"]}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kinds", default="pairwise,jury", help="comma-separated: pairwise, jury")
    parser.add_argument("--sizes", default="10000,50000", help="comma-separated input counts")
    parser.add_argument("--text-bytes", type=int, default=1000, help="the size of an input and of each reply")
    args = parser.parse_args()
    print(f"finalizing a run, inputs and replies of {args.text_bytes} bytes (load average {os.getloadavg()[0]:.2f})")
    for kind in args.kinds.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            env = fresh_database_env()
            run_id = child(BUILD, kind, str(n), str(args.text_bytes), str(HERE), env=env)
            f = json.loads(child(MEASURE, run_id, str(HERE), env=env))
            print(
                f"   {kind:<8} {n:>7} inputs, {f['units']:>7} units: finalize {f['seconds']:6.1f} s, "
                f"peak RSS {f['peak_above_kib'] / 1024:7.1f} MiB above the process's ({f['status']})"
            )


if __name__ == "__main__":
    main()
