"""The blind comparator's inputs (seed blind-comparator.md, "Inputs"): version directories, the eval prompt
and the expectations, read whole and checked before anything is stored or judged.

A version is a directory of output files. When it holds `run-*` directories, each one is a run of the
version and every one of them is read (the seed: "do not select the best run or ignore failures"); files
beside the `run-*` directories are not part of any run and are counted, not shown. Without `run-*`
directories the whole directory is the version's single run.

The judge never sees a run directory's real name: runs are shown as `run-1`, `run-2`… in natural order,
and file paths are relative to their run. Hidden files (`.git`, `.DS_Store`) are skipped. A binary file is
listed to the judge by its name and size but not shown. Plain Python, no Django.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from judgeapp.judging.errors import InputError
from judgeapp.judging.files import decode_text, json_load

RUN_DIR = re.compile(r"^run-", re.I)
# Blinded labels: one capital letter each (A, B, C…). Anything else names something.
LABEL = re.compile(r"^[A-Z]$")
LABELS = [chr(c) for c in range(ord("A"), ord("Z") + 1)]
MAX_FILES_PER_VERSION = 2000
# Zip archives are read in memory; a small archive that inflates to gigabytes is refused.
ZIP_MAX_RATIO = 200


@dataclass(frozen=True)
class VersionFile:
    path: str  # relative to its run, POSIX separators
    text: str | None  # None: binary, not shown
    size: int

    @property
    def is_binary(self) -> bool:
        return self.text is None


@dataclass
class VersionRun:
    real_name: str  # the run directory's own name ("" for a version without run-* directories)
    files: list[VersionFile] = field(default_factory=list)

    @property
    def text_size(self) -> int:
        return sum(f.size for f in self.files if not f.is_binary)


@dataclass
class VersionContent:
    runs: list[VersionRun]
    stray_files: int = 0  # files beside the run-* directories, in no run

    @property
    def file_count(self) -> int:
        return sum(len(r.files) for r in self.runs)


def _natural_key(name: str) -> list:
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", name)]


def _is_hidden(parts: tuple[str, ...]) -> bool:
    return any(p.startswith(".") or p == "__MACOSX" for p in parts)


def _decode(data: bytes, name: str) -> str | None:
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _file(path: str, data: bytes | int) -> VersionFile:
    if isinstance(data, int):  # a large binary file, never read whole
        return VersionFile(path, None, data)
    return VersionFile(path, _decode(data, path), len(data))


def version_from_files(
    files: dict[str, bytes | int], *, name: str, max_run_bytes: int, run_dirs: list[str] = ()
) -> VersionContent:
    """Build a version from {relative path: bytes}; the shared path of directories, archives and uploads.
    A value that is an int stands for a binary file of that size that was not read. `run_dirs` names
    the run-* directories seen, so that a run that produced no file is still a run (a failed one)."""
    visible = {p: data for p, data in files.items() if not _is_hidden(PurePosixPath(p).parts)}
    run_dirs = [d for d in run_dirs if RUN_DIR.match(d) and not d.startswith(".")]
    if not visible and not run_dirs:
        raise InputError(f"{name}: no files to compare")
    if len(visible) > MAX_FILES_PER_VERSION:
        raise InputError(f"{name}: {len(visible):,} files is over the limit of {MAX_FILES_PER_VERSION:,}")
    runs: dict[str, VersionRun] = {d: VersionRun(real_name=d) for d in run_dirs}
    loose: dict[str, bytes] = {}
    for path, data in visible.items():
        parts = PurePosixPath(path).parts
        if len(parts) > 1 and RUN_DIR.match(parts[0]):
            runs.setdefault(parts[0], VersionRun(real_name=parts[0])).files.append(_file(str(PurePosixPath(*parts[1:])), data))
        else:
            loose[path] = data
    stray = 0
    if runs:
        stray = len(loose)
    else:
        runs[""] = VersionRun(real_name="", files=[_file(p, d) for p, d in loose.items()])
    ordered = [runs[k] for k in sorted(runs, key=_natural_key)]
    for run in ordered:
        run.files.sort(key=lambda f: _natural_key(f.path))
        where = f"{name}/{run.real_name}" if run.real_name else name
        if run.text_size > max_run_bytes:
            raise InputError(
                f"{where}: {run.text_size:,} bytes of text is over the limit of {max_run_bytes:,} for one run "
                "(ARTIFACT_MAX_BYTES); the judge reads every file of a run whole"
            )
    return VersionContent(runs=ordered, stray_files=stray)


def _large(head: bytes, size: int, where: str, max_run_bytes: int) -> int:
    """A file over the per-run limit: fine when binary (listed, not shown), refused when text."""
    binary = b"\x00" in head
    try:
        head[:-4].decode("utf-8-sig")  # the last bytes may cut a character in two
    except UnicodeDecodeError:
        binary = True
    if binary:
        return size
    raise InputError(f"{where} is {size:,} bytes, over the limit of {max_run_bytes:,} for one run (ARTIFACT_MAX_BYTES)")


def read_version_dir(path: str | Path, *, max_run_bytes: int, name: str | None = None) -> VersionContent:
    """A version from a directory on disk. Symbolic links are not followed (they could lead anywhere)."""
    root = Path(path)
    label = name or str(path)
    if not root.exists():
        raise InputError(f"{label}: no such directory")
    if not root.is_dir():
        raise InputError(f"{label}: not a directory")
    files: dict[str, bytes | int] = {}
    try:
        run_dirs = [e.name for e in root.iterdir() if RUN_DIR.match(e.name) and e.is_dir() and not e.is_symlink()]
    except OSError as exc:
        raise InputError(f"{label}: cannot read it ({exc.strerror})") from None
    stack = [root]
    while stack:
        current = stack.pop()
        try:
            entries = sorted(current.iterdir())
        except OSError as exc:
            raise InputError(f"{label}: cannot read {current} ({exc.strerror})") from None
        for entry in entries:
            if entry.name.startswith(".") or entry.is_symlink():
                continue
            if entry.is_dir():
                stack.append(entry)
            elif entry.is_file():
                rel = entry.relative_to(root).as_posix()
                try:
                    size = entry.stat().st_size
                    if size > max_run_bytes:
                        with entry.open("rb") as handle:
                            files[rel] = _large(handle.read(8192), size, f"{label}: {rel}", max_run_bytes)
                    else:
                        files[rel] = entry.read_bytes()
                except OSError as exc:
                    raise InputError(f"{label}: cannot read {rel} ({exc.strerror})") from None
                if len(files) > MAX_FILES_PER_VERSION:
                    raise InputError(f"{label}: more than {MAX_FILES_PER_VERSION:,} files")
    return version_from_files(files, name=label, max_run_bytes=max_run_bytes, run_dirs=run_dirs)


def read_version_zip(data: bytes, *, name: str, max_run_bytes: int, max_total_bytes: int) -> VersionContent:
    """A version uploaded as a zip archive (with its run-* directories inside, or files only).

    Entries with absolute paths or `..` are refused (they would name places outside the archive); one
    top-level directory wrapping everything is unwrapped, as archivers add one.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise InputError(f"{name}: not a valid zip archive") from None
    files: dict[str, bytes] = {}
    directories: list[str] = []
    total = 0
    with archive:
        for info in archive.infolist():
            if info.is_dir():
                directories.append(info.filename.replace("\\", "/").strip("/"))
                continue
            path = PurePosixPath(info.filename.replace("\\", "/"))
            if path.is_absolute() or ".." in path.parts or re.match(r"^[A-Za-z]:", info.filename):
                raise InputError(f"{name}: the archive entry {info.filename!r} points outside the archive")
            total += info.file_size
            if total > max_total_bytes or (
                info.compress_size and info.file_size / info.compress_size > ZIP_MAX_RATIO and info.file_size > 1_000_000
            ):
                raise InputError(f"{name}: the archive inflates to more than {max_total_bytes:,} bytes (UPLOAD_MAX_BYTES)")
            if info.file_size > max_run_bytes:
                with archive.open(info) as handle:
                    files[str(path)] = _large(handle.read(8192), info.file_size, f"{name}: {info.filename}", max_run_bytes)
            else:
                files[str(path)] = archive.read(info)
    tops = {PurePosixPath(p).parts[0] for p in [*files, *directories] if p and not _is_hidden(PurePosixPath(p).parts)}
    if len(tops) == 1 and all(len(PurePosixPath(p).parts) > 1 for p in files):
        (top,) = tops
        if not RUN_DIR.match(top):
            files = {
                str(PurePosixPath(*PurePosixPath(p).parts[1:])): d for p, d in files.items() if PurePosixPath(p).parts[0] == top
            }
            directories = [
                str(PurePosixPath(*PurePosixPath(d).parts[1:])) for d in directories if len(PurePosixPath(d).parts) > 1
            ]
    run_dirs = [d for d in directories if len(PurePosixPath(d).parts) == 1]
    return version_from_files(files, name=name, max_run_bytes=max_run_bytes, run_dirs=run_dirs)


