"""The agent judge's run_file sandbox, attacked: every attack a workspace script can make on the machine.

Each case is a script the judge runs with `run_file` in the sandbox the app configures (runkind's
`agent_sandbox()`). A script prints `ESCAPED …` when its attack works and `CONTAINED …` with the refusal
when it does not (`READ …` for a read whose content is then checked). Besides, no planted secret (another
run's workspace, a key file, the app's environment) and no line of the host's /etc/passwd may appear in
what the judge is shown, the tool's answer must say what the sandbox refuses and which limit was reached,
the stored workspace must be unchanged, nothing the script wrote may be on the host afterwards, and no
process it started may outlive the call.

CI runs these as root with REQUIRE_SANDBOX=1 (.ci/run); without bwrap they skip only when REQUIRE_SANDBOX
is unset.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from judgeapp.agent.core import Sandbox, SandboxLimits, SandboxStatus, ToolBox, Workspace, sandbox_status
from judgeapp.agent.core import sandbox as sandbox_module
from tests.agent.helpers import make_workspace, tree_snapshot

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("REQUIRE_SANDBOX"),
    reason="bubblewrap (bwrap) is not installed here",
)

MARKER = uuid.uuid4().hex[:12]  # in the names of what scripts write and run, to find them on the host
SECRET = f"SECRET-{uuid.uuid4().hex}"  # planted outside the workspace; must never reach the judge
POSTGRES_SOCKET = "/var/run/postgresql/.s.PGSQL.5432"
MARIADB_SOCKET = "/run/mysqld/mysqld.sock"
REDIS_SOCKETS = ("/run/redis/redis-server.sock", "/var/run/redis/redis-server.sock", "/run/redis/redis.sock",
                 "/var/run/redis/redis.sock", "/tmp/redis.sock")
REDIS_SOCKET = next((p for p in REDIS_SOCKETS if os.path.exists(p)), REDIS_SOCKETS[0])
# The sandbox's root: the runtime's directories (or links) as on this host, and its own few.
SANDBOX_TOP = sorted({"dev", "etc", "proc", "run", "tmp", "var", "workspace"}
                     | {d.strip("/") for d in sandbox_module.RUNTIME_DIRS if os.path.lexists(d)})
APP_SOURCE = Path(__file__).resolve().parents[2] / "judgeapp" / "settings.py"


@dataclass
class Attack:
    id: str
    script: str  # formatted with the planted paths: {other_secret} {key_file} {abstract} {tcp_port} {marker} {app_source}
    suffix: str = ".py"
    expect: tuple[str, ...] = ()  # what the tool's answer must say (the refusal, the limit reached)
    limits: dict = field(default_factory=dict)  # settings overrides for this case
    args: tuple[str, ...] = ()
    host_paths: tuple[str, ...] = ()  # must not exist on the host afterwards ({marker} formatted)
    requires: str = ""  # a host path without which the case says nothing (skipped if absent)


_PY_CONNECT_UNIX = """
import socket
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect({path!r})
    print("ESCAPED connected to {path}")
except OSError as exc:
    print("CONTAINED", type(exc).__name__, exc.strerror)
"""

_PY_READ = """
import sys
for path in sys.argv[1:] or {paths!r}:
    try:
        print("READ", path, open(path, errors="replace").read()[:2000])
    except OSError as exc:
        print("CONTAINED", path, type(exc).__name__, exc.strerror)
"""

_PY_WRITE = """
import os
for path in {paths!r}:
    try:
        with open(path, "w") as f:
            f.write("planted by a sandboxed script")
        print("WROTE", path, "(inside the sandbox)")
    except OSError as exc:
        print("CONTAINED", path, exc.strerror)
