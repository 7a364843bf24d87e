"""Subcommands of `manage.py evaluate`: one module per mode, each with `help`, `add_arguments(parser)`
and `handle(command, options) -> int` (the exit status). Register a module in EVALUATE_MODES."""

EVALUATE_MODES: dict[str, str] = {
    # name -> module path, imported when the command runs
    "pointwise": "judgeapp.pointwise.cli",
    "pairwise": "judgeapp.pairwise.cli",
    "jury": "judgeapp.jury.cli",
}
