"""The API's frame: the NinjaAPI under /api/v1/, the Bearer token check, and every error as JSON
`{"error", "detail"}` (CONTRACT §6) — from the endpoints, from django-ninja's own validation, and from the
paths and methods that no endpoint has, so that nothing under /api/ ever answers with an HTML page.

Only a token authenticates: a browser's session cookie does not, which is also why a token request needs
no CSRF token (nothing a third-party page can make a browser send authenticates here).
"""

from __future__ import annotations

import logging
from functools import wraps

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, UnreadablePostError
from django.http.multipartparser import MultiPartParserError
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI, Router
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer

from judgeapp.api.inputs import PayloadTooLarge
from judgeapp.api.services import IdempotencyConflict, api_token_authenticate
from judgeapp.judging.edge import uploads_discard
from judgeapp.judging.errors import DiskFull, InputError, disk_full, disk_full_line
from judgeapp.judging.text import request_problem
from judgeapp.models import ApiToken
from judgeapp.roles import READERS, has_role
from judgeapp.throttle import Throttled, client_address

logger = logging.getLogger(__name__)

ERROR_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    429: "too_many_requests",
    500: "server_error",
    507: "insufficient_storage",
}
NO_TOKEN = (
    "send your API token as the header 'Authorization: Bearer <token>' (make one on /profile/ or with "
    "manage.py api-token create USERNAME)"
)