print("CONTAINED: whatever was written is in the sandbox's own tmpfs")
"""

_PY_WRITE_GB = """
import os
chunk = b"x" * (1 << 20)
written = 0
try:
    for n in range({files}):
        with open({where!r} + "/big-{marker}-%d.bin" % n, "wb") as f:
            for _ in range(1024 // {files}):
                f.write(chunk)
                written += len(chunk)
    print("ESCAPED wrote", written >> 20, "MB")
except OSError as exc:
    print("CONTAINED after", written >> 20, "MB:", exc.strerror)
"""

ATTACKS = [
    # --- host Unix sockets: the services on this machine -------------------------------------------------
    Attack(
        "postgres-socket", _PY_CONNECT_UNIX.format(path=POSTGRES_SOCKET), expect=("FileNotFoundError",), requires=POSTGRES_SOCKET,
    ),
    Attack("postgres-psql", "if psql -h /var/run/postgresql -U postgres -Atc 'select count(*) from pg_database' 2>&1; "
           "then echo ESCAPED psql answered; else echo CONTAINED psql got no server; fi\n", suffix=".sh",
           requires=POSTGRES_SOCKET),
    Attack(
        "mariadb-socket", _PY_CONNECT_UNIX.format(path=MARIADB_SOCKET), expect=("FileNotFoundError",), requires=MARIADB_SOCKET,
    ),
    Attack("mariadb-client", "if mariadb -S /run/mysqld/mysqld.sock -u root -e 'select 1' 2>&1; "
           "then echo ESCAPED mariadb answered; else echo CONTAINED mariadb got no server; fi\n", suffix=".sh",
           requires=MARIADB_SOCKET),
    Attack("redis-socket", _PY_CONNECT_UNIX.format(path=REDIS_SOCKET), expect=("FileNotFoundError",), requires=REDIS_SOCKET),
    Attack("abstract-socket", _PY_CONNECT_UNIX.format(path="{abstract}"), expect=("ConnectionRefusedError",)),
    Attack("docker-and-dbus-sockets", """
import socket
for path in ["/var/run/docker.sock", "/run/docker.sock", "/run/dbus/system_bus_socket", "/run/systemd/private"]:
    try:
        socket.socket(socket.AF_UNIX).connect(path)
        print("ESCAPED", path)
    except OSError as exc:
        print("CONTAINED", path, exc.strerror)
"""),
    # --- the network ----------------------------------------------------------------------------------
    Attack("tcp-to-host-services", """
import socket
for port in [{tcp_port}, 5432, 3306, 6379, 5672, 1883, 4222]:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3)
        print("ESCAPED port", port)
    except OSError as exc:
        print("CONTAINED port", port, exc.strerror)
for host in ["1.1.1.1", "10.0.0.1", "169.254.169.254"]:
    try:
        socket.create_connection((host, 80), timeout=3)
        print("ESCAPED", host)
    except OSError as exc:
        print("CONTAINED", host, exc.strerror)
print("interfaces", [name for _, name in socket.if_nameindex()])
""", expect=("interfaces ['lo']", "Connection refused", "Network is unreachable")),
    # --- host files -----------------------------------------------------------------------------------
    Attack("etc-passwd-and-shadow", _PY_READ.format(paths=["/etc/passwd", "/etc/shadow", "/etc/group"]),
           expect=("READ /etc/passwd sandbox:x:1000:1000:sandbox:/tmp:/bin/sh", "CONTAINED /etc/shadow")),
    Attack("other-runs-workspace", _PY_READ.format(paths=["{other_secret}"]), expect=("FileNotFoundError",)),
    Attack(
        "key-file", _PY_READ.format(paths=["{key_file}", "/root/.ssh/id_rsa", "/root/.pgpass"]), expect=("FileNotFoundError",),
    ),
    Attack(
        "app-source-and-venv", _PY_READ.format(paths=["{app_source}", "/proc/1/root{app_source}"]), expect=("FileNotFoundError",),
    ),
    Attack("walk-the-whole-root", """
import os
seen = []
for top in sorted(os.listdir("/")):
    if top in ("proc", "usr", "sys"):
        continue
    for dirpath, dirnames, filenames in os.walk("/" + top):
        seen += [os.path.join(dirpath, n) for n in filenames]
