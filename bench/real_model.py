"""Benchmark: every mode on a real model, llama.cpp's OpenAI-compatible server on SmolLM2-135M-Instruct
(the venv scripts/real-model.sh builds), json_object structured output, the few cases of
tests/realmodel/scenarios.py, through the same commands a user runs, on a fresh SQLite database.

    scripts/real-model.sh                 # once: builds the venv (about 5 minutes on 2 cores)
    .venv/bin/python bench/real_model.py

Prints, per mode: wall time, units, parsed / parse failures / truncated / no reply, the run's status and the
command's exit code.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._setup import setup_django  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="", help="comma-separated modes (default all)")
    args = parser.parse_args()
    description = setup_django()
    import os

    from tests.realmodel.scenarios import MODES, judges_toml, mode_run, write_inputs
    from tests.realmodel.server import LlamaServer, realmodel_venv, venv_ready

    venv = realmodel_venv()
    if not venv_ready(venv):
        print(f"no real-model venv at {venv}: run scripts/real-model.sh first", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="judgeapp-realmodel-"))
    started = time.monotonic()
    with LlamaServer(venv, log=root / "llama-server.log") as server:
        startup = time.monotonic() - started
        judges_file = root / "judges.toml"
        judges_file.write_text(judges_toml(server.base_url, server.model))
        from django.conf import settings

        settings.JUDGES_FILE = str(judges_file)
        os.environ["JUDGES_FILE"] = str(judges_file)
        write_inputs(root)
        modes = [m for m in args.modes.split(",") if m] or list(MODES)
        print(
            f"Real model: {server.model} (SmolLM2-135M-Instruct GGUF) on llama-cpp-python's server, started in {startup:.1f}s; "
            f"{description}"
        )
        print(
            f"{'mode':<22}{'wall s':>8}{'units':>7}{'parsed':>8}{'failed':>8}{'trunc.':>8}{'no reply':>10}  "
            f"{'status':<9}{'exit':>5}"
        )
        for mode in modes:
            outcome = mode_run(mode, root)
            c = outcome.counts
            cell = lambda key: str(c.get(key, "—"))  # noqa: E731
            print(f"{mode:<22}{outcome.seconds:>8.1f}{cell('units'):>7}{cell('parsed'):>8}{cell('parse_failures'):>8}"
                  f"{cell('truncated'):>8}{cell('no_reply'):>10}  {outcome.status or '—':<9}{outcome.result.code:>5}")
            if outcome.result.code not in (0, 1) or not outcome.run_id:
                print(f"    stderr: {outcome.result.err.strip()[:300]}")
    print(f"Total wall time {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
