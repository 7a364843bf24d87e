"""Agent-as-a-Judge speed: the sandbox, the tools, and whole runs through the fake judge server.

    .venv/bin/python bench/agent_judge.py [--requirements 40] [--concurrency 4] [--runs 20]

Uses a throw-away database and DATA_DIR (nothing of yours is touched) and the scripted fake judge over
real HTTP, so the figures are the app's own overhead: sandbox start-up, tool calls, the run machinery.
"""

import argparse
import atexit
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
scratch = Path(tempfile.mkdtemp(prefix="judgeapp-bench-agent-"))
atexit.register(shutil.rmtree, scratch, True)
os.environ.update({
    "DJANGO_SETTINGS_MODULE": "judgeapp.settings",
    "DATABASE_URL": f"sqlite:///{scratch / 'bench.sqlite3'}",
    "DATA_DIR": str(scratch / "data"),
    "JUDGES_FILE": str(scratch / "judges.toml"),
    "JUDGE_MODEL": "",
    "LOG_LEVEL": "ERROR",
})

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from fakejudge import DemoBrain, FakeJudgeServer  # noqa: E402
from judgeapp.agent.core import Sandbox, SandboxLimits, ToolBox, Workspace, sandbox_status  # noqa: E402
from judgeapp.agent.services import agent_inputs_read, agent_run_create  # noqa: E402
from judgeapp.judging.runs import run_execute_inline  # noqa: E402
from judgeapp.models import Executor, Judge  # noqa: E402


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def make_workspace(root: Path, files: int) -> Path:
    (root / "out").mkdir(parents=True)
    (root / "train.py").write_text("print('test accuracy: 0.93')\n")
    (root / "out" / "metrics.json").write_text('{"accuracy": 0.93}\n')
    for i in range(files):
        (root / f"src/module_{i:04d}.py").parent.mkdir(exist_ok=True)
        (root / f"src/module_{i:04d}.py").write_text(
            "".join(f"def f{j}(x):\n    return x * {j}  # accuracy\n" for j in range(50))
        )
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requirements", type=int, default=40, help="requirements in the whole-run figure")
    parser.add_argument("--concurrency", type=int, default=4, help="requirements judged at once")
    parser.add_argument("--runs", type=int, default=20, help="sandbox runs for the latency figure")
    parser.add_argument("--files", type=int, default=500, help="source files in the workspace for the tool figures")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    workspace = make_workspace(scratch / "ws", args.files)
    print(f"workspace: {args.files + 2} files")

    started = time.perf_counter()
    status = sandbox_status()
    print(f"sandbox probe: {(time.perf_counter() - started) * 1000:.0f} ms -> {status.mode or 'unavailable: ' + status.reason}")
    toolbox = ToolBox(Workspace(workspace), None, Sandbox(SandboxLimits()) if status.available else None)
    if status.available:
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            record = toolbox.call("run_file", {"path": "train.py"})
            times.append(time.perf_counter() - t)
            assert "exit code 0" in record.output, record.output
        print(f"run_file (copy {args.files + 2} files, namespaces, python3, clean-up): "
              f"p50 {statistics.median(times) * 1000:.0f} ms, p95 {percentile(times, 0.95) * 1000:.0f} ms over {args.runs} runs")
    for name, arguments in [
        ("read_file", {"path": "src/module_0001.py"}), ("list_files", {}), ("search", {"query": "return x * 49"}),
    ]:
        times = []
        for _ in range(20):
            t = time.perf_counter()
            toolbox.call(name, arguments)
            times.append(time.perf_counter() - t)
        print(f"{name}: p50 {statistics.median(times) * 1000:.1f} ms")

    checklist = "".join(
        f"{i}. writes the metrics to out/metrics.json with an \"accuracy\" key (check {i})\n"
        for i in range(1, args.requirements + 1)
    )
    with FakeJudgeServer(DemoBrain()) as server:
        judge = Judge.objects.create(
            name="bench", model="fake-judge", family="scripted", base_url=server.url, max_concurrency=args.concurrency,
        )
        inputs = agent_inputs_read(
            task=b"Write the metrics.", task_name="task.md", requirements=checklist.encode(), requirements_name="r.md",
        )
        for label in ("cold (judge called)", "warm (response cache)"):
            run = agent_run_create(inputs=inputs, workspace=workspace, judge=judge, executor=Executor.INLINE)
            before = len(server.chat_requests)
            t = time.perf_counter()
            run = run_execute_inline(run=run, concurrency=args.concurrency)
            elapsed = time.perf_counter() - t
            run.refresh_from_db()
            calls = len(server.chat_requests) - before
            print(f"whole run, {label}: {args.requirements} requirements in {elapsed:.2f} s "
                  f"({args.requirements / elapsed:.1f}/s, concurrency {args.concurrency}), {calls} judge calls, "
                  f"met {run.report['counts']['met']}/{args.requirements}")


if __name__ == "__main__":
    main()
