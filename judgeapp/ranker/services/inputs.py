"""Candidate files: read and checked whole before anything is stored (empty, binary, over-long, unreadable).

Reading is observation only: a candidate file is opened for reading and never written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from judgeapp.judging.errors import InputError
from judgeapp.judging.files import decode_text
from judgeapp.models import content_hash

SET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


@dataclass(frozen=True)
class Candidate:
    """A candidate's text and where it came from. Its artifact ID is the file's basename (the seed)."""

    artifact_id: str
    relative_path: str
    text: str
    size: int
    digest: str


def candidate_from_bytes(data: bytes, *, name: str, relative_path: str | None = None) -> Candidate:
    artifact_id = Path(name).name
    if not artifact_id or artifact_id in (".", ".."):
        raise InputError(f"{name!r}: a candidate needs a file name (its artifact ID)")
    if len(artifact_id) > 255:
        raise InputError(f"{artifact_id[:40]}…: file names longer than 255 characters are not supported")
    relative_path = relative_path or name
    if len(relative_path) > 1000:
        raise InputError(f"{relative_path[:40]}…: paths longer than 1,000 characters are not supported")
    text = decode_text(data, name, max_bytes=settings.ARTIFACT_MAX_BYTES)
    return Candidate(artifact_id, relative_path, text, len(data), content_hash(data))


def candidate_read(path: str | Path, *, relative_to: Path | None = None) -> Candidate:
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a file")
    size = path.stat().st_size
    if size > settings.ARTIFACT_MAX_BYTES:
        # Refused before reading: a 2 GB file is not loaded to be told it is too long.
        raise InputError(f"{path}: {size:,} bytes is over the limit of {settings.ARTIFACT_MAX_BYTES:,} (ARTIFACT_MAX_BYTES)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
    relative = str(path.relative_to(relative_to)) if relative_to else str(path)
    return candidate_from_bytes(data, name=str(path), relative_path=relative)


def candidates_in_dir(directory: str | Path, *, within: list[Path] | None = None) -> list[Candidate]:
    """Every candidate file directly in `directory`, in arrival order: sorted by name, so a run is
    reproducible. Hidden files and subdirectories are left out. All are read and checked before any is
    returned: one bad file refuses the whole directory.

    `within`: roots the directory and every file (after following links) must stay inside (the web).
    """
    directory = Path(directory)
    if not directory.exists():
        raise InputError(f"{directory}: no such directory")
    if not directory.is_dir():
        raise InputError(f"{directory}: not a directory")
    if within is not None:
        path_check_within(directory, within)
    files = sorted(p for p in directory.iterdir() if not p.name.startswith(".") and p.is_file())
    if not files:
        raise InputError(f"{directory}: no candidate files in it")
    if within is not None:
        for path in files:
            path_check_within(path, within)
    return [candidate_read(p, relative_to=directory) for p in files]


def path_check_within(path: Path, roots: list[Path]) -> Path:
    resolved = Path(path).resolve()
    if not any(resolved == root or resolved.is_relative_to(root) for root in roots):
        raise InputError(f"{path}: outside the folders this server may read")
    return resolved


def set_name_check(name: str) -> str:
    if not SET_NAME.match(name or ""):
        raise InputError(
            f"set name {name!r}: use letters, digits, '.', '_' and '-' (at most 100), starting with a letter or digit"
        )

    return name


def max_size_check(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"max size must be a positive integer, got {value!r}")
    return value


def unique_ids_check(candidates: list[Candidate]) -> None:
    seen: dict[str, str] = {}
    for candidate in candidates:
        if candidate.artifact_id in seen:
            raise InputError(
                f"two candidates have the artifact ID {candidate.artifact_id!r} "
                f"({seen[candidate.artifact_id]} and {candidate.relative_path}); IDs are file names and must differ"
            )
        seen[candidate.artifact_id] = candidate.relative_path


def run_dir_check_fresh(run) -> None:
    """A new run's directory must not hold another run's files (a database reset with DATA_DIR kept, a
    reused run id): the logs are append-only and would mix two runs."""
    if run.run_dir.exists() and any(run.run_dir.iterdir()):
        raise InputError(f"{run.run_dir} already holds files of an earlier run; choose another run id (or move it away)")
