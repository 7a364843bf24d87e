"""Running a workspace file for the judge: in a bubblewrap sandbox that sees only a copy of the workspace.

Each call builds a fresh root with bubblewrap (`bwrap`, Debian's `bubblewrap` package, what Flatpak relies
on) instead of hand-written namespace code. What the program finds there:

- `/workspace`, its working directory: a copy of the workspace on a size-capped tmpfs. The copy is streamed
  in as a tar on standard input, so no host path of the workspace is mounted, the program may write its
  outputs into its copy, and the copy is gone when the call ends;
- the language runtime, read-only: `/usr` (and the `/bin`, `/lib`… links or directories beside it), and the
  configured Python's installation when it lives elsewhere. The app's own source, virtual environment and
  data are never mounted (and hidden under an empty mount, should they lie inside the runtime);
- `/etc` holds a generated passwd, group, hosts and hostname, the dynamic linker's cache and the
  alternatives links, nothing else of the host's;
- private, size-capped tmpfs at `/tmp`, `/dev/shm` and `/run`; a minimal `/dev`; the `/proc` of its own
  PID namespace; the root itself read-only.

Every namespace is new (`--unshare-all --unshare-user`): the network has only a loopback, no host path
means no host Unix socket (PostgreSQL's, MariaDB's, Redis's), and IPC, PID, UTS and cgroup are its own;
no further user namespace can be made inside (`--disable-userns`). `--die-with-parent`, `--new-session`
and `--clearenv` (a minimal PATH, HOME, LANG). As root, bwrap itself runs as `nobody`, so nothing in the
sandbox is root outside it. Limits: `prlimit` (util-linux) sets memory, processes, CPU time, file size and
open files for the program inside its namespace (the process count is per sandbox); the tmpfs sizes cap
the disk; the wall-clock timeout kills bwrap, whose death kills the whole PID namespace; the output is cut
to a head and a tail.

Isolation is checked once per process (`sandbox_status`): bwrap must be installed and a self-check run in
the sandbox must find what is described above. When it is not, nothing is run: the judge is not offered the
tool, a call to it answers why, and the report says why.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

MODE = "bubblewrap"
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
WORKDIR = "/workspace"
NOBODY = 65534
# The identity inside, the same on every machine, so that a run's output (and the response cache's key of
# the judge's next turn) does not depend on which user ran the worker.
INNER_UID = 1000
SETUP_FAILED = 125
RUN_TMPFS_BYTES = 1024 * 1024
_PAGE = 4096
# What a system keeps its programs and libraries in; bound read-only (or re-created as the same links).
RUNTIME_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Host files of /etc a program may need and that hold nothing about the machine's users or services.
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
# The judgeapp package: never shown to the program, wherever it is installed.
APP_PACKAGE = Path(__file__).resolve().parents[2]
SANDBOX_ENV = {
    "PATH": SANDBOX_PATH,
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "TMPDIR": "/tmp",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "MPLBACKEND": "Agg",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}
_GENERATED_ETC = {
    "/etc/passwd": f"sandbox:x:{INNER_UID}:{INNER_UID}:sandbox:/tmp:/bin/sh\n"
                   f"nobody:x:{NOBODY}:{NOBODY}:nobody:/nonexistent:/usr/sbin/nologin\n",
    "/etc/group": f"sandbox:x:{INNER_UID}:\nnogroup:x:{NOBODY}:\n",
    "/etc/hosts": "127.0.0.1 localhost sandbox\n::1 localhost\n",
    "/etc/hostname": "sandbox\n",
}
# The first thing run inside: it prints its name ($0, a token new for every call: the host then knows that
# bwrap set the sandbox up, and takes the line out of the output), unpacks the workspace copy from standard
# input, then runs the program (its arguments) with standard input empty.
_UNPACK_AND_RUN = (
    'printf "%s\\n" "$0"; '
    f'if ! err=$(tar -x -f - -C {WORKDIR} --no-same-owner 2>&1); then '
    'printf "sandbox: cannot unpack the workspace copy: %s\\n" "$err"; exit 125; fi; '
    'exec "$@" </dev/null'
)
# The self-check, run inside a real sandbox: what is described above, or a line saying what is not.
_SELF_CHECK = (
    "fail() { echo \"sandbox: $1\"; exit 125; }; "
    "[ -z \"$(tail -n +3 /proc/net/dev | grep -v '^ *lo:')\" ] || fail 'the network is not isolated'; "
    "! touch /probe 2>/dev/null || fail 'the root is writable'; "
    "! grep -q '^root:' /etc/passwd || fail \"the host's /etc/passwd is visible\"; "
    "for d in /workspace /tmp /dev/shm /run; do touch $d/.probe 2>/dev/null || fail \"$d is not writable\"; done; "
    "[ \"$(id -u)\" = " + str(INNER_UID) + " ] || fail 'not running as the sandbox user'; "
    "[ -z \"$OPENAI_API_KEY$DATABASE_URL\" ] || fail 'the environment is not cleared'; "
    "out=$(\"$1\" -I -S -c 'print(6 * 7)' 2>&1) && [ \"$out\" = 42 ] || "
    "fail \"the Python interpreter $1 does not run in the sandbox: $(echo \"$out\" | tail -n 1)\"; "
    "echo ok"
)
# Signals the kernel sends when a limit is reached, and what the judge is told.
_SIGNAL_LIMITS = {signal.SIGXCPU: "CPU time", signal.SIGXFSZ: "file size", signal.SIGKILL: "killed"}
# What a program prints when a limit refused it (strerror texts, Python's exception names).
_LIMIT_MESSAGES = (
    ("disk", re.compile(r"No space left on device|ENOSPC|Disk quota exceeded")),
    ("file size", re.compile(r"File too large|EFBIG|File size limit exceeded")),
    ("CPU time", re.compile(r"CPU time limit exceeded")),
    ("memory", re.compile(r"MemoryError|Cannot allocate memory|ENOMEM|std::bad_alloc")),
    ("processes", re.compile(r"Resource temporarily unavailable|BlockingIOError|EAGAIN|fork: retry|Cannot fork")),
)

_WORKDIR_PREFIX = re.compile(rf"(?<![\w/.-]){WORKDIR}/")
# What the sandbox refuses, as the report and the tool's answers say it.
REFUSES = (
    "network (only a loopback interface)",
    "host files, directories and Unix sockets (only the workspace copy and the runtime, read-only)",
    "writes outside the workspace copy, /tmp, /dev/shm and /run (private, size-capped tmpfs, discarded)",
    "the app's environment variables (cleared)",
    "other processes (its own PID, IPC, UTS and user namespaces)",
)


class SandboxError(Exception):
    """The sandbox could not run the file (it is unavailable, or could not be set up)."""


@dataclass(frozen=True)
class SandboxLimits:
    timeout_seconds: float = 30.0
    memory_bytes: int = 512 * 1024 * 1024
    max_processes: int = 64
    file_bytes: int = 50 * 1024 * 1024
    disk_bytes: int = 64 * 1024 * 1024
    output_bytes: int = 8_000

    def as_dict(self) -> dict:
        mb = 1024 * 1024
        return {
            "timeout_seconds": self.timeout_seconds,
            "memory_mb": self.memory_bytes // mb,
            "max_processes": self.max_processes,
            "file_mb": self.file_bytes // mb,
            "disk_mb": self.disk_bytes // mb,
            "output_bytes": self.output_bytes,
        }

    def describe(self) -> str:
        return (
            f"{self.timeout_seconds:g} s, {self.memory_bytes // (1024 * 1024)} MB memory, {self.max_processes} processes, "
            f"{self.disk_bytes // (1024 * 1024)} MB disk, {self.file_bytes // (1024 * 1024)} MB a file"
        )


@dataclass(frozen=True)
class SandboxStatus:
    available: bool
    mode: str = ""  # "bubblewrap"
    reason: str = ""
    version: str = ""

    def as_dict(self) -> dict:
        return {
            "available": self.available,
            "mode": self.mode,
            "version": self.version,
            "network": "none" if self.available else "not run",
            "reason": self.reason,
            "refuses": list(REFUSES) if self.available else [],
        }


@dataclass
class RunResult:
    command: str
    exit_code: int | None
    output: str
    output_bytes: int
    truncated: bool
    timed_out: bool
    seconds: float
    limits_hit: list[str] = field(default_factory=list)


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _install_prefixes(python: str) -> list[str]:
    """The installation directories an interpreter needs (its own and, for a venv, its base), real paths."""
    prefixes = []
    for interpreter in dict.fromkeys([python, os.path.realpath(python)]):
        prefix = Path(interpreter).parent.parent
        prefixes.append(os.path.realpath(prefix))
        config = prefix / "pyvenv.cfg"
        if config.is_file():
            for line in config.read_text(errors="replace").splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip():
                    prefixes.append(os.path.realpath(Path(value.strip()).parent))
    return list(dict.fromkeys(prefixes))


def _own_environment() -> list[str]:
    """Where the app runs from: its package and, when it runs in a venv, that venv."""
    own = [str(APP_PACKAGE)]
    if sys.prefix != sys.base_prefix:
        own.append(os.path.realpath(sys.prefix))
    return own


def _runtime_binds(python: str, hidden: tuple[str, ...]) -> list[str]:
    """bwrap arguments for the runtime, read-only; SandboxError when it would show the app itself."""
    args: list[str] = []
    bound: list[str] = []
    for path in RUNTIME_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
            bound.append(os.path.realpath(path))
    secret = [os.path.realpath(p) for p in (*_own_environment(), *hidden)]
    for prefix in _install_prefixes(python):
        if any(_inside(prefix, b) for b in bound):
            continue
        if prefix == "/" or any(_inside(s, prefix) or _inside(prefix, s) for s in secret):
            raise SandboxError(
                f"the sandbox's Python ({python}) is installed in {prefix}, which holds the app's own code, "
                "environment or data; set AGENT_SANDBOX_PYTHON to a system Python or a venv of its own"
            )
        args += ["--ro-bind", prefix, prefix]
        bound.append(prefix)
    for path in secret:  # inside the runtime (an installed package, a venv under /usr): an empty mount over it
        if os.path.isdir(path) and any(_inside(path, b) for b in bound):
            args += ["--size", str(_PAGE), "--tmpfs", path, "--remount-ro", path]
    for path in ETC_FILES:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def _workspace_bytes(root: Path | None) -> int:
    """What the copy takes on a tmpfs: every file rounded up to whole pages, and a page per entry."""
    total = 0
    if root is None:
        return total
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            info = os.lstat(os.path.join(dirpath, name))
            total += _PAGE + (-(-info.st_size // _PAGE) * _PAGE if not os.path.islink(os.path.join(dirpath, name)) else 0)
    return total


def _tar_filter(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    # Owned by whoever unpacks it, readable and writable by the program (an agent may leave a file 0400).
    if not (info.isfile() or info.isdir() or info.issym() or info.islnk()):
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode |= 0o700 if info.isdir() else 0o600
    return info


def _stream_workspace(root: Path | None, pipe) -> None:
    """Write the workspace as a tar stream to the sandbox's standard input (symlinks as links)."""
    try:
        with tarfile.open(fileobj=pipe, mode="w|", format=tarfile.PAX_FORMAT) as archive:
            if root is not None:
                for entry in sorted(root.iterdir(), key=lambda p: p.name):
                    archive.add(entry, arcname=entry.name, recursive=True, filter=_tar_filter)
    except (BrokenPipeError, ValueError, OSError):
        pass  # the sandbox stopped reading (its disk cap, a kill); it says so itself
    finally:
        try:
            pipe.close()
        except OSError:
            pass


