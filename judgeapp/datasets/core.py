"""The Datasets pages' plain helpers: a stored case as a JSONL line, a name a download may carry. No Django."""

from __future__ import annotations

import json

# A zip member's or a download's name: long enough to tell artifacts apart, short enough for every file system.
ZIP_NAME_MAX = 120


def case_line(case_id: str, text: str, output: str | None, extra: dict | None) -> str:
    """A stored case as a test set's JSONL line {"id", "input", "output"?, its other fields}: it reads back as
    the same case."""
    row = {**(extra or {}), "id": case_id, "input": text, **({"output": output} if output is not None else {})}
    return json.dumps(row, ensure_ascii=False) + "\n"


def safe_file_name(text: str, fallback: str) -> str:
    """A name a download or a zip member can carry: letters, digits, `-`, `_` and `.` (no leading dot, no
    path), at most ZIP_NAME_MAX characters; `fallback` when nothing is left."""
    cleaned = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in text).lstrip(".")[:ZIP_NAME_MAX]
    return cleaned.strip("_") and cleaned or fallback