print("top:", sorted(os.listdir("/")))
print("files:", seen)
print("CONTAINED" if not any("{marker_dir}" in p for p in seen) else "ESCAPED a host path is mounted")
""", expect=(f"top: {SANDBOX_TOP}",)),
    Attack(
        "dotdot-escape", _PY_READ.format(paths=["../../../../etc/shadow", "../../../{other_secret}"]),
        expect=("FileNotFoundError",),
    ),
    Attack("dotdot-in-arguments", _PY_READ.format(paths=[]), args=("../../../../../etc/shadow", "../{other_secret_rel}"),
           expect=("FileNotFoundError",)),
    Attack("symlinks-out-of-the-workspace",
           _PY_READ.format(paths=["link_other", "link_key", "link_up/etc/shadow", "link_root/etc/shadow"]),
           expect=("CONTAINED link_other", "CONTAINED link_key")),
    # --- writing on the host --------------------------------------------------------------------------
    Attack("write-dev-shm-tmp-run", _PY_WRITE.format(paths=["/dev/shm/shm-{marker}", "/tmp/tmp-{marker}", "/run/run-{marker}",
                                                           "/var/tmp/vartmp-{marker}"]),
           host_paths=("/dev/shm/shm-{marker}", "/tmp/tmp-{marker}", "/run/run-{marker}", "/var/tmp/vartmp-{marker}")),
    Attack("write-outside", _PY_WRITE.format(paths=["/etc-{marker}", "/usr/lib/usr-{marker}", "/usr/local/bin/evil-{marker}",
                                                    "{other_secret}", "/etc/passwd"]),
           expect=("Read-only file system",),
           host_paths=("/etc-{marker}", "/usr/lib/usr-{marker}", "/usr/local/bin/evil-{marker}")),
    Attack("write-1gb-one-file", _PY_WRITE_GB.format(files=1, where="/workspace", marker="{marker}"),
           expect=("CONTAINED after", "File too large", "limits reached:", "file-size limit")),
    Attack("write-1gb-many-files", _PY_WRITE_GB.format(files=32, where="/workspace", marker="{marker}"),
           expect=("CONTAINED after", "No space left on device", "limits reached:", "disk cap")),
    Attack("write-1gb-tmp", _PY_WRITE_GB.format(files=32, where="/tmp", marker="{marker}"),
           expect=("No space left on device", "disk cap")),
    Attack("write-1gb-dev-shm", _PY_WRITE_GB.format(files=32, where="/dev/shm", marker="{marker}"),
           expect=("No space left on device", "disk cap")),
    Attack("dd-1gb", "dd if=/dev/zero of=big-{marker}.bin bs=1M count=1024 2>&1; echo CONTAINED dd exit $?\n", suffix=".sh",
           expect=("limits reached:",)),
    # --- processes ------------------------------------------------------------------------------------
    Attack("bounded-fork-bomb", """
import os, time
count = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        count += 1
except OSError as exc:
    print("CONTAINED fork refused after", count, "children:", exc.strerror, flush=True)
time.sleep(600)
""", limits={"AGENT_SANDBOX_MAX_PROCESSES": 16, "AGENT_SANDBOX_TIMEOUT_SECONDS": 3},
           expect=("CONTAINED fork refused after", "killed after 3 s (time limit)", "process limit (16)")),
    # Killed at the time limit, or ended by the shell itself when it cannot fork its `sleep`: either way bounded.
    Attack("shell-fork-bomb", "bomb() {{ bomb | bomb & }}; bomb; sleep 600\n", suffix=".sh",
           limits={"AGENT_SANDBOX_MAX_PROCESSES": 16, "AGENT_SANDBOX_TIMEOUT_SECONDS": 3}, expect=("process limit (16)",)),
    Attack("sleep-forever", "sleep infinity &\nexec sleep infinity\n", suffix=".sh",
           limits={"AGENT_SANDBOX_TIMEOUT_SECONDS": 2}, expect=("killed after 2 s (time limit)", "the time limit (2 s)")),
    Attack("daemon-outliving-the-call", """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