def _data_fd(text: str) -> int:
    """A pipe's read end holding `text` (small: it fits the pipe's buffer), for bwrap's --ro-bind-data."""
    read, write = os.pipe()
    os.write(write, text.encode())
    os.close(write)
    return read


def _bwrap_version() -> str:
    try:
        done = subprocess.run(
            ["bwrap", "--version"], check=False, capture_output=True, text=True, timeout=10, env={"PATH": SANDBOX_PATH}
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip()


class Sandbox:
    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        python: str = "python3",
        status: SandboxStatus | None = None,
        hidden: tuple[str, ...] | list[str] = (),
    ):
        self.limits = limits or SandboxLimits()
        self.python = shutil.which(python, path=SANDBOX_PATH) or python
        self.hidden = tuple(str(h) for h in hidden)  # host paths never to show (the app's directory, DATA_DIR)
        self._status = status

    @property
    def status(self) -> SandboxStatus:
        return self._status or sandbox_status(self.python, self.hidden)

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
            raise SandboxError(f"the sandbox is unavailable: {status.reason}; nothing was run")
        args = list(args or [])
        source = Path(workspace_root)
        executable = os.access(source / rel_path, os.X_OK)
        argv, shown = self.command_line(rel_path, args, executable)
        interpreter = _interpreter(rel_path, self.python)
        if interpreter and not os.path.isabs(interpreter[0]):
            raise SandboxError(f"no {interpreter[0]} interpreter found on {SANDBOX_PATH}")
        result = self.execute(source, argv, shown)
        # Paths as the judge's other tools show them, relative to the workspace root.
        result.output = _WORKDIR_PREFIX.sub("", result.output)
        return result

    # --- the bwrap command --------------------------------------------------------------------------------

    def bwrap_argv(self, workspace_bytes: int, data_fds: dict[str, int]) -> list[str]:
        limits = self.limits
        argv = [
            "bwrap",
            "--unshare-all", "--unshare-user", "--disable-userns",
            "--uid", str(INNER_UID), "--gid", str(INNER_UID), "--hostname", "sandbox",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--clearenv",
        ]
        for name, value in SANDBOX_ENV.items():
            argv += ["--setenv", name, value]
        argv += _runtime_binds(self.python, self.hidden)
        for path, fd in data_fds.items():
            argv += ["--perms", "0644", "--ro-bind-data", str(fd), path]
        argv += [
            "--proc", "/proc",
            "--dev", "/dev",
            "--size", str(limits.disk_bytes), "--tmpfs", "/dev/shm",
            "--size", str(limits.disk_bytes), "--tmpfs", "/tmp",
            "--size", str(RUN_TMPFS_BYTES), "--tmpfs", "/run",
            "--dir", "/var", "--symlink", "../run", "/var/run", "--symlink", "../tmp", "/var/tmp",
            "--size", str(workspace_bytes + limits.disk_bytes), "--tmpfs", WORKDIR,
            "--chdir", WORKDIR,
            "--remount-ro", "/",
            "--",
        ]
        return argv

    def prlimit_argv(self) -> list[str]:
        limits = self.limits
        return [
            "prlimit",
            f"--as={limits.memory_bytes}", f"--nproc={limits.max_processes}",
            f"--cpu={max(1, int(limits.timeout_seconds) + 1)}", f"--fsize={limits.file_bytes}",
            "--nofile=256", "--core=0", "--",
        ]

    def execute(self, workspace_root: Path | None, argv: list[str], shown: str) -> RunResult:
        """Run `argv` in a fresh sandbox over a copy of `workspace_root` (None: an empty workspace)."""
        data_fds = {path: _data_fd(text) for path, text in _GENERATED_ETC.items()}
        token = f"sandbox-started-{secrets.token_hex(8)}"
        try:
            inner = ["/bin/sh", "-c", _UNPACK_AND_RUN, token, *self.prlimit_argv(), *argv]
            command = self.bwrap_argv(_workspace_bytes(workspace_root), data_fds) + inner
            as_nobody = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if os.geteuid() == 0 else {}
            started = time.monotonic()
            try:
                process = subprocess.Popen(
                    command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    start_new_session=True, env={"PATH": SANDBOX_PATH}, cwd="/",
                    pass_fds=tuple(data_fds.values()), **as_nobody,
                )
            except OSError as exc:
                raise SandboxError(f"cannot start bwrap: {exc.strerror or exc}") from None
        finally:
            for fd in data_fds.values():
                os.close(fd)
        result = self._supervise(process, workspace_root, shown, started)
        line = token + "\n"
        if not result.output.startswith(line):
            # bwrap stopped before the sandbox ran anything: what it printed says why.
            first = result.output.strip().splitlines()[0] if result.output.strip() else f"exit {result.exit_code}"
            raise SandboxError(f"the sandbox could not be set up: {first}")
        result.output = result.output[len(line):]
        result.output_bytes -= len(line)
        if result.exit_code == SETUP_FAILED and result.output.startswith("sandbox:"):
            raise SandboxError(result.output.strip().splitlines()[0])
        return result

    def _supervise(self, process: subprocess.Popen, workspace_root: Path | None, shown: str, started: float) -> RunResult:
        writer = threading.Thread(target=_stream_workspace, args=(workspace_root, process.stdin), daemon=True)
        writer.start()
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
        # Every process of the sandbox holds its output pipe: the end of the output is the end of them all.
        reader.join(timeout=10)
        writer.join(timeout=5)
        process.stdout.close()
        seconds = time.monotonic() - started
        raw = bytes(head) + bytes(tail)
        truncated = total > len(raw)
        text = bytes(head).decode("utf-8", errors="replace")
        if truncated:
            text += f"\n[… {total - len(raw):,} bytes of output left out …]\n"
        if tail:
            text += bytes(tail).decode("utf-8", errors="replace")
        exit_code = None if timed_out else process.returncode
        return RunResult(
            command=shown,
            exit_code=exit_code,
            output=text,
            output_bytes=total,
            truncated=truncated,
            timed_out=timed_out,
            seconds=round(seconds, 2),
            limits_hit=_limits_hit(exit_code, timed_out, text),
        )


