"""CSV the app writes, safe to open in a spreadsheet (OWASP "CSV injection").

A judge's reasoning, a case's input or a reply is text an attacker may choose: `=HYPERLINK(…)` or
`+cmd|' /C calc'!A0` in a cell runs as a formula when the export is opened in Excel or LibreOffice. Every
text cell beginning with `=`, `+`, `-`, `@`, `|`, `%` (defusedcsv, the well-kept drop-in for the csv module)
or with a tab or a carriage return (OWASP's list; defusedcsv leaves those two) gets a leading `'`, which
spreadsheets show as text. Numbers stay numbers (`-3` is not escaped).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence

from defusedcsv import csv as defusedcsv

_CONTROL_STARTS = ("\t", "\r")


def neutralise(value):
    """One cell as written: defusedcsv escapes the formula characters; this adds tab and carriage return."""
    if isinstance(value, str) and value.startswith(_CONTROL_STARTS):
        return "'" + value
    return value


ROWS_PER_CHUNK = 500


def csv_chunks(columns: Sequence[str], rows: Iterable[Sequence], rows_per_chunk: int = ROWS_PER_CHUNK) -> Iterator[str]:
    """The CSV a piece at a time (the header, then `rows_per_chunk` rows a piece): an export of 100,000
    judgments is streamed to the browser or the file, never one string or one table in memory."""
    out = io.StringIO()
    # Excel's dialect (rows end in CRLF), so that a cell holding a carriage return is quoted too.
    writer = defusedcsv.writer(out)
    writer.writerow([neutralise(c) for c in columns])
    for number, row in enumerate(rows, 1):
        writer.writerow([neutralise(v) for v in row])
        if number % rows_per_chunk == 0:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    if out.tell():
        yield out.getvalue()