def parse_eval_prompt(data: bytes, name: str) -> str:
    """The original task prompt: a non-empty UTF-8 text file."""
    return decode_text(data, name).strip()


def parse_expectations(data: bytes, name: str) -> list[str]:
    """Scenario expectations, possibly empty: a JSON array of texts, a JSON object with an `expectations`
    array, or a text file with one expectation per line (blank lines and `#` comments ignored, a leading
    `- ` or `1.` dropped)."""
    if not data.strip():
        return []
    if b"\x00" in data[:8192]:
        raise InputError(f"{name}: looks like a binary file (it has NUL bytes); expected text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        doc = json_load(stripped, name)
        if isinstance(doc, dict):
            if "expectations" not in doc:
                raise InputError(f"{name}: a JSON object needs an 'expectations' array")
            doc = doc["expectations"]
        if not isinstance(doc, list):
            raise InputError(f"{name}: 'expectations' must be an array of texts")
        items = []
        for i, item in enumerate(doc, start=1):
            if isinstance(item, dict):  # skill-creator style {"text": ...}
                item = item.get("text")
            if not isinstance(item, str) or not item.strip():
                raise InputError(f"{name}: expectation {i} must be a non-empty text")
            items.append(" ".join(item.split()))
        return items
    return expectations_from_lines(text)


def expectations_from_lines(text: str) -> list[str]:
    items = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = re.sub(r"^(?:[-*•]|\d+[.)])\s+", "", line)
        if line:
            items.append(" ".join(line.split()))
    return items


def split_version_argument(value: str) -> tuple[str, str]:
    """`LABEL=DIR` from the command line."""
    label, sep, directory = value.partition("=")
    if not sep or not label.strip() or not directory.strip():
        raise InputError(f"--version {value!r}: expected LABEL=DIR, for example A=outputs/a")
    return label.strip(), directory.strip()
