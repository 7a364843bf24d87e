"""The agent's workspace as the judge sees it, and how one is taken in from a directory or an archive.

Two rules keep the judge read-only and inside the workspace:

- A path from the judge is relative to the workspace root, has no `..` component, and resolves (symlinks
  followed) to a place inside the root; anything else is refused with one line the judge can read.
- A workspace is taken in by copying it into the run's own directory: an archive member that is absolute
  or climbs out with `..` refuses the whole archive (it was built to escape), a symlink that leads out is
  left behind and listed, devices and pipes are skipped, and the total size and file count are capped, so
  that an archive bomb stops at the limit instead of filling the disk.
"""

from __future__ import annotations

import hashlib
import io
import os
import posixpath
import re
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from judgeapp.judging.errors import InputError

# Directories that are tooling or caches, not the agent's work: listed, never expanded by a recursive list.
NOT_EXPANDED = frozenset({".git", "__pycache__", "node_modules", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".tox"})
_COPY_CHUNK = 1 << 20


class ToolError(Exception):
    """A tool call the judge made that cannot be answered (a path outside the workspace, a missing file).
    The message is what the judge reads, one line."""


@dataclass(frozen=True)
class WorkspaceLimits:
    max_bytes: int = 50_000_000
    max_files: int = 5_000
    max_file_bytes: int = 20_000_000


@dataclass
class IngestReport:
    """What was taken in: counts, and what was left out and why (shown in the report)."""

    files: int = 0
    bytes: int = 0
    skipped: list[str] = field(default_factory=list)
    unwrapped: str = ""  # the archive's single top directory, taken off

    def as_dict(self) -> dict:
        return {"files": self.files, "bytes": self.bytes, "skipped": self.skipped, "unwrapped": self.unwrapped}


def _inside(real_root: str, real_path: str) -> bool:
    return real_path == real_root or real_path.startswith(real_root.rstrip(os.sep) + os.sep)


class Workspace:
    """Read access to one workspace directory, confined to it."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.real_root = os.path.realpath(self.root)
        self._files: list[str] | None = None

    # --- confinement ------------------------------------------------------------------------------------

    def relative(self, path: str) -> str:
        """The judge's path, normalised ('.' for the root), or ToolError when it is not a workspace path."""
        if not isinstance(path, str):
            raise ToolError("the path must be a string")
        raw = path.strip()
        if "\x00" in raw:
            raise ToolError("the path contains a NUL byte")
        if raw.startswith(("/", "\\", "~")) or (len(raw) > 1 and raw[1] == ":"):
            raise ToolError(f"{raw}: absolute paths are not allowed; give a path relative to the workspace root")
        parts = [p for p in raw.replace("\\", "/").split("/") if p not in ("", ".")]
        if ".." in parts:
            raise ToolError(f"{raw}: '..' is not allowed; paths stay inside the workspace")
        return "/".join(parts) or "."

    def resolve(self, path: str) -> tuple[str, Path]:
        """(relative path, absolute path) of a path inside the workspace; ToolError when it leads out."""
        rel = self.relative(path)
        absolute = self.root / rel if rel != "." else self.root
        if not _inside(self.real_root, os.path.realpath(absolute)):
            raise ToolError(f"{rel}: leads outside the workspace (through a symbolic link); refused")
        return rel, absolute

    # --- reading ----------------------------------------------------------------------------------------

    def files(self) -> list[str]:
        """Every regular file of the workspace (relative, sorted), symlinks not followed."""
        if self._files is None:
            found = []
            for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
                dirnames.sort()
                base = os.path.relpath(dirpath, self.root)
                for name in sorted(filenames):
                    full = os.path.join(dirpath, name)
                    if os.path.isfile(full) and not os.path.islink(full):
                        found.append(name if base == "." else f"{base}/{name}".replace(os.sep, "/"))
            self._files = found
        return self._files

    def exists(self, rel: str) -> bool:
        try:
            _rel, absolute = self.resolve(rel)
        except ToolError:
            return False
        return absolute.exists()

    def manifest_hash(self) -> str:
        """sha256 over every file's path and content: the workspace's version."""
        digest = hashlib.sha256()
        for rel in self.files():
            digest.update(rel.encode("utf-8") + b"\x00")
            with open(self.root / rel, "rb") as f:
                for chunk in iter(lambda: f.read(_COPY_CHUNK), b""):
                    digest.update(chunk)
            digest.update(b"\x00")
        return digest.hexdigest()


# --- Taking a workspace in ------------------------------------------------------------------------------


