"""`manage.py evaluate MODE …`: run an evaluation and print its report (CONTRACT §3).

Each mode lives in judgeapp/<mode>/cli.py; the exit status is the mode's (0 pass or conclusive, 1 blocked,
invalid or inconclusive, 2 anything else: bad input, a failed run, a database without tables).
"""

import importlib
import sys

from judgeapp.judging.cli import JudgeCommand

# Each module has `help`, `add_arguments(parser)` and `handle(command, options) -> int` (the exit status);
# imported when the command runs.
EVALUATE_MODES: dict[str, str] = {
    "pointwise": "judgeapp.pointwise.cli",
    "pairwise": "judgeapp.pairwise.cli",
    "jury": "judgeapp.jury.cli",
}


class Command(JudgeCommand):
    help = "Evaluate a system's outputs with LLM judges: " + ", ".join(EVALUATE_MODES) + "."

    def add_arguments(self, parser):
        modes = parser.add_subparsers(dest="mode", required=True, metavar="MODE")
        for name, module_path in EVALUATE_MODES.items():
            module = importlib.import_module(module_path)
            sub = modes.add_parser(name, help=module.help, description=module.help)
            module.add_arguments(sub)

    def handle(self, *args, **options):
        module = importlib.import_module(EVALUATE_MODES[options["mode"]])
        status = module.handle(self, options)
        if status:
            sys.exit(status)