def _limits_hit(exit_code: int | None, timed_out: bool, output: str) -> list[str]:
    """Which limits the program ran into, as far as its exit and its output tell."""
    hit = ["time"] if timed_out else []
    if exit_code is not None and exit_code > 128 and (exit_code - 128) in _SIGNAL_LIMITS:
        name = _SIGNAL_LIMITS[exit_code - 128]
        if name != "killed":
            hit.append(name)
    for name, pattern in _LIMIT_MESSAGES:
        if pattern.search(output) and name not in hit:
            hit.append(name)
    return hit


def _interpreter(path: str, python: str) -> list[str] | None:
    suffix = Path(path).suffix.lower()
    if suffix == ".py":
        return [python]
    if suffix in (".sh", ".bash"):
        return ["/bin/bash" if suffix == ".bash" and os.path.exists("/bin/bash") else "/bin/sh"]
    return None


@functools.lru_cache(maxsize=8)
def sandbox_status(python: str = "python3", hidden: tuple[str, ...] = ()) -> SandboxStatus:
    """Whether this machine gives the isolation described above, found once per process: bwrap is
    installed, and a self-check run in a real sandbox finds no network, no host file, a read-only root,
    writable private directories, a cleared environment and a Python that starts."""
    if not sys.platform.startswith("linux"):
        return SandboxStatus(False, reason="the sandbox needs Linux (bubblewrap)")
    if shutil.which("bwrap", path=SANDBOX_PATH) is None:
        return SandboxStatus(False, reason="bubblewrap is not installed (apt-get install bubblewrap)")
    if shutil.which("prlimit", path=SANDBOX_PATH) is None:
        return SandboxStatus(False, reason="prlimit (util-linux) is not installed")
    interpreter = shutil.which(python, path=SANDBOX_PATH)
    if interpreter is None:
        return SandboxStatus(
            False, mode=MODE, reason=f"the sandbox's Python ({python}, AGENT_SANDBOX_PYTHON) is not found on {SANDBOX_PATH}"
        )
    version = _bwrap_version()
    probe = Sandbox(SandboxLimits(timeout_seconds=20), python=python, hidden=hidden,
                    status=SandboxStatus(True, mode=MODE, version=version))
    try:
        result = probe.execute(None, ["/bin/sh", "-c", _SELF_CHECK, "self-check", probe.python], "self-check")
    except SandboxError as exc:
        return SandboxStatus(False, mode=MODE, version=version, reason=f"bubblewrap fails its self-check: {exc}")
    lines = result.output.strip().splitlines()
    if result.timed_out or result.exit_code != 0 or lines[-1:] != ["ok"]:
        why = lines[-1] if lines else f"exit {result.exit_code}"
        return SandboxStatus(False, mode=MODE, version=version, reason=f"bubblewrap fails its self-check: {why}")
    return SandboxStatus(True, mode=MODE, version=version)


def _kill(process: subprocess.Popen) -> None:
    """SIGKILL bwrap's process group: with bwrap dies the namespace's PID 1, and everything in it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
