"""Building agent workspaces, traces and archives for the tests."""

import io
import json
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path

TASK = "Train a classifier on data/iris.csv, report its test accuracy and plot it."
REQUIREMENTS_MD = b"""# Checklist
1. saves the plot to out/accuracy.png
2. writes the metrics to out/metrics.json
3. train.py prints the test accuracy when run
"""


def png_bytes(width: int = 4, height: int = 3) -> bytes:
    """A valid, tiny PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def make_workspace(root: Path, *, with_plot: bool = True) -> Path:
    """A small finished ML workspace; `with_plot=False` leaves out out/accuracy.png."""
    (root / "out").mkdir(parents=True, exist_ok=True)
    (root / "data").mkdir(exist_ok=True)
    (root / "train.py").write_text(
        "import json\n\n"
        "def main():\n"
        "    accuracy = 0.93\n"
        "    print(f\"test accuracy: {accuracy}\")\n"
        "    json.dump({\"accuracy\": accuracy}, open(\"out/metrics.json\", \"w\"))\n\n"
        "main()\n"
    )
    (root / "data" / "iris.csv").write_text("sepal_length,species\n5.1,setosa\n7.0,versicolor\n")
    (root / "out" / "metrics.json").write_text('{"accuracy": 0.93}\n')
    if with_plot:
        (root / "out" / "accuracy.png").write_bytes(png_bytes())
    return root


def trace_lines(steps: list[dict]) -> bytes:
    return "".join(json.dumps(s) + "\n" for s in steps).encode()


TRACE = trace_lines([
    {"step": 1, "thought": "Write the training script.", "action": "write_file train.py", "observation": "ok"},
    {"step": 2, "thought": "Run it.", "action": "python train.py", "observation": "test accuracy: 0.93"},
    {"step": 3, "thought": "Run the tests.", "action": "pytest -q", "observation": "3 passed in 0.4s"},
])


def zip_bytes(members: dict[str, bytes], *, symlinks: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)
            archive.writestr(info, target)
    return buffer.getvalue()


def tar_bytes(members: dict[str, bytes], *, symlinks: dict[str, str] | None = None, hardlinks: dict[str, str] | None = None,
              mode: str = "w:gz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for name, target in (symlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)
        for name, target in (hardlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.LNKTYPE
            info.linkname = target
            archive.addfile(info)
    return buffer.getvalue()


def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root with its content: to show a workspace is unchanged."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def agent_run(judge, workspace, *, requirements: bytes = REQUIREMENTS_MD, trace: bytes | None = TRACE, run_id=None,
              executor="inline", workspace_name: str = "", task: str = TASK):
    """An agent run stored the way the app stores one (Django needed)."""
    from judgeapp.agent.services import agent_inputs_read, agent_run_create

    inputs = agent_inputs_read(
        task=task.encode(), task_name="task.md", requirements=requirements, requirements_name="requirements.md",
        trace=trace, trace_name="trace.jsonl" if trace is not None else "",
    )
    return agent_run_create(inputs=inputs, workspace=workspace, workspace_name=workspace_name, judge=judge,
                            run_id=run_id, executor=executor)
