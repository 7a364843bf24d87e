"""Text that can be stored: no NUL character and no lone surrogate, wherever a text comes in — a file (its
JSON or TOML `\\u0000` and `\\ud800` escapes decode to them), a form field, a query parameter, a path, a
command's option.

PostgreSQL refuses a NUL in a text column, and no database driver can encode a lone surrogate as UTF-8: either
would fail only when the row is written, as a server error after half the work. Refused at the edge instead,
with one line that names the field (and, for a file, the line), before anything is stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from judgeapp.judging.errors import InputError

# A JSON or TOML escape that decodes to a NUL or a surrogate (an escaped backslash before it is no escape).
_BAD_ESCAPE = re.compile(
    r"(?<!\\)(?:\\\\)*\\(?:u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})|U0000(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2}))"
)


def printable(value: str) -> str:
    """The text as a line can show it: a NUL as `\\x00`, a lone surrogate as `\\ud800`."""
    return value.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def text_problem(value: str, *, from_os: bool = False) -> str | None:
    """What keeps a text from being stored, in a few words, or None when it can be. `from_os`: the text is a
    command-line argument, where Python keeps a byte that is not UTF-8 as a surrogate (`\\udcff` for 0xff)."""
    nul = value.find("\x00")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        if nul < 0 or exc.start < nul:
            code = ord(value[exc.start])
            if from_os and 0xDC80 <= code <= 0xDCFF:
                return f"a byte that is not UTF-8 (\\x{code - 0xDC00:02x}) at character {exc.start + 1:,}"
            return f"a lone surrogate (\\u{code:04x}) at character {exc.start + 1:,}, which is not text"
    if nul >= 0:
        return f"a NUL character (\\u0000) at character {nul + 1:,}, which is not text"
    return None


def text_refuse(value: str, where: str) -> str:
    """The value, or InputError: `<where> holds a NUL character (\\u0000) at character 3, which is not text`."""
    problem = text_problem(value)
    if problem:
        raise InputError(f"{where} holds {problem}")
    return value


def _path(parts: Iterable) -> str:
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def escapes_no_text(text: str) -> bool:
    """Whether a JSON or TOML text has an escape that decodes to a NUL or a surrogate: the only way its
    parsed strings can hold one (a raw NUL is refused before, and UTF-8 has no surrogates)."""
    return ("\\u" in text or "\\U" in text) and _BAD_ESCAPE.search(text) is not None


def strings_check(doc, where: str, text: str | None = None) -> None:
    """Every key and text value of a parsed JSON or TOML document can be stored; else InputError naming the
    field (`criteria[0].description`) and, when the document's text is given, the line of the escape."""
    stack = [(doc, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                field = f"'{printable(_path(path))}'" if path else "the value"
                raise InputError(f"{where}{_line_of_escape(text)}: {field} holds {problem}")
        elif isinstance(value, dict):
            for key, child in value.items():
                if isinstance(key, str) and text_problem(key):
                    raise InputError(f"{where}{_line_of_escape(text)}: the key '{printable(key)}' holds {text_problem(key)}")
                stack.append((child, (*path, key)))
        elif isinstance(value, list):
            stack.extend((child, (*path, i)) for i, child in enumerate(value))


def _line_of_escape(text: str | None) -> str:
    if not text:
        return ""
    match = _BAD_ESCAPE.search(text)
    return f" line {text.count(chr(10), 0, match.start()) + 1}" if match else ""


def fields_problem(fields: Iterable[tuple[str, str]], what: str) -> str | None:
    """The first (name, value) pair whose name or value cannot be stored, as one line, or None."""
    for name, value in fields:
        problem = text_problem(name)
        if problem:
            return f"the {what} name '{printable(name)}' holds {problem}"
        problem = text_problem(value)
        if problem:
            return f"the {what} '{printable(name)}' holds {problem}"
    return None


def argv_problem(argv: list[str]) -> str | None:
    """A command line's first argument that is no text, as one line naming its flag, or None. `argv` is the
    command's own arguments (after `manage.py <command>`)."""
    for position, arg in enumerate(argv):
        problem = text_problem(arg, from_os=True)
        if problem is None:
            continue
        flag = arg.partition("=")[0] if arg.startswith("--") else ""
        if flag and text_problem(flag, from_os=True) is None:
            return f"{flag} holds {problem}"
        previous = argv[position - 1] if position else ""
        if previous.startswith("-") and text_problem(previous, from_os=True) is None:
            return f"{previous} holds {problem}"
        shown = (
            arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") if "\x00" not in arg
            else printable(arg)
        )
        return f"argument {position + 1} ('{shown}') holds {problem}"
    return None


def request_problem(request, *, form_fields: bool) -> str | None:
    """A request's first part that is no text, as one line naming it, or None: its path, a query parameter
    and, with `form_fields`, a form field (the pages leave those to their forms, whose text fields refuse a
    NUL themselves). An upload's file name needs no check: Django keeps only its printable characters."""
    problem = text_problem(request.path)
    if problem:
        return f"the path holds {problem}"
    problem = fields_problem(((name, value) for name, values in request.GET.lists() for value in values), "query parameter")
    if problem or not form_fields or request.method != "POST":
        return problem
    return fields_problem(((name, value) for name, values in request.POST.lists() for value in values), "field")


def storable(value):
    """A judge's or a system's reply as it can be stored, deep in dicts and lists: a NUL becomes U+FFFD and a
    lone surrogate `?`. Not refused like the edge's input — the judge wrote it, and its unit must still be
    recorded (PostgreSQL refuses a NUL in text and in jsonb, and no driver encodes a lone surrogate)."""
    if isinstance(value, str):
        if "\x00" in value:
            value = value.replace("\x00", "\ufffd")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "replace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable(item) for item in value]
    return value
