"""Start-up time of every command: `manage.py <command> --help`, `manage.py gate RUN_ID` and `manage.py check`.

    .venv/bin/python bench/startup.py [--repeat 3] [--heavy]

Each command runs `--repeat` times in a fresh interpreter; the best wall time is printed (the machine is
shared: the best run is the one least disturbed by other processes). `--heavy` also lists, per command,
which of the heavy libraries (scipy, openai, sklearn, pandas, numba, ppi_py, numpy) the command imported.

DATABASE_URL picks the database `gate` reads (default: a fresh SQLite file with one finished run).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("scipy", "openai", "sklearn", "pandas", "numba", "ppi_py", "numpy")


def commands() -> list[str]:
    names = sorted(p.stem for p in (ROOT / "judgeapp/management/commands").glob("*.py") if not p.stem.startswith("_"))
    return names


def timed(argv: list[str], env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run; CPU (user + system) is what a loaded machine disturbs least."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def heavy_imports(argv: list[str], env: dict) -> list[str]:
    probe = (
        "import sys, runpy; sys.argv = ['manage.py', *sys.argv[1:]]\n"
        "try:\n    runpy.run_path('manage.py', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.__stderr__)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, *argv], cwd=ROOT, env=env, capture_output=True, text=True)
    return [m for m in done.stderr.strip().splitlines()[-1].split(",") if m] if done.stderr.strip() else []


def gate_run(env: dict) -> str:
    """A finished pointwise run in the scratch database, for `gate RUN_ID`."""
    script = (
        "import django; django.setup()\n"
        "from django.core.management import call_command; call_command('migrate', verbosity=0)\n"
        "from judgeapp.models import Run, RunKind, RunStatus, Executor\n"
        "Run.objects.create(run_id='startup-bench', kind=RunKind.POINTWISE, executor=Executor.INLINE, status=RunStatus.DONE,"
        " config={}, versions={}, report={'run_id': 'startup-bench', 'kind': 'pointwise', 'invalid': False})\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True)
    return "startup-bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the best is printed")
    parser.add_argument("--heavy", action="store_true", help="also list the heavy libraries each command imports")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="judgeapp-bench-startup-"))
    env = os.environ.copy()
    env.setdefault("DATA_DIR", str(scratch / "data"))
    env.setdefault("DATABASE_URL", f"sqlite:///{scratch / 'bench.sqlite3'}")
    env.setdefault("DJANGO_SETTINGS_MODULE", "judgeapp.settings")
    env["JUDGES_FILE"] = str(scratch / "none.toml")
    # As on a developer's machine: compiled modules are cached in __pycache__ (the first run below writes
    # them). With PYTHONDONTWRITEBYTECODE every start compiles the project's modules again (about 0.7 s here).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    run_id = gate_run(env)

    cases = [["check"], ["gate", run_id], *[[name, "--help"] for name in commands()], ["evaluate", "pointwise", "--help"]]
    timed(["help"], env)  # writes the bytecode cache
    print(f"start-up, best of {args.repeat} (load average {os.getloadavg()[0]:.2f}): wall and CPU seconds")
    worst = 0.0
    for argv in cases:
        runs = [timed(argv, env) for _ in range(args.repeat)]
        wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
        if argv != ["check"]:
            worst = max(worst, wall)
        line = f"   manage.py {' '.join(argv):<40} {wall:5.2f} s wall  {cpu:5.2f} s CPU"
        if args.heavy:
            line += "   imports: " + (", ".join(heavy_imports(argv, env)) or "none of " + "/".join(HEAVY))
        print(line)
    print(f"slowest of gate and the --help commands: {worst:.2f} s")


if __name__ == "__main__":
    main()
