"""What every judgeapp command shares (CONTRACT §3), and the helpers of the commands that run an evaluation.

The exit status is one a CI job can trust: 0 passed, 1 blocked or invalid (the command's own verdict), 2
anything else, said in one line on stderr and never a traceback: bad input, a missing judge, a run that
failed (a judge's server that cannot be reached, say), a database without tables or out of reach, an error
nobody expected (`--traceback` or JUDGEAPP_TRACEBACK=1 prints its traceback above the line).

A command loads the judges file when it first looks a judge or a system up (`judge_get`, `system_get`,
`judges_load`: after its input files are checked, so bad input touches no database), so a judge named in
judges.toml is found. SIGTERM, SIGHUP (the terminal closed) and the first Ctrl-C ask the command to stop
(judgeapp/judging/shutdown.py): the judgments in flight finish and are recorded, no new one starts, the
run is marked failed with the reason, and the command exits 128 + the signal's number; a second signal
stops at once. Long work shows a progress bar on a terminal and stays quiet in CI logs.

Each mode's `cli.py` holds its command's arguments and handling; `judgeapp/management/commands/` only
names them for Django.
"""

from __future__ import annotations

import atexit
import os
import re
import signal
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from judgeapp.judging import judges, shutdown
from judgeapp.judging.atomic import json_text, write_text_atomic
from judgeapp.judging.audit import cli_actor
from judgeapp.judging.errors import InputError, disk_full, disk_full_line
from judgeapp.judging.text import argv_problem
from judgeapp.models import Judge, Run, RunStatus, System

if TYPE_CHECKING:
    from tqdm import tqdm

TITLE_MAX = 300  # Run.title


class JudgeCommand(BaseCommand):
    # Django's system checks load every URL, view and form of the app (half a second here) before a command
    # starts; `manage.py check`, the web server and the start script run them, the commands do not.
    requires_system_checks = []
    # Set by commands that start a run, so that a second signal (which does not wait) can mark it.
    current_run = None
    _judges_loaded = False

    # A command's process ends as soon as its work is done and its output flushed (`exit_at_once` below,
    # called by manage.py), without the interpreter tearing down every module it loaded: about a second
    # here after a run, which imported openai, pydantic and scipy (bench/shell.py, "exit"). `up`, which
    # looks after child processes, ends the usual way.
    ends_at_once = True
    # Set when a command ran from the command line; manage.py reads it once the command is over.
    process_ends_at_once = False
    # Django's --traceback: an unexpected error's traceback is printed above its one line.
    traceback_wanted = False

    def run_from_argv(self, argv):
        JudgeCommand.process_ends_at_once = self.ends_at_once
        with shutdown.handled():
            try:
                problem = argv_problem(argv[2:])
                if problem:
                    raise InputError(problem)
                super().run_from_argv(argv)
            except InputError as exc:
                self.stderr.write(f"error: {exc}")
                sys.exit(EXIT_FAILED)
            except shutdown.Interrupted as exc:
                self._mark_interrupted(str(exc))
                self.stderr.write(f"interrupted ({exc}); stopped cleanly")
                sys.exit(exc.exit_status)
            except KeyboardInterrupt:  # SIGINT under a handler other than ours
                self._mark_interrupted("SIGINT")
                self.stderr.write("interrupted (SIGINT); stopped cleanly")
                sys.exit(128 + signal.SIGINT)
            except Exception as exc:  # noqa: BLE001 - CONTRACT §3: whatever went wrong, one line and exit 2
                if self.traceback_wanted or os.environ.get("JUDGEAPP_TRACEBACK"):
                    traceback.print_exc()
                self.stderr.write(f"error: {failure_line(exc)}")
                sys.exit(EXIT_FAILED)

    def execute(self, *args, **options):
        # call_command() (tests, other commands) comes here without run_from_argv: a CommandError (from
        # Django or the argument parser) becomes an InputError, so that run_from_argv prints it as the same
        # one line with exit 2 as our own bad input, and call_command's caller gets an InputError.
        self._judges_loaded = False
        self.traceback_wanted = bool(options.get("traceback"))
        try:
            self.run_id_option_check(options)
            return super().execute(*args, **options)
        except InputError:
            raise
        except CommandError as exc:
            raise InputError(str(exc)) from None

    @staticmethod
    def run_id_option_check(options: dict) -> None:
        """`--run-id ""` (or `gate ""`) is refused: an empty id must not silently mean "a new id"."""
        from judgeapp.judging.runs import run_id_check

        for tag in options.get("tag") or []:
            from judgeapp.judging.tags import tag_name_clean

            tag_name_clean(tag)  # a bad --tag is one line before anything is stored
        title = options.get("title")
        if isinstance(title, str) and len(title) > TITLE_MAX:
            raise InputError(f"--title is {len(title):,} characters long, over the limit of {TITLE_MAX}")
        run_id = options.get("run_id")
        if run_id is None:
            return
        if not run_id.strip():
            raise InputError("the run id is empty: give an id (letters, digits, '.', '_' and '-', at most 100) or leave it out")
        run_id_check(run_id)

    def judges_load(self) -> None:
        """Load the judges file and the default judge from the environment, once per command."""
        if not self._judges_loaded:
            judges.judges_sync(actor=cli_actor())
            self._judges_loaded = True

    def judge_get(self, *, name: str | None = None) -> Judge:
        """The judge called `name` (or the default judge), the judges file loaded first."""
        from judgeapp.judging.preflight import imported_refusal

        self.judges_load()
        judge = judges.judge_get(name=name)
        refusal = imported_refusal([judge])
        if refusal:
            raise InputError(refusal)
        return judge

    def system_get(self, *, name: str) -> System:
        self.judges_load()
        return judges.system_get(name=name)

    def warnings_print(self, warnings) -> None:
        """What the app knows before the run starts (judging/preflight.py), one line each on stderr."""
        for warning in warnings:
            self.stderr.write(f"warning: {warning}")

    def _mark_interrupted(self, signal_name: str) -> None:
        if self.current_run is None:
            return
        from judgeapp.judging.runs import run_interrupt

        run_interrupt(run_pk=self.current_run.pk, signal_name=signal_name)

    def progress_bar(self, *, total: int, desc: str) -> tqdm:
        from tqdm import tqdm  # a run's bar: imported by a command that runs one, not by `gate` or `--help`

        # disable=None: a bar on a terminal, nothing when stderr is not a TTY (CI logs).
        return tqdm(total=total, desc=desc, unit="judgment", disable=None, file=sys.stderr, leave=False)

    def progress_callback(self, bar: tqdm):
        def update(finished: int, total: int) -> None:
            if total and bar.total != total:
                bar.total = total
            bar.n = finished
            bar.refresh()

        return update


