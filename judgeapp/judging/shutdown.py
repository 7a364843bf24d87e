"""A command's clean stop, as healthchecks' `sendalerts` does it: a signal only asks, the work drains.

The first SIGTERM, SIGHUP (the terminal closed) or Ctrl-C sets a flag and returns; the signal handler
never raises, so it cannot land inside a limiter slot, an atomic block or a half-written file. The
work looks at the flag where stopping is safe: the in-process executor stops claiming units (those in
flight finish and are recorded), a sequential run stops before its next step, and then the run is
marked failed "interrupted by SIGTERM before it finished" and `Interrupted` is raised from there; the
command exits 128 + the signal's number. A second signal stops at once (`Interrupted` raised from the
handler: the user asked twice).

Only the main thread of a process installs handlers (Python runs them there); threads read the flag.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)

_requested: int | None = None


class Interrupted(BaseException):
    """The command was asked to stop by `signum` (raised where stopping is safe, or by a second signal).

    A BaseException, as KeyboardInterrupt is: the `except Exception` that fails one unit must not swallow it."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


def requested() -> int | None:
    """The signal that asked this process to stop, or None."""
    return _requested


def requested_name() -> str:
    return signal.Signals(_requested).name if _requested else ""


def raise_if_requested() -> None:
    """Raise Interrupted when a stop was asked: call it where stopping is safe."""
    if _requested is not None:
        raise Interrupted(_requested)


def request(signum: int) -> None:
    """Ask the work to stop, as the first signal does."""
    global _requested
    _requested = signum


def clear() -> None:
    global _requested
    _requested = None


@contextmanager
def handled() -> Iterator[None]:
    """Install the handlers for the block (a command's run), and put back the previous ones after.

    A signal the process was started with ignored stays ignored (`nohup` ignores SIGHUP, a background job
    SIGINT). The first signal says on stderr what happens next.
    """

    def handler(signum, frame):
        if _requested is not None:
            raise Interrupted(signum)
        request(signum)
        # os.write, not sys.stderr: the handler may run while the progress bar is writing to that stream.
        line = f"\n{signal.Signals(signum).name}: stopping once the work in flight is recorded (again: stop at once)\n"
        try:
            os.write(2, line.encode())
        except OSError:
            pass

    previous = {}
    for signum in SIGNALS:
        current = signal.getsignal(signum)
        if current is signal.SIG_IGN:
            continue
        previous[signum] = signal.signal(signum, handler)
    clear()
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
        clear()
