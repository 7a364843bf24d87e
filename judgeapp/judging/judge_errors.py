"""The errors a judge call raises: unavailable (transient, retried, then given up on), unreachable, rejected
(permanent: the server refused the request)."""

from __future__ import annotations


class JudgeError(Exception):
    """A judge call that did not produce a reply. `str()` is one line a user can act on."""

    attempts: int = 0  # HTTP requests made before giving up (set where the error is raised)


class JudgeUnavailable(JudgeError):
    """Transient failures (429, 5xx, timeouts) until the attempts ran out."""


class JudgeUnreachable(JudgeUnavailable):
    """No connection to the server at all (refused, no route, an unknown host) until the attempts ran out."""


class JudgeRejected(JudgeError):
    """The server refused the request (a 4xx): retrying the same request cannot help."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class StructuredOutputUnsupported(JudgeRejected):
    """The server refuses the judge's structured-output setting; the judge's setting must change."""