# --- Shared by the commands that run an evaluation ---------------------------------------------------


def trials_argument(parser) -> None:
    """`--trials K`, the same on every kind that asks a judge for verdicts (judging/noise.py)."""
    from judgeapp.judging.noise import MAX_TRIALS

    parser.add_argument(
        "--trials", type=int, metavar="K",
        help=f"ask every judgment K times (1-{MAX_TRIALS}, default 1) and report the judge's run-to-run noise; "
        "the verdict used is the trials' majority (a tie: tie or fail) or their mean score",
    )


def tag_argument(parser) -> None:
    """`--tag NAME`, repeatable: tags put on the run, to find it again on the runs page and in the API."""
    parser.add_argument(
        "--tag", action="append", default=[], metavar="NAME",
        help="put this tag on the run (repeat for more): up to 40 of a-z, 0-9, '-' and '_'",
    )


def run_tags_put(run: Run, options: dict) -> None:
    """The run's --tag words, put on it as it is created (they were checked before anything was stored)."""
    if options.get("tag"):
        from judgeapp.judging.tags import run_tags_add

        run_tags_add(run=run, names=options["tag"])


def prompt_argument(parser) -> None:
    """`--prompt NAME[@vN]`, the same on every kind whose prompt the library can replace (judging/library.py)."""
    parser.add_argument(
        "--prompt", metavar="NAME",
        help="the judge prompt: a prompt of the library by name (its latest version) or NAME@vN; "
        "default: the built-in prompt (`manage.py prompts list` shows them)",
    )


def budget_argument(parser, *, flag: str = "--budget") -> None:
    """A spend cap in dollars (judging/costs.py): the run stops at it, invalid, with what was judged."""
    parser.add_argument(
        flag, metavar="USD",
        help="stop the run once its judge calls have cost this many dollars (the judge needs prices in the judges "
        "file); the report then says stopped: budget, with what was judged, and the run is invalid",
    )


def dry_run_argument(parser) -> None:
    parser.add_argument(
        "--dry-run", action="store_true",
        help="print the estimate of judge calls, tokens and cost from the inputs and exit: no judge is asked, nothing is stored",
    )


def estimate_write(command, estimate) -> None:
    """A dry run's answer: the estimate in one line on stdout, and how it was made."""
    command.stdout.write(f"Estimate: {estimate.text}.")
    command.stdout.write(f"  ({estimate.how}; no judge was asked and nothing was stored)")


def usage_write(command, report: dict | None) -> None:
    """The report's usage (calls, tokens, cost), one line on stderr after the command's summary."""
    from judgeapp.judging.accounting import money_text, usage_line

    line = usage_line((report or {}).get("usage"))
    if line:
        command.stderr.write(line)
    if (report or {}).get("stopped") == "budget":
        budget = report.get("budget") or {}
        # The ranker's batch stops between candidates: what is left unjudged is the candidates not placed.
        left = (f"{budget['candidates_not_placed']} candidates not placed" if "candidates_not_placed" in budget
                else f"{budget.get('units_not_judged')} not judged")
        command.stderr.write(
            f"stopped: budget: {money_text(budget.get('limit'))} reached after {budget.get('units_judged')} judgments; "
            f"{left} (the run is invalid)"
        )