class _Budget:
    def __init__(self, limits: WorkspaceLimits, label: str):
        self.limits, self.label = limits, label
        self.report = IngestReport()

    def add_file(self, name: str, size: int) -> None:
        self.report.files += 1
        if self.report.files > self.limits.max_files:
            raise InputError(f"{self.label}: more than {self.limits.max_files:,} files (AGENT_WORKSPACE_MAX_FILES)")
        if size > self.limits.max_file_bytes:
            raise InputError(f"{self.label}: {name} is {size:,} bytes, over the per-file limit of {self.limits.max_file_bytes:,}")

    def add_bytes(self, count: int) -> None:
        self.report.bytes += count
        if self.report.bytes > self.limits.max_bytes:
            raise InputError(f"{self.label}: over {self.limits.max_bytes:,} bytes once unpacked (AGENT_WORKSPACE_MAX_BYTES)")


def _copy_stream(source, target: Path, budget: _Budget, name: str, executable: bool) -> None:
    written = 0
    # "xb": a name that already exists (a duplicate member) is refused rather than written through.
    with open(target, "xb") as out:
        while True:
            chunk = source.read(_COPY_CHUNK)
            if not chunk:
                break
            written += len(chunk)
            if written > budget.limits.max_file_bytes:
                raise InputError(f"{budget.label}: {name} is over the per-file limit of {budget.limits.max_file_bytes:,} bytes")
            budget.add_bytes(len(chunk))
            out.write(chunk)
    os.chmod(target, 0o755 if executable else 0o644)


def ingest_directory(source: str | Path, dest: str | Path, *, limits: WorkspaceLimits | None = None) -> IngestReport:
    """Copy a workspace directory into `dest` (which must not exist), within the limits."""
    source, dest = Path(source), Path(dest)
    label = str(source)
    if not source.exists():
        raise InputError(f"{source}: no such directory")
    if not source.is_dir():
        raise InputError(f"{source}: not a directory (give the agent's workspace directory, or an archive of it)")
    budget = _Budget(limits or WorkspaceLimits(), label)
    real_root = os.path.realpath(source)
    dest.mkdir(parents=True)
    links: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in os.walk(source, followlinks=False):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, source)
        for name in list(dirnames) + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name)).replace(os.sep, "/")
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                target = os.path.realpath(full)
                if _inside(real_root, target):
                    links.append((rel, os.readlink(full)))
                else:
                    budget.report.skipped.append(f"{rel}: symbolic link to {os.readlink(full)}, which is outside the workspace")
                if name in dirnames:
                    dirnames.remove(name)
            elif stat.S_ISDIR(info.st_mode):
                (dest / rel).mkdir(mode=0o755, exist_ok=True)
            elif stat.S_ISREG(info.st_mode):
                budget.add_file(rel, info.st_size)
                with open(full, "rb") as f:
                    _copy_stream(f, dest / rel, budget, rel, bool(info.st_mode & 0o111))
            else:
                budget.report.skipped.append(f"{rel}: not a regular file (device, pipe or socket)")
    _make_links(dest, links, budget)
    return budget.report


def _make_links(dest: Path, links: list[tuple[str, str]], budget: _Budget) -> None:
    """Symbolic links last, so that no file is ever written through one; each must stay inside."""
    real_dest = os.path.realpath(dest)
    for rel, target in links:
        link = dest / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(link):
            budget.report.skipped.append(f"{rel}: symbolic link over an existing file, not created")
            continue
        os.symlink(target, link)
        if not _inside(real_dest, os.path.realpath(link)):
            os.unlink(link)
            budget.report.skipped.append(f"{rel}: symbolic link to {target}, which is outside the workspace")