print("CONTAINED: the parent returns, its daemon must die with the namespace")
"""),
    Attack("memory", "b = bytearray(4 * 1024 ** 3)\nprint('ESCAPED allocated')\n", expect=("MemoryError", "memory limit")),
    Attack("cpu-spin", "while True:\n    pass\n", limits={"AGENT_SANDBOX_TIMEOUT_SECONDS": 2}, expect=("killed after 2 s",)),
    Attack("see-host-processes", """
import os
pids = [p for p in os.listdir("/proc") if p.isdigit()]
commands = [open(f"/proc/{{p}}/cmdline", "rb").read().replace(b"\\0", b" ").decode() for p in pids]
print("processes:", commands)
print("ESCAPED sees the host" if len(pids) > 5 or any("pytest" in c for c in commands) else "CONTAINED its own PID namespace")
"""),
    # --- privileges -----------------------------------------------------------------------------------
    Attack("nested-user-namespace", "if unshare -r id 2>&1; then echo ESCAPED unshare; else echo CONTAINED no user namespace; "
           "fi\n",
           suffix=".sh"),
    Attack("mount-and-chroot", "if mount -t tmpfs none /tmp 2>&1; then echo ESCAPED mount; else echo CONTAINED mount refused; "
           "fi\n"
           "id\n", suffix=".sh", expect=("uid=1000(sandbox)",)),
    # --- the app's environment ------------------------------------------------------------------------
    Attack("environment", """
import os
print("env:", sorted(os.environ))
for p in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        print("environ of", p, open(f"/proc/{{p}}/environ", "rb").read())
    except OSError as exc:
        print("environ of", p, exc.strerror)
