#!/usr/bin/env python
"""Django's command-line utility for judgeapp."""
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "judgeapp.settings")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except SystemExit as exc:
        _end(exc.code)
        raise
    _end(0)


def _end(status) -> None:
    """A judgeapp command's process ends at once with its status, without the interpreter's teardown of every
    module it loaded (judgeapp/judging/cli.py: exit_at_once); any other command ends the usual way."""
    cli = sys.modules.get("judgeapp.judging.cli")
    if cli is not None and cli.JudgeCommand.process_ends_at_once:
        cli.exit_at_once(status)


if __name__ == "__main__":
    main()
