"""Files written whole or not at all: every report, comparison and export the app writes goes through here
(the ranklist keeps the seed's own `<path>.tmp` + os.replace, judgeapp/ranker/core/__init__.py)."""

import json
import os
import secrets
from collections.abc import Iterable
from pathlib import Path


def json_text(value) -> str:
    """JSON as the app writes it: indented, UTF-8 as is, one newline at the end."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n"


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new temp file in the target's folder, created with mode 0666 so that the umask decides the
    report's permissions as it does for any file the user writes (mkstemp would always give 0600)."""
    while True:
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def write_text_atomic(path: str | Path, text: str | Iterable[str]) -> Path:
    """A temp file beside `path`, flushed to disk, then renamed over it: a reader (or a process killed
    mid-write) sees the old file or the new one, never half of one. `text`: a string, or its pieces in
    order (a large export written as it is made)."""
    path = Path(path)
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            if isinstance(text, str):
                f.write(text)
            else:
                for piece in text:
                    f.write(piece)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
