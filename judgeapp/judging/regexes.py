"""Regular expressions that cannot hang: patterns or texts from users and judges run on RE2.

Python's `re` backtracks: `(a+)+$` on a line of 40 `a`s and a `b` takes longer than the universe has, and it
holds the GIL while it does, so no thread timeout can stop it. RE2 (`google-re2`) matches in time linear
in the text, whatever the pattern. The price: no backreferences (`\\1`) and no lookaround (`(?=…)`,
`(?<!…)`); such a pattern is refused with `PatternRefused`, whose message says why.
"""

from __future__ import annotations

import re2

# RE2 would otherwise log every refused pattern on stderr.
_BASE_OPTIONS = {"log_errors": False}


class PatternRefused(ValueError):
    """A pattern RE2 does not accept; the message is one line a person (or a judge) can act on."""


def linear_regex(pattern: str, *, ignore_case: bool = False, multiline: bool = False, dotall: bool = False,
                 line_by_line: bool = False):
    """`pattern` compiled by RE2, with the `re` flags it is given as keywords. The result has the `re`
    pattern's search, match, fullmatch, finditer, findall, sub and split. `line_by_line`: a match never
    spans a line break (as if each line were matched on its own), so a whole text can be searched at once."""
    options = re2.Options()
    for name, value in _BASE_OPTIONS.items():
        setattr(options, name, value)
    options.case_sensitive = not ignore_case
    options.dot_nl = dotall
    options.never_nl = line_by_line
    flags = "(?m)" if multiline or line_by_line else ""
    try:
        return re2.compile(flags + pattern, options)
    except re2.error as exc:
        detail = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        hint = ""
        if "escape sequence" in detail and any(f"\\{d}" in pattern for d in "123456789"):
            hint = " (backreferences are not supported)"
        elif "perl operator" in detail and any(look in pattern for look in ("(?=", "(?!", "(?<=", "(?<!")):
            hint = " (lookahead and lookbehind are not supported)"
        raise PatternRefused(f"{detail}{hint}; searches use RE2, which matches in linear time") from None