def concurrency_check(value: int) -> int:
    if value < 1:
        raise InputError(f"--concurrency {value}: give at least 1")
    return value


def report_path_check(path: str | None) -> Path | None:
    """The --report path, refused up front when its folder does not exist (before any judge is called)."""
    if not path:
        return None
    target = Path(path)
    if target.is_dir():
        raise InputError(f"--report {path}: is a directory; give a file name")
    if not target.resolve().parent.is_dir():
        raise InputError(f"--report {path}: no such directory {target.resolve().parent}")
    return target


def execute(command, run: Run, *, concurrency: int) -> Run:
    from judgeapp.judging.runs import run_execute_inline

    command.current_run = run
    bar = command.progress_bar(total=0, desc=run.run_id)
    try:
        run = run_execute_inline(run=run, concurrency=concurrency, progress=command.progress_callback(bar))
    finally:
        bar.close()
    command.current_run = None  # not on the way out of an interrupt: run_from_argv marks the run then
    run.refresh_from_db()
    return run


def run_failure_write(command, run: Run, *, reason: str = "") -> None:
    """A run that ended without a report: one line on stderr, for every mode."""
    command.stderr.write(f"error: run {run.run_id} {run.status}: {run.error or reason or 'no report'}")


def run_ended_without_verdict(command, run: Run, *, reason: str = "") -> bool:
    """True when the run failed or was cancelled (a judge's server out of reach, a refused key, a workspace
    not found) or has no report: no verdict to give, so the command says why in one line and exits 2, never
    1 ("blocked")."""
    if run.status in (RunStatus.DONE, RunStatus.INVALID) and run.report is not None:
        return False
    run_failure_write(command, run, reason=reason)
    return True


def report_of(run: Run) -> dict:
    if run.report is not None:
        return run.report
    from judgeapp.judging.selectors import report_for_unfinished_run

    return report_for_unfinished_run(run=run)


def write_report(run: Run, path: Path | None) -> None:
    """The JSON report, written whole or not at all (temp file + os.replace)."""
    if path is not None:
        write_text_atomic(path, json_text(report_of(run)))


# --- The one line of a command that could not do its job ---------------------------------------------

EXIT_FAILED = 2  # anything but a verdict (CONTRACT §3); 0 and 1 are the command's own pass and block
NO_TABLES = "the database has no tables: run `manage.py migrate`"
# What SQLite, PostgreSQL and MySQL say of a table or a column the migrations have not made.
_SCHEMA_BEHIND = re.compile(
    r"no such (table|column)|(relation|column) \S+ does not exist|Table '[^']+' doesn't exist|Unknown column",
    re.IGNORECASE,
)


def failure_line(exc: Exception) -> str:
    """The one line that says what went wrong, after `error: `."""
    text = _first_line(exc)
    if disk_full(exc):
        return disk_full_line(exc, nothing_stored=False)
    if isinstance(exc, DatabaseError):
        return _database_failure(exc, text)
    return f"{type(exc).__name__}: {text} (an unexpected error; --traceback or JUDGEAPP_TRACEBACK=1 shows where)"


def _first_line(exc: Exception) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= 300 else text[:299] + "…"


def _database_failure(exc: DatabaseError, text: str) -> str:
    if _raised_while_connecting(exc):
        return f"cannot reach the database ({text})"
    if _SCHEMA_BEHIND.search(text):
        if not _ever_migrated():
            return NO_TABLES
        return f"the database is behind the code ({text}): run `manage.py migrate`"
    return f"database error: {text}"


def _raised_while_connecting(exc: BaseException) -> bool:
    """Raised by the backend's connect (every Django backend opens its connection in `get_new_connection`):
    the database is out of reach (a closed port, a wrong host, an SQLite folder that does not exist), not
    a query that went wrong."""
    return any(frame.f_code.co_name == "get_new_connection" for frame, _line in traceback.walk_tb(exc.__traceback__))


def _ever_migrated() -> bool:
    """Whether `migrate` ever ran on this database (its django_migrations table is there)."""
    from django.db import connection
    from django.db.migrations.recorder import MigrationRecorder

    try:
        return MigrationRecorder(connection).has_table()
    except DatabaseError:
        return False


def pct(value) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def exit_at_once(status) -> NoReturn:
    """End the process with `status` as `sys.exit(status)` would (a text is printed and means 1), after the
    exit handlers ran (logging, coverage, ...), the database connections closed and the output flushed,
    but without the interpreter's teardown of every loaded module."""
    if isinstance(status, str):
        sys.stderr.write(status + "\n")
        status = 1
    elif status is None:
        status = 0
    try:
        from django.db import connections

        connections.close_all()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)