print("CONTAINED" if "OPENAI_API_KEY" not in os.environ else "ESCAPED")
""", expect=(("env: ['HOME', 'LANG', 'MPLBACKEND', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'PATH', 'PWD', "
              "'PYTHONDONTWRITEBYTECODE', 'PYTHONUNBUFFERED', 'TMPDIR']"),)),
]


@pytest.fixture
def planted(tmp_path, settings, monkeypatch):
    """The run being judged and, around it, what a script must not reach."""
    runs = Path(settings.DATA_DIR) / "runs"
    workspace = make_workspace(runs / f"this-run-{MARKER}" / "workspace")
    other = runs / f"other-run-{MARKER}" / "workspace"
    other.mkdir(parents=True)
    (other / "secret.txt").write_text(f"another run's workspace: {SECRET}\n")
    key_file = Path(settings.DATA_DIR) / f"keys-{MARKER}" / "api.key"
    key_file.parent.mkdir()
    key_file.write_text(f"OPENAI_API_KEY={SECRET}\n")
    (workspace / "link_other").symlink_to(other / "secret.txt")
    (workspace / "link_key").symlink_to(key_file)
    (workspace / "link_up").symlink_to("../../../../../../../..")
    (workspace / "link_root").symlink_to("/")
    for name in ("OPENAI_API_KEY", "DATABASE_URL", "JUDGEAPP_FAKE_SECRET"):
        monkeypatch.setenv(name, SECRET)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0judgeapp-{MARKER}")
    abstract.listen(1)
    tcp = socket.create_server(("127.0.0.1", 0))
    values = {
        "other_secret": str(other / "secret.txt"),
        "other_secret_rel": os.path.relpath(other / "secret.txt", workspace),
        "key_file": str(key_file),
        "abstract": f"\\0judgeapp-{MARKER}",  # as the script's source spells it
        "tcp_port": tcp.getsockname()[1],
        "marker": MARKER,
        "marker_dir": f"run-{MARKER}",
        "app_source": str(APP_SOURCE),
    }
    yield workspace, values
    abstract.close()
    tcp.close()
    for path in (workspace.parent, other.parent, key_file.parent):
        shutil.rmtree(path, ignore_errors=True)


def configured_toolbox(workspace: Path, settings, limits: dict) -> ToolBox:
    from judgeapp.agent.runkind import agent_sandbox

    for name, value in limits.items():
        setattr(settings, name, value)
    return ToolBox(Workspace(workspace), None, agent_sandbox())


def leftovers() -> list[str]:
    return [line for line in subprocess.run(
        ["ps", "-eo", "pid,user,args"], check=False, capture_output=True, text=True,
    ).stdout.splitlines()
            if MARKER in line and "ps -eo" not in line]


def host_passwd_lines() -> set[str]:
    generated = set(sandbox_module._GENERATED_ETC["/etc/passwd"].splitlines())
    return {line for line in Path("/etc/passwd").read_text().splitlines() if line.strip()} - generated


def test_the_sandbox_is_bubblewrap_and_available_here():
    # With REQUIRE_SANDBOX=1 (CI, as root) a missing or failing bwrap fails here instead of skipping below.
    status = sandbox_status()
    assert status.available, status.reason
    assert status.mode == "bubblewrap" and status.version.startswith("bubblewrap ")


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.id for a in ATTACKS])
def test_attack_is_contained(attack, planted, settings):
    workspace, values = planted
    if attack.requires and not os.path.exists(attack.requires):
        pytest.skip(f"{attack.requires} does not exist on this machine")
    name = f"attack_{MARKER}{attack.suffix}"
    (workspace / name).write_text(attack.script.format(**values))
    before = tree_snapshot(workspace)
    toolbox = configured_toolbox(workspace, settings, attack.limits)
    started = time.monotonic()
    record = toolbox.call("run_file", {"path": name, "args": [a.format(**values) for a in attack.args]})
    elapsed = time.monotonic() - started
    output = record.output

    assert record.ok, output
    assert not [line for line in output.splitlines() if line.startswith("ESCAPED")], output
    assert "CONTAINED" in output or "killed after" in output or "limits reached" in output, output
    # The answer says what the sandbox refused.
    assert "bubblewrap sandbox: no network, no host file or socket, an empty environment" in output
    for expected in attack.expect:
        assert expected in output, f"{expected!r} not in:\n{output}"
    assert SECRET not in output
    assert not (host_passwd_lines() & set(output.splitlines())), "a line of the host's /etc/passwd reached the judge"
    assert not any(line in output for line in host_passwd_lines() if line.startswith(("root:", "postgres:", "mysql:")))
    # Nothing changed, nothing stays behind, nothing outlives the call.
    assert tree_snapshot(workspace) == before, "the stored workspace changed"
    for path in attack.host_paths:
        assert not os.path.lexists(path.format(**values)), f"{path} exists on the host"
    for top in ("/tmp", "/dev/shm", "/var/tmp"):
        assert not [p for p in Path(top).glob(f"*{MARKER}*") if not p.name.startswith(("pytest", "judgeapp-test"))], top
    assert not leftovers(), leftovers()
    assert elapsed < 30


def test_run_file_on_a_path_out_of_the_workspace_is_refused_before_anything_runs(planted, settings):
    workspace, values = planted
    (workspace / "escape.py").symlink_to(values["other_secret"])
    toolbox = configured_toolbox(workspace, settings, {})
    for path in ("../other/workspace/x.py", values["other_secret"], "/etc/passwd", "escape.py", "link_up/etc/passwd"):
        record = toolbox.call("run_file", {"path": path})
        assert not record.ok and record.output.startswith("error:"), (path, record.output)
        assert SECRET not in record.output
    assert toolbox.observations.runs == []


@pytest.mark.django_db
def test_agent_run_report_names_the_sandbox_and_what_it_refused(judge, fake_judge, planted, settings):
    """Through the whole run: the judge runs an attacking script; no secret reaches the judge or the report."""
    from judgeapp.judging import runs
    from tests.agent.helpers import agent_run

    workspace, values = planted
    (workspace / "attack.py").write_text(
        _PY_READ.format(paths=[values["other_secret"], values["key_file"], "/etc/shadow"])
        + _PY_CONNECT_UNIX.format(path=POSTGRES_SOCKET)
        + "import os\nprint(os.environ.get('OPENAI_API_KEY'))\n"
    )
    run = agent_run(judge, workspace, requirements=b"1. attack.py prints the secrets when run\n", trace=None)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    report = run.report
    assert report["sandbox"]["available"] and report["sandbox"]["mode"] == "bubblewrap"
    assert report["sandbox"]["network"] == "none"
    assert any("Unix sockets" in r for r in report["sandbox"]["refuses"])
    assert report["sandbox"]["limits"]["disk_mb"] == settings.AGENT_SANDBOX_DISK_MB
    requirement = report["requirements"][0]
    run_call = next(c for c in requirement["tool_calls"] if c["name"] == "run_file")
    assert "CONTAINED" in run_call["output"] and "ESCAPED" not in run_call["output"]
    assert SECRET not in str(report)
    assert not any(SECRET in str(r.messages) for r in fake_judge.chat_requests)
    assert not any(SECRET in str(j.transcript) + str(j.messages) for j in run.judgments.all())


def test_no_bubblewrap_means_nothing_runs_and_the_report_says_why(planted, settings, monkeypatch, tmp_path):
    workspace, _values = planted
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setattr(sandbox_module, "SANDBOX_PATH", str(empty))
    status = sandbox_status.__wrapped__("python3", ())
    assert not status.available and "bubblewrap is not installed" in status.reason
    toolbox = ToolBox(Workspace(workspace), None, Sandbox(SandboxLimits(), status=status))
    assert "run_file" not in toolbox.names
    record = toolbox.call("run_file", {"path": "train.py"})
    assert not record.ok and "bubblewrap is not installed" in record.output and "nothing was run" in record.output
    with pytest.raises(sandbox_module.SandboxError, match="unavailable: bubblewrap is not installed"):
        Sandbox(status=status).run(workspace, "train.py")


def test_a_failing_self_check_means_nothing_runs_and_the_report_says_why(planted, settings):
    from judgeapp.agent.runkind import agent_sandbox, sandbox_summary

    workspace, _values = planted
    settings.AGENT_SANDBOX_PYTHON = "/nonexistent/bin/python3"
    summary = sandbox_summary()
    assert summary["available"] is False and summary["mode"] == "bubblewrap"
    assert "/nonexistent/bin/python3" in summary["reason"] and "not found" in summary["reason"]
    toolbox = ToolBox(Workspace(workspace), None, agent_sandbox())
    record = toolbox.call("run_file", {"path": "train.py"})
    assert not record.ok and "/nonexistent/bin/python3" in record.output and "nothing was run" in record.output


def test_the_apps_own_venv_as_the_sandbox_python_is_refused(planted, settings):
    import sys

    from judgeapp.agent.runkind import sandbox_summary

    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests do not run in a venv")
    settings.AGENT_SANDBOX_PYTHON = str(Path(sys.prefix) / "bin" / "python")
    summary = sandbox_summary()
    assert summary["available"] is False and "the app's own code, environment or data" in summary["reason"]


@pytest.mark.skipif(os.geteuid() != 0, reason="as root bwrap runs as nobody, who cannot reach a private directory")
def test_bwrap_refusing_to_set_up_is_a_tool_error_and_nothing_runs(planted, tmp_path):
    workspace, _values = planted
    private = tmp_path / "private-python"
    (private / "bin").mkdir(parents=True)
    (private / "bin" / "python3").write_text("#!/bin/sh\necho RAN\n")
    (private / "bin" / "python3").chmod(0o755)
    private.chmod(0o700)
    sandbox = Sandbox(SandboxLimits(), python=str(private / "bin" / "python3"), status=SandboxStatus(True, mode="bubblewrap"))
    record = ToolBox(Workspace(workspace), None, sandbox).call("run_file", {"path": "train.py"})
    assert not record.ok and "the sandbox could not be set up: bwrap:" in record.output, record.output
    assert "RAN" not in record.output
