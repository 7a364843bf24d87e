"""run_file: a throw-away copy, no network, limits, and a timeout that kills everything it started."""

import os
import time

import pytest

from judgeapp.agent.core import Sandbox, SandboxLimits, ToolBox, Workspace, sandbox_status
from tests.agent.helpers import make_workspace, tree_snapshot

pytestmark = pytest.mark.skipif(
    not sandbox_status().available and not os.environ.get("REQUIRE_SANDBOX"),
    reason=f"no sandbox on this machine: {sandbox_status().reason}",
)


@pytest.fixture
def workspace(tmp_path):
    return make_workspace(tmp_path / "ws")


def run(workspace, script: str, name: str = "probe.py", timeout: float = 5, **limits):
    (workspace / name).write_text(script)
    before = tree_snapshot(workspace)
    toolbox = ToolBox(Workspace(workspace), None, Sandbox(SandboxLimits(timeout_seconds=timeout, **limits)))
    record = toolbox.call("run_file", {"path": name})
    assert tree_snapshot(workspace) == before, "the workspace changed"
    return record


def test_sandbox_is_available_here_with_network_isolation():
    # CI and this machine run as root: the namespaces must work, or the tests below would silently skip.
    status = sandbox_status()
    assert status.available, status.reason
    assert status.mode == "bubblewrap"


def test_script_writing_into_the_workspace_leaves_it_unchanged(workspace):
    script = (
        "import os\n"
        "open('train.py', 'w').write('hacked')\n"
        "open('out/new.txt', 'w').write('new')\n"
        "os.remove('out/metrics.json')\n"
        f"try:\n    open({str(workspace / 'train.py')!r}, 'w').write('hacked')\n"
        "    print('wrote the original')\nexcept OSError as exc:\n    print('original refused:', exc.strerror)\n"
        "print('copy now has', sorted(os.listdir('out')))\n"
    )
    record = run(workspace, script)
    assert record.ok and "exit code 0" in record.output
    assert "copy now has ['accuracy.png', 'new.txt']" in record.output
    assert "wrote the original" not in record.output and "original refused" in record.output
    assert (workspace / "train.py").read_text().startswith("import json")
    assert not (workspace / "out" / "new.txt").exists()


def test_script_opening_a_network_socket_cannot_reach_anything(workspace):
    script = (
        "import socket\n"
        "for host, port in [('1.1.1.1', 53), ('8.8.8.8', 443), ('127.0.0.1', 22)]:\n"
        "    try:\n"
        "        socket.create_connection((host, port), timeout=3)\n"
        "        print('CONNECTED', host)\n"
        "    except OSError as exc:\n"
        "        print('refused', host, exc.strerror)\n"
        "print('interfaces', [n for _, n in socket.if_nameindex()])\n"
    )
    record = run(workspace, script)
    assert "CONNECTED" not in record.output
    # Outside addresses are unreachable; the loopback is the sandbox's own, with nothing listening.
    assert [
        line.split()[1] for line in record.output.splitlines() if line.startswith("refused ")
    ] == ["1.1.1.1", "8.8.8.8", "127.0.0.1"]
    assert "interfaces ['lo']" in record.output


def test_script_looping_forever_is_killed_at_the_timeout(workspace):
    # A duration no other process on the machine would sleep for, so that `ps` finds only this run's child.
    marker = f"{300 + os.getpid() % 1000}.{time.monotonic_ns() % 997}"
    started = time.monotonic()
    record = run(workspace, f"import subprocess\nsubprocess.Popen(['sleep', '{marker}'])\nwhile True:\n    pass\n", timeout=2)
    elapsed = time.monotonic() - started
    assert "killed after 2 s (time limit)" in record.output
    assert elapsed < 20
    # The process it started died with it: nothing outlives a run.
    leftovers = os.popen("ps -eo args").read()
    assert f"sleep {marker}" not in leftovers


def test_memory_and_processes_are_limited(workspace):
    memory = run(workspace, "b = bytearray(2 * 1024 ** 3)\nprint('allocated')\n", memory_bytes=256 * 1024 * 1024)
    assert "MemoryError" in memory.output and "allocated" not in memory.output
    forks = run(
        workspace,
        "import os, time\ncount = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            time.sleep(20)\n"
        "            os._exit(0)\n        count += 1\nexcept OSError:\n    print('fork refused after', count)\n",
        max_processes=16,
    )
    assert "fork refused after" in forks.output
    assert int(forks.output.split("fork refused after")[1].split()[0]) < 16


def test_long_output_is_cut_to_head_and_tail(workspace):
    record = run(workspace, "print('FIRST')\nprint('x' * 200000)\nprint('LAST')\n", output_bytes=2000)
    assert "FIRST" in record.output and "LAST" in record.output
    assert "bytes of output left out" in record.output and len(record.output) < 3000


def test_the_program_sees_no_secrets_from_the_environment(workspace, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    record = run(workspace, "import os\nprint(sorted(os.environ))\nprint(os.environ.get('OPENAI_API_KEY'))\n")
    assert "sk-should-not-leak" not in record.output


def test_run_output_shows_paths_relative_to_the_workspace(workspace):
    record = run(workspace, "raise SystemExit(open('missing.txt').read())\n")
    assert "exit code 1" in record.output
    assert "judgeapp-sandbox-" not in record.output and 'File "probe.py", line 1' in record.output


def test_unavailable_sandbox_is_not_offered_to_the_judge(workspace):
    from judgeapp.agent.core import SandboxStatus

    none = Sandbox(status=SandboxStatus(False, reason="no namespaces"))
    toolbox = ToolBox(Workspace(workspace), None, none)
    assert "run_file" not in toolbox.names
    assert not toolbox.call("run_file", {"path": "train.py"}).ok
