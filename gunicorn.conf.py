"""gunicorn's configuration: `gunicorn judgeapp.wsgi`, started in the project folder (README, Production),
reads this file by itself.

gunicorn answers a request it cannot parse before Django sees it: a malformed request line (400), a request
line over `limit_request_line` (414 URI Too Long), too many header fields or one over
`limit_request_field_size` (431 Request Header Fields Too Large), a bad chunked body (400), an unsupported
transfer coding (501). Its own page for those is HTML; here it is JSON `{"error", "detail"}`, as every answer
under /api/ is (CONTRACT §6). The path is not known then (the request line may be what failed), so every
such answer is JSON; a browser shows it as text. Django answers everything else (a 405 with `Allow`, a 404,
a 413 over UPLOAD_MAX_BYTES: judgeapp/api/views/base.py). docs/api.md, Errors.
"""

import json

from gunicorn import util

# gunicorn's own limits, written out so that docs/api.md can quote them (these are its defaults): a request
# line of at most 4,094 bytes (a URL of about 4 KB), at most 100 header fields of 8,190 bytes each.
limit_request_line = 4094
limit_request_fields = 100
limit_request_field_size = 8190

ERROR_CODES = {
    400: "bad_request",
    403: "forbidden",
    414: "uri_too_long",
    417: "expectation_failed",
    431: "request_header_fields_too_large",
    500: "server_error",
    501: "not_implemented",
}


def write_json_error(sock, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's `util.write_error` (its one writer of its own answers), with a JSON body."""
    detail = " ".join(str(mesg).split()) or reason
    body = json.dumps(
        {"error": ERROR_CODES.get(status_int, "error"), "detail": f"{reason}: {detail}" if detail != reason else reason}
    )
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body.encode())}\r\n"
        "\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body.encode())


util.write_error = write_json_error
