"""Running a workspace file for the judge: on a throw-away copy, in namespaces with no network.

`run` copies the workspace into a fresh temporary directory and starts the file there through
`sandbox_init.py` inside new network, mount and PID namespaces (`unshare`). The network namespace has
no interface but the loopback, so nothing can be reached; every mount but the copy is read-only, so the
original workspace (and the rest of the machine) cannot be written; as root the program runs as `nobody`;
memory, processes, CPU time and file size are limited; the wall-clock timeout kills the whole namespace;
the output is cut to a head and a tail. The copy is deleted afterwards.

Isolation is checked once per process: as root, `unshare --net --mount --pid`; otherwise an unprivileged
user namespace (`unshare --user --map-root-user …`, which needs kernel.unprivileged_userns_clone or
user.max_user_namespaces > 0). When neither works the sandbox is unavailable and nothing is run: the
judge is not offered the tool, and the report says why. Code never runs with the network reachable.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

INIT_SCRIPT = Path(__file__).resolve().parent / "sandbox_init.py"
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
NOBODY = 65534
SETUP_FAILED = 125
_NAMESPACES = ["--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"]
_MODES = {
    "root": ["unshare", *_NAMESPACES],
    "user namespace": ["unshare", "--user", "--map-root-user", *_NAMESPACES],
}


class SandboxError(Exception):
    """The sandbox could not run the file (it is unavailable, or could not be set up)."""


@dataclass(frozen=True)
class SandboxLimits:
    timeout_seconds: float = 30.0
    memory_bytes: int = 512 * 1024 * 1024
    max_processes: int = 64
    file_bytes: int = 50 * 1024 * 1024
    output_bytes: int = 8_000

    def as_dict(self) -> dict:
        return {
            "timeout_seconds": self.timeout_seconds,
            "memory_mb": self.memory_bytes // (1024 * 1024),
            "max_processes": self.max_processes,
            "file_mb": self.file_bytes // (1024 * 1024),
            "output_bytes": self.output_bytes,
        }


@dataclass(frozen=True)
class SandboxStatus:
    available: bool
    mode: str = ""  # "root" or "user namespace"
    reason: str = ""

    def as_dict(self) -> dict:
        return {"available": self.available, "mode": self.mode, "network": "none" if self.available else "not run", "reason": self.reason}


@dataclass
class RunResult:
    command: str
    exit_code: int | None
    output: str
    output_bytes: int
    truncated: bool
    timed_out: bool
    seconds: float


def _mode_argv(mode: str) -> list[str]:
    return list(_MODES[mode])


def _init_argv(root: Path, limits: SandboxLimits, *, check: bool = False) -> list[str]:
    argv = [
        sys.executable, "-I", "-S", str(INIT_SCRIPT),
        "--root", str(root), "--workdir", str(root / "work"),
        "--memory-bytes", str(limits.memory_bytes), "--max-processes", str(limits.max_processes),
        "--cpu-seconds", str(max(1, int(limits.timeout_seconds) + 1)), "--file-bytes", str(limits.file_bytes),
    ]
    return argv + ["--check"] if check else argv


def _make_root(owner_uid: int | None) -> Path:
    root = Path(tempfile.mkdtemp(prefix="judgeapp-sandbox-"))
    for sub in ("work", "tmp", "home"):
        (root / sub).mkdir()
    os.chmod(root, 0o755)
    if owner_uid is not None:
        _chown_tree(root, owner_uid)
    return root


def _chown_tree(root: Path, uid: int) -> None:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        os.lchown(dirpath, uid, uid)
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, uid)


def _remove(root: Path) -> None:
    def retry(function, path, _exc):
        # A program may leave a directory without write permission; give it back, then remove.
        try:
            os.chmod(os.path.dirname(path), 0o755)
            os.chmod(path, 0o755)
            function(path)
        except OSError:
            pass

    shutil.rmtree(root, onerror=retry)


def _probe(mode: str) -> str:
    """'' when the mode sets up (network isolated, mounts locked), else the reason it does not."""
    if shutil.which("unshare") is None:
        return "the unshare command (util-linux) is not installed"
    root = _make_root(NOBODY if mode == "root" else None)
    try:
        done = subprocess.run(
            _mode_argv(mode) + _init_argv(root, SandboxLimits(), check=True),
            capture_output=True, text=True, timeout=20, env={"PATH": SANDBOX_PATH},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{mode}: {exc}"
    finally:
        _remove(root)
    if done.returncode == 0:
        return ""
    return f"{mode}: {(done.stderr or done.stdout).strip().splitlines()[-1] if (done.stderr or done.stdout).strip() else f'exit {done.returncode}'}"


@functools.lru_cache(maxsize=1)
def sandbox_status() -> SandboxStatus:
    """Which isolation this machine gives, found once per process."""
    if not sys.platform.startswith("linux"):
        return SandboxStatus(False, reason="the sandbox needs Linux namespaces (unshare)")
    reasons = []
    modes = ["root", "user namespace"] if os.geteuid() == 0 else ["user namespace"]
    for mode in modes:
        reason = _probe(mode)
        if not reason:
            return SandboxStatus(True, mode=mode)
        reasons.append(reason)
    return SandboxStatus(
        False,
        reason="no network isolation available (" + "; ".join(reasons) + "). Run the worker as root, or allow "
        "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces>0)",
    )


def _interpreter(path: str, python: str) -> list[str] | None:
    suffix = Path(path).suffix.lower()
    if suffix == ".py":
        return [python]
    if suffix in (".sh", ".bash"):
        return ["/bin/bash" if suffix == ".bash" and os.path.exists("/bin/bash") else "/bin/sh"]
    return None


class Sandbox:
    def __init__(self, limits: SandboxLimits | None = None, *, python: str = "python3", status: SandboxStatus | None = None):
        self.limits = limits or SandboxLimits()
        self.python = shutil.which(python, path=SANDBOX_PATH) or python
        self._status = status

    @property
    def status(self) -> SandboxStatus:
        return self._status or sandbox_status()

    def command_line(self, rel_path: str, args: list[str], executable: bool) -> tuple[list[str], str]:
        """(argv inside the sandbox, the command as a person would type it)."""
        interpreter = _interpreter(rel_path, self.python)
        shown_interpreter = [os.path.basename(interpreter[0])] if interpreter else []
        if interpreter is None:
            if not executable:
                raise SandboxError(f"{rel_path}: not a .py or .sh file and not executable; cannot run it")
            argv = [f"./{rel_path}", *args]
        else:
            argv = [*interpreter, rel_path, *args]
        shown = " ".join(shlex.quote(a) for a in [*shown_interpreter, *([rel_path] if interpreter else [f"./{rel_path}"]), *args])
        return argv, shown

    def run(self, workspace_root: str | Path, rel_path: str, args: list[str] | None = None) -> RunResult:
        """Run `rel_path` of the workspace on a throw-away copy; the workspace itself is never touched."""
        status = self.status
        if not status.available:
            raise SandboxError(f"the sandbox is unavailable: {status.reason}")
        args = list(args or [])
        source = Path(workspace_root)
        executable = os.access(source / rel_path, os.X_OK)
        argv, shown = self.command_line(rel_path, args, executable)
        interpreter = _interpreter(rel_path, self.python)
        if interpreter and not os.path.isabs(interpreter[0]):
            raise SandboxError(f"no {interpreter[0]} interpreter found on {SANDBOX_PATH}")
        root = _make_root(None)
        try:
            shutil.copytree(source, root / "work", symlinks=True, dirs_exist_ok=True)
            if status.mode == "root":
                _chown_tree(root, NOBODY)
            result = self._execute(_mode_argv(status.mode) + _init_argv(root, self.limits) + ["--", *argv], shown)
            # The copy's temporary path means nothing to the judge and would make every run's output
            # differ (and miss the response cache on a replay): show paths relative to the workspace.
            result.output = result.output.replace(f"{root}/work/", "").replace(str(root), "<sandbox>")
            return result
        finally:
            _remove(root)

    def _execute(self, argv: list[str], shown: str) -> RunResult:
        started = time.monotonic()
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, env={"PATH": SANDBOX_PATH},
        )
        half = self.limits.output_bytes // 2
        head, tail = bytearray(), bytearray()
        total = 0

        def drain() -> None:
            nonlocal total
            # Keep the first and the last half of the limit; read (and drop) the rest so the program never
            # blocks on a full pipe.
            for chunk in iter(lambda: process.stdout.read(4096), b""):
                total += len(chunk)
                if len(head) < half:
                    take = chunk[: half - len(head)]
                    head.extend(take)
                    chunk = chunk[len(take):]
                if chunk:
                    tail.extend(chunk)
                    del tail[: max(0, len(tail) - half)]

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        timed_out = False
        try:
            process.wait(timeout=self.limits.timeout_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill(process)
        except BaseException:
            _kill(process)  # a task's time limit or an interrupt: nothing may outlive the call
            raise
        reader.join(timeout=5)
        process.stdout.close()
        seconds = time.monotonic() - started
        raw = bytes(head) + bytes(tail)
        truncated = total > len(raw)
        text = bytes(head).decode("utf-8", errors="replace")
        if truncated:
            text += f"\n[… {total - len(raw):,} bytes of output left out …]\n"
        if tail:
            text += bytes(tail).decode("utf-8", errors="replace")
        if process.returncode == SETUP_FAILED and text.startswith("sandbox:"):
            raise SandboxError(text.strip().splitlines()[0])
        return RunResult(
            command=shown,
            exit_code=None if timed_out else process.returncode,
            output=text,
            output_bytes=total,
            truncated=truncated,
            timed_out=timed_out,
            seconds=round(seconds, 2),
        )




def _kill(process: subprocess.Popen) -> None:
    """SIGKILL the process group: unshare and the namespace's PID 1, whose death kills everything in it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