def _member_path(name: str, label: str) -> str:
    """An archive member's path, normalised; InputError for one that is absolute or climbs out."""
    cleaned = name.replace("\\", "/")
    if cleaned.startswith("/") or (len(cleaned) > 1 and cleaned[1] == ":"):
        raise InputError(f"{label}: member {name!r} has an absolute path; the archive is refused")
    parts = [p for p in cleaned.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise InputError(f"{label}: member {name!r} leads outside the workspace ('..'); the archive is refused")
    return "/".join(parts)


@dataclass
class _Member:
    path: str
    kind: str  # file | dir | link | other
    size: int = 0
    link_target: str = ""
    executable: bool = False
    open: object = None  # () -> binary file object, for files


def _zip_members(archive: zipfile.ZipFile) -> Iterator[_Member]:
    for info in archive.infolist():
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            target = archive.read(info).decode("utf-8", errors="replace")
            yield _Member(info.filename, "link", link_target=target)
        elif info.is_dir():
            yield _Member(info.filename, "dir")
        else:
            yield _Member(info.filename, "file", size=info.file_size, executable=bool(mode & 0o111),
                          open=lambda info=info: archive.open(info))


def _tar_members(archive: tarfile.TarFile) -> Iterator[_Member]:
    for info in archive:
        if info.issym():
            yield _Member(info.name, "link", link_target=info.linkname)
        elif info.islnk():
            # A hard link: the content of another member, copied (never a link to a path outside).
            yield _Member(info.name, "hardlink", link_target=info.linkname)
        elif info.isdir():
            yield _Member(info.name, "dir")
        elif info.isfile():
            yield _Member(info.name, "file", size=info.size, executable=bool(info.mode & 0o111),
                          open=lambda info=info: archive.extractfile(info))
        else:
            yield _Member(info.name, "other")


def archive_kind(name: str, head: bytes) -> str | None:
    """'zip' or 'tar' from the file's first bytes (gzip, bzip2 and xz tars included), else None."""
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    if head[:2] == b"\x1f\x8b" or head[:3] == b"BZh" or head[:6] == b"\xfd7zXZ\x00" or head[257:262] == b"ustar":
        return "tar"
    return None


def ingest_archive(data: bytes | str | Path, name: str, dest: str | Path, *, limits: WorkspaceLimits | None = None,
                   mentioned: str = "") -> IngestReport:
    """Unpack a workspace archive (.zip, .tar, .tar.gz, .tgz, .tar.bz2, .tar.xz) into `dest` (which must
    not exist). A single top-level directory holding everything is unwrapped, unless `mentioned` (the task
    and checklist) names a path under it."""
    dest = Path(dest)
    label = name
    budget = _Budget(limits or WorkspaceLimits(), label)
    stream = io.BytesIO(data) if isinstance(data, bytes) else open(data, "rb")
    try:
        head = stream.read(512)
        stream.seek(0)
        kind = archive_kind(name, head)
        if kind is None:
            raise InputError(f"{label}: not a zip or tar archive (upload the workspace as .zip, .tar.gz or .tar)")
        try:
            if kind == "zip":
                archive = zipfile.ZipFile(stream)
                members = list(_zip_members(archive))
            else:
                archive = tarfile.open(fileobj=stream, mode="r:*")
                members = list(_tar_members(archive))
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
            raise InputError(f"{label}: the archive cannot be read ({exc})") from None
        with archive:
            _extract(members, dest, budget, mentioned)
    finally:
        stream.close()
    return budget.report


def _archive_stem(name: str) -> str:
    base = os.path.basename(name.replace("\\", "/"))
    for suffix in (".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".tar", ".zip"):
        if base.lower().endswith(suffix):
            return base[: -len(suffix)]
    return base


def _extract(members: list[_Member], dest: Path, budget: _Budget, mentioned: str) -> None:
    label = budget.label
    for member in members:
        member.path = _member_path(member.path, label)
    members = [m for m in members if m.path]
    if len(members) > budget.limits.max_files * 2:
        raise InputError(f"{label}: more than {budget.limits.max_files:,} files (AGENT_WORKSPACE_MAX_FILES)")
    # Zipping a folder (or a forge's download) wraps everything in one directory: unwrap it, unless the
    # task or checklist names paths under it (a workspace whose only content is out/ or src/).
    tops = {m.path.split("/", 1)[0] for m in members}
    top = next(iter(tops)) if len(tops) == 1 and any("/" in m.path for m in members) else None
    if top and (top == _archive_stem(label) or not re.search(rf"(?<![\w.-]){re.escape(top)}/", mentioned)):
        if all(m.path == top and m.kind == "dir" or m.path.startswith(top + "/") for m in members):
            for m in members:
                m.path = m.path[len(top) + 1:] if m.path != top else ""
                if m.kind == "hardlink":
                    m.link_target = _member_path(m.link_target, label)
                    m.link_target = m.link_target[len(top) + 1:] if m.link_target.startswith(top + "/") else m.link_target
            members = [m for m in members if m.path]
            budget.report.unwrapped = f"{top}/"
    dest.mkdir(parents=True)
    files: dict[str, Path] = {}
    links: list[tuple[str, str]] = []
    for member in members:
        target = dest / member.path
        if member.kind == "dir":
            target.mkdir(mode=0o755, parents=True, exist_ok=True)
        elif member.kind == "file":
            budget.add_file(member.path, member.size)
            target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            if os.path.lexists(target):
                budget.report.skipped.append(f"{member.path}: appears twice in the archive; the first copy is kept")
                continue
            with member.open() as source:
                _copy_stream(source, target, budget, member.path, member.executable)
            files[member.path] = target
        elif member.kind == "hardlink":
            origin = posixpath.normpath(member.link_target)
            if origin not in files:
                budget.report.skipped.append(f"{member.path}: hard link to {member.link_target}, which is not in the archive")
                continue
            size = files[origin].stat().st_size
            budget.add_file(member.path, size)
            budget.add_bytes(size)
            target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            shutil.copyfile(files[origin], target)
        elif member.kind == "link":
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(member.path), member.link_target))
            if member.link_target.startswith("/") or resolved == ".." or resolved.startswith("../"):
                budget.report.skipped.append(
                    f"{member.path}: symbolic link to {member.link_target}, which is outside the workspace"
                )
            else:
                links.append((member.path, member.link_target))
        else:
            budget.report.skipped.append(f"{member.path}: not a regular file (device, pipe or socket)")
    _make_links(dest, links, budget)