def error_response(status: int, detail: str) -> JsonResponse:
    response = JsonResponse({"error": ERROR_CODES.get(status, "error"), "detail": detail}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="judgeapp"'
    return response


def throttled_response(exc: Throttled) -> JsonResponse:
    response = error_response(429, str(exc))
    response["Retry-After"] = str(exc.retry_after)
    return response


class Unauthorized(AuthenticationError):
    def __init__(self, detail: str):
        super().__init__(401, detail)


def token_check(request: HttpRequest) -> ApiToken:
    """The request's token, its user set as request.user; Unauthorized (401) without a valid one, Throttled
    (429) after too many wrong ones for its account or from its address (judgeapp/throttle.py)."""
    header = request.headers.get("Authorization", "")
    if not header.strip():
        raise Unauthorized(NO_TOKEN)
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise Unauthorized("the Authorization header must read 'Bearer <token>'")
    token = api_token_authenticate(token=value.strip(), address=client_address(request))
    if token is None:
        raise Unauthorized("the token is not valid: unknown, revoked, or its user is inactive")
    request.user = token.user
    return token


class BearerToken(HttpBearer):
    """A token of a reviewer or a lead (CONTRACT §5: an annotator has nothing to do here), a request body
    within UPLOAD_MAX_BYTES, and text that can be stored. A lead's own endpoints check the lead role on top."""

    def __call__(self, request: HttpRequest) -> ApiToken:
        token = token_check(request)
        if not has_role(token.user, *READERS):
            raise PermissionDenied(f"{token.user.username} holds neither the reviewer nor the lead role, which the API needs")
        length = request.META.get("CONTENT_LENGTH") or "0"
        if length.isdigit() and int(length) > settings.UPLOAD_MAX_BYTES:
            raise PayloadTooLarge(
                f"the request's {int(length):,} bytes are over the limit of {settings.UPLOAD_MAX_BYTES:,} (UPLOAD_MAX_BYTES)"
            )
        # A NUL or a lone surrogate in the path, a query parameter or a form field: one line (400) before
        # any endpoint reads it into a query or a row (judging/text.py); a file's are its reader's.
        problem = request_problem(request, form_fields=True)
        if problem:
            raise InputError(problem)
        return token

    def authenticate(self, request, token):  # pragma: no cover - __call__ does it all
        raise NotImplementedError


api = NinjaAPI(
    title="judgeapp API",
    version="1",
    description=(
        "Start pointwise, pairwise and jury runs, follow them, read their reports and the release gate. "
        "Every endpoint needs `Authorization: Bearer <token>` (a reviewer's or a lead's); errors are "
        '`{"error", "detail"}`. See docs/api.md.'
    ),
    urls_namespace="api:v1",
    docs_url=None,  # the browsable docs are a page of the app (/api-docs/), behind its login
    auth=BearerToken(),
)


def _validation_detail(exc: ValidationError) -> str:
    """pydantic's errors as one line: `threshold: Input should be a valid number; …`."""
    parts = []
    for error in exc.errors:
        where = ".".join(str(p) for p in error.get("loc", ())[1:] if p != "data") or "request"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "the request is not valid"


def _server_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    if disk_full(exc):  # an upload's temp file, the database: 507, not a failure of the server's code
        logger.error("API %s %r: the disk is full", request.method, request.path, exc_info=exc)
        uploads_discard(request)
        return error_response(507, disk_full_line(exc, nothing_stored=False))
    logger.exception("API %s %r failed", request.method, request.path, exc_info=exc)
    return error_response(500, "the server failed on this request; its log has the details")


def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return error_response(exc.status_code, str(exc))


for exc_class, status in (
    (InputError, 400),
    (SuspiciousOperation, 400),
    (MultiPartParserError, 400),
    (UnreadablePostError, 400),
    (DiskFull, 507),
    (PermissionDenied, 403),
    (Http404, 404),
    (IdempotencyConflict, 409),
    (PayloadTooLarge, 413),
    (RequestDataTooBig, 413),
):
    api.add_exception_handler(
        exc_class, lambda request, exc, status=status: error_response(status, str(exc) or ERROR_CODES[status])
    )
api.add_exception_handler(ValidationError, lambda request, exc: error_response(400, _validation_detail(exc)))
api.add_exception_handler(HttpError, _http_error)
api.add_exception_handler(Throttled, lambda request, exc: throttled_response(exc))
api.add_exception_handler(Exception, _server_error)


def _unauthenticated(request: HttpRequest) -> HttpResponse | None:
    """401 (or 429) unless the request carries a valid token (for answers that no endpoint's auth gave)."""
    try:
        token_check(request)
    except Unauthorized as exc:
        return error_response(401, str(exc))
    except Throttled as exc:
        return throttled_response(exc)
    return None


@csrf_exempt
@login_not_required
def not_found(request: HttpRequest, *args, **kwargs) -> HttpResponse:
    """Any path under /api/ that no endpoint has: 401 without a token, else 404 — JSON, never Django's page."""
    return _unauthenticated(request) or error_response(
        404, f"no endpoint {request.path}; the endpoints are listed in /api/v1/openapi.json"
    )


def _framed(view):
    """A django-ninja URL view, open to the login middleware (the token is the login) and with the answers
    ninja gives outside its exception handlers made JSON too: an unknown method's 405, the root's 404."""

    @wraps(view)
    def framed(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            response = view(request, *args, **kwargs)
        except Http404:
            return not_found(request)
        except Exception as exc:  # noqa: BLE001 - what ninja re-raises becomes JSON, never Django's debug page
            return _server_error(request, exc)
        if response.status_code == 405 and not response.get("Content-Type", "").startswith("application/json"):
            allowed = response.get("Allow", "")
            answer = _unauthenticated(request) or error_response(
                405, f"{request.method} is not allowed on {request.path}; allowed: {allowed}"
            )
            if answer.status_code == 405:
                answer["Allow"] = allowed  # RFC 9110: a 405 names the methods the path takes
            return answer
        return response

    return csrf_exempt(login_not_required(framed))


_mounted: list[Router] = []


def api_urls(*routers: Router):
    """The API's URL patterns (an include() tuple), with these routers mounted once."""
    for router in routers:
        if not any(mounted is router for mounted in _mounted):
            api.add_router("", router)
            _mounted.append(router)
    patterns, app_name, namespace = api.urls
    for pattern in patterns:
        pattern.callback = _framed(pattern.callback)
    return patterns, app_name, namespace
