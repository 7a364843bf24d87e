"""The first process inside the sandbox's namespaces: it locks the file system down, drops privileges,
sets the resource limits and starts the program. Standard library only; run as a script by sandbox.py:

    unshare --net --mount --pid --fork --kill-child --mount-proc python sandbox_init.py [options] -- argv...

Inside fresh network, mount and PID namespaces it
1. checks that the only network interface is the loopback (no route out), else refuses;
2. turns the sandbox directory into its own mount, then makes every other mount read-only, so that a
   program can write nowhere but its throw-away copy of the workspace (the original stays unchanged);
3. drops to an unprivileged user when it is really root (outside a user namespace);
4. sets memory, process, CPU-time, file-size and open-file limits;
5. forks the program and waits for it, as PID 1 of the namespace: when this process ends, the kernel
   kills every process the program left behind.

Exit status 125 with a line starting "sandbox:" on stderr means the sandbox itself could not be set up.
"""

import argparse
import ctypes
import ctypes.util
import os
import resource
import signal
import socket
import sys

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MS_STRICTATIME = 1 << 24
_OPTION_FLAGS = {
    "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME,
}
# Kernel file systems whose mounts stay as they are: nothing of the host can be written through them by
# an unprivileged process, and /dev/null must stay writable.
_KEEP_PREFIXES = ("/proc", "/sys", "/dev")
SETUP_FAILED = 125


def fail(message: str) -> "None":
    sys.stderr.write(f"sandbox: {message}\n")
    sys.stderr.flush()
    os._exit(SETUP_FAILED)


_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)


def mount(source, target, fstype, flags, data=None) -> None:
    enc = lambda v: v.encode() if isinstance(v, str) else v  # noqa: E731
    if _libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno), target)


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal.
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def mount_points() -> list[tuple[str, int]]:
    """(mount point, its per-mount flags) of every mount in this namespace, outermost first."""
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point, options = _unescape(fields[4]), fields[5].split(",")
            flags = 0
            for option in options:
                flags |= _OPTION_FLAGS.get(option, 0)
            points.append((point, flags))
    return points


def check_network() -> None:
    names = [name for _index, name in socket.if_nameindex()]
    if names != ["lo"]:
        fail(f"the network is not isolated (interfaces: {', '.join(names)})")


def lock_file_system(writable: str) -> None:
    """Every mount read-only except `writable` (made a mount of its own first) and kernel file systems."""
    try:
        mount(None, "/", None, MS_REC | MS_PRIVATE)
        mount(writable, writable, None, MS_BIND | MS_REC)
    except OSError as exc:
        fail(f"cannot prepare the mounts: {exc}")
    for point, flags in mount_points():
        if point == writable or point.startswith(writable + "/"):
            continue
        if any(point == p or point.startswith(p + "/") for p in _KEEP_PREFIXES):
            continue
        try:
            mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except OSError as exc:
            fail(f"cannot make {point} read-only: {exc}")


def really_root() -> bool:
    """Root of the initial user namespace (not the mapped root of a user namespace)."""
    if os.geteuid() != 0:
        return False
    with open("/proc/self/uid_map") as f:
        first = f.read().split()
    return first[:3] == ["0", "0", "4294967295"]


def set_limits(args) -> None:
    limits = [
        (resource.RLIMIT_AS, args.memory_bytes),
        (resource.RLIMIT_NPROC, args.max_processes),
        (resource.RLIMIT_CPU, args.cpu_seconds),
        (resource.RLIMIT_FSIZE, args.file_bytes),
        (resource.RLIMIT_NOFILE, 256),
        (resource.RLIMIT_CORE, 0),
    ]
    for which, value in limits:
        resource.setrlimit(which, (value, value))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True, help="the sandbox directory (writable): work/, tmp/, home/")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--uid", type=int, default=65534)
    parser.add_argument("--gid", type=int, default=65534)
    parser.add_argument("--memory-bytes", type=int, required=True)
    parser.add_argument("--max-processes", type=int, required=True)
    parser.add_argument("--cpu-seconds", type=int, required=True)
    parser.add_argument("--file-bytes", type=int, required=True)
    parser.add_argument("--check", action="store_true", help="set everything up, run nothing, exit 0")
    parser.add_argument("argv", nargs="*")
    args = parser.parse_args()

    check_network()
    lock_file_system(os.path.realpath(args.root))
    if really_root():
        try:
            os.setgroups([])
            os.setgid(args.gid)
            os.setuid(args.uid)
        except OSError as exc:
            fail(f"cannot drop privileges: {exc}")
    if args.check:
        os._exit(0)
    if not args.argv:
        fail("nothing to run")
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": os.path.join(args.root, "home"),
        "TMPDIR": os.path.join(args.root, "tmp"),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }
    child = os.fork()
    if child == 0:
        try:
            os.chdir(args.workdir)
            set_limits(args)
            os.execve(args.argv[0], args.argv, env)
        except OSError as exc:
            sys.stderr.write(f"cannot run {args.argv[0]}: {exc.strerror}\n")
            os._exit(127)
    # PID 1: reap everything, report the program's own status.
    signal.signal(signal.SIGTERM, lambda *_: os.kill(child, signal.SIGKILL))
    status = 0
    while True:
        try:
            pid, wait_status = os.wait()
        except ChildProcessError:
            break
        if pid == child:
            status = os.waitstatus_to_exitcode(wait_status)
            break
    os._exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main()
