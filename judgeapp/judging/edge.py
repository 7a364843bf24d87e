"""What every page refuses before its view runs, and what it answers when the disk fills (issue 26: hostile
input at the edge gets one clear line).

- A path or query parameter that is no text (a NUL: judging/text.py) is a 400 with one line naming it,
  before any view reads it into a query (PostgreSQL would fail on it). A form's own fields are its form's
  to refuse: Django's text fields refuse a NUL with a form error (and an upload's file name keeps only its
  printable characters; a file's content is its reader's: judging/files.py).
- A disk that filled while a request stored something (a large upload's temp file, the database) is a
  507 with one line instead of a server error, where no form can say it: the services that store uploads
  say so beside their form (judging/errors.py: refused_when_disk_full).

The API (`/api/`) answers both itself, as JSON and after its token check (judgeapp/api/views/base.py).
"""

from __future__ import annotations

import logging

from django.http import HttpResponse

from judgeapp.judging.errors import disk_full, disk_full_line
from judgeapp.judging.text import request_problem

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"


def _line(status: int, text: str) -> HttpResponse:
    return HttpResponse(text + "\n", status=status, content_type="text/plain; charset=utf-8")


class EdgeMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not _is_api(request):
            problem = request_problem(request, form_fields=False)
            if problem:
                logger.warning("refused %s %r: %s", request.method, request.path, problem)
                return _line(400, f"Bad request: {problem}.")
        return self.get_response(request)

    def process_exception(self, request, exception):
        """A full disk that no form could show (a large upload's temp file, say): 507, one line."""
        if _is_api(request) or not disk_full(exception):
            return None
        logger.error("%s %r: the disk is full", request.method, request.path, exc_info=exception)
        uploads_discard(request)
        line = disk_full_line(exception, nothing_stored=False)
        return _line(507, line[0].upper() + line[1:] + ".")


def uploads_discard(request) -> None:
    """Close an upload the disk filled under: its temp file is deleted when closed, so no part of it stays
    (not even until the request is collected). The uploads received whole Django closes at the request's end."""
    for handler in request.upload_handlers:
        upload = getattr(handler, "file", None)
        if upload is not None:
            upload.close()


def _is_api(request) -> bool:
    return request.path == API_PREFIX.rstrip("/") or request.path.startswith(API_PREFIX)
