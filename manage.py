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
    except Exception as exc:
        _setup_failed(exc)
        raise
    _end(0)


def _setup_failed(exc: Exception) -> None:
    """Settings or apps that cannot load (a production start without SECRET_KEY, a DATABASE_URL of no known
    database): one line and exit 2, as a judgeapp command's own errors are (judgeapp/judging/cli.py), not a
    traceback. An error of a command that did start (one of Django's) keeps its traceback, and so does any
    with JUDGEAPP_TRACEBACK=1."""
    from django.apps import apps

    if apps.ready or os.environ.get("JUDGEAPP_TRACEBACK"):
        return
    reason = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    sys.stderr.write(f"error: the settings cannot be loaded: {reason}\n")
    sys.exit(2)


def _end(status) -> None:
    """A judgeapp command's process ends at once with its status, without the interpreter's teardown of every
    module it loaded (judgeapp/judging/cli.py: exit_at_once); any other command ends the usual way."""
    cli = sys.modules.get("judgeapp.judging.cli")
    if cli is not None and cli.JudgeCommand.process_ends_at_once:
        cli.exit_at_once(status)


if __name__ == "__main__":
    main()
