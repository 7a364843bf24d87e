"""Files written whole or not at all: every report, comparison and export the app writes goes through here
(the ranklist keeps the seed's own `<path>.tmp` + os.replace, judgeapp/ranker/core/__init__.py)."""

import json
import os
import tempfile
from pathlib import Path


def json_text(value) -> str:
    """JSON as the app writes it: indented, UTF-8 as is, one newline at the end."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n"


def write_text_atomic(path: str | Path, text: str) -> Path:
    """A temp file beside `path`, flushed to disk, then renamed over it: a reader (or a process killed
    mid-write) sees the old file or the new one, never half of one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
