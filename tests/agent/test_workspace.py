"""Confinement to the workspace, and taking a workspace in from a directory or an archive safely."""

import os

import pytest

from judgeapp.agent.core import ToolBox, Workspace, WorkspaceLimits, ingest_archive, ingest_directory
from judgeapp.judging.errors import InputError
from tests.agent.helpers import make_workspace, png_bytes, tar_bytes, zip_bytes


@pytest.fixture
def toolbox(tmp_path):
    return ToolBox(Workspace(make_workspace(tmp_path / "ws")), None, None)


# --- Escape attempts through the tools ------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["read_file", "list_files", "search"])
def test_dot_dot_path_to_etc_passwd_is_refused(toolbox, tool):
    arguments = {"query": "root", "path": "../../etc/passwd"} if tool == "search" else {"path": "../../etc/passwd"}
    record = toolbox.call(tool, arguments)
    assert not record.ok
    assert record.output == "error: ../../etc/passwd: '..' is not allowed; paths stay inside the workspace"
    assert "root:" not in record.output


@pytest.mark.parametrize("path", ["/etc/passwd", "/", "~/.ssh/id_rsa", "C:/Windows/win.ini"])
def test_absolute_path_is_refused(toolbox, path):
    record = toolbox.call("read_file", {"path": path})
    assert not record.ok and "absolute paths are not allowed" in record.output


def test_symlink_to_root_is_refused(tmp_path):
    root = make_workspace(tmp_path / "ws")
    os.symlink("/", root / "rootfs")
    os.symlink("/etc/passwd", root / "passwd")
    toolbox = ToolBox(Workspace(root), None, None)
    for tool, arguments in [
        ("read_file", {"path": "rootfs/etc/passwd"}),
        ("list_files", {"path": "rootfs"}),
        ("read_file", {"path": "passwd"}),
        ("search", {"query": "root", "path": "rootfs/etc"}),
    ]:
        record = toolbox.call(tool, arguments)
        assert not record.ok, (tool, arguments)
        assert "leads outside the workspace" in record.output
        assert "root:x:0:0" not in record.output
    # Listing the root shows the links (as links) without following them.
    listing = toolbox.call("list_files", {"path": "."}).output
    assert "rootfs -> /" in listing and "bin/" not in listing


def test_symlink_inside_the_workspace_is_followed(tmp_path):
    root = make_workspace(tmp_path / "ws")
    os.symlink("train.py", root / "main.py")
    record = ToolBox(Workspace(root), None, None).call("read_file", {"path": "main.py"})
    assert record.ok and "test accuracy" in record.output


def test_search_never_reads_files_behind_an_outward_symlink(tmp_path):
    root = make_workspace(tmp_path / "ws")
    os.symlink("/etc", root / "etc")
    output = ToolBox(Workspace(root), None, None).call("search", {"query": "root:x"}).output
    assert output.startswith("0 matches")


def test_read_file_shows_numbered_line_ranges_and_binary_files(toolbox):
    text = toolbox.call("read_file", {"path": "train.py", "start_line": 4, "end_line": 5}).output
    assert text.splitlines() == [
        "train.py (lines 4-5 of 8; call again with start_line=6 for more)",
        "     4|     accuracy = 0.93",
        '     5|     print(f"test accuracy: {accuracy}")',
    ]
    assert toolbox.observations.lines["train.py"] == {4, 5}
    binary = toolbox.call("read_file", {"path": "out/accuracy.png"}).output
    assert binary == "out/accuracy.png: binary file, 73 bytes (PNG image, 4x3); it has no text lines to show"


def test_tools_cannot_write(toolbox):
    names = {t["function"]["name"] for t in toolbox.schemas}
    assert names == {"list_files", "read_file", "search"}  # no trace, no sandbox given: nothing else
    assert not toolbox.call("write_file", {"path": "x", "content": "y"}).ok


# --- Taking a workspace in ------------------------------------------------------------------------------


def test_directory_is_copied_and_outward_symlinks_left_out(tmp_path):
    source = make_workspace(tmp_path / "src")
    os.symlink("/etc", source / "etc-link")
    os.symlink("out/metrics.json", source / "metrics.json")
    report = ingest_directory(source, tmp_path / "dest")
    dest = tmp_path / "dest"
    assert (dest / "train.py").read_text() == (source / "train.py").read_text()
    assert not os.path.lexists(dest / "etc-link")
    assert os.path.islink(dest / "metrics.json") and (dest / "metrics.json").read_text() == '{"accuracy": 0.93}\n'
    assert report.files == 4 and report.skipped == ["etc-link: symbolic link to /etc, which is outside the workspace"]


@pytest.mark.parametrize("maker", [zip_bytes, tar_bytes])
def test_archive_with_dot_dot_member_is_refused_and_nothing_is_written(tmp_path, maker):
    data = maker({"ok.txt": b"fine", "../../etc/passwd": b"root::0:0"})
    with pytest.raises(InputError, match=r"member '\.\./\.\./etc/passwd' leads outside the workspace"):
        ingest_archive(data, "ws.archive", tmp_path / "dest")
    assert not (tmp_path / "dest").exists()
    assert not (tmp_path.parent / "etc").exists()


@pytest.mark.parametrize("maker", [zip_bytes, tar_bytes])
def test_archive_with_absolute_member_is_refused(tmp_path, maker):
    with pytest.raises(InputError, match="absolute path"):
        ingest_archive(maker({"/tmp/evil.sh": b"rm -rf /"}), "ws.archive", tmp_path / "dest")
    assert not (tmp_path / "dest").exists()


@pytest.mark.parametrize("maker", [zip_bytes, tar_bytes])
def test_archive_symlink_to_root_is_left_out(tmp_path, maker):
    data = maker({"train.py": b"print(1)\n"}, symlinks={"rootfs": "/", "up": "../../..", "inner": "train.py"})
    report = ingest_archive(data, "ws.archive", tmp_path / "dest")
    dest = tmp_path / "dest"
    assert not os.path.lexists(dest / "rootfs") and not os.path.lexists(dest / "up")
    assert os.path.islink(dest / "inner")
    assert sorted(report.skipped) == [
        "rootfs: symbolic link to /, which is outside the workspace",
        "up: symbolic link to ../../.., which is outside the workspace",
    ]


def test_tar_hardlink_to_a_path_outside_is_not_followed(tmp_path):
    data = tar_bytes({"a.txt": b"a"}, hardlinks={"passwd": "/etc/passwd", "b.txt": "a.txt"})
    report = ingest_archive(data, "ws.tgz", tmp_path / "dest")
    assert not (tmp_path / "dest" / "passwd").exists()
    assert (tmp_path / "dest" / "b.txt").read_bytes() == b"a"
    assert report.skipped == ["passwd: hard link to /etc/passwd, which is not in the archive"]


def test_archive_bomb_stops_at_the_size_limit(tmp_path):
    data = zip_bytes({"zeros.bin": b"\x00" * 5_000_000})
    assert len(data) < 50_000
    with pytest.raises(InputError, match="over 1,000,000 bytes once unpacked"):
        ingest_archive(
            data, "bomb.zip", tmp_path / "dest", limits=WorkspaceLimits(max_bytes=1_000_000, max_file_bytes=10_000_000),
        )


def test_archive_with_too_many_files_is_refused(tmp_path):
    data = tar_bytes({f"f{i}.txt": b"x" for i in range(30)})
    with pytest.raises(InputError, match="more than 20 files"):
        ingest_archive(data, "many.tgz", tmp_path / "dest", limits=WorkspaceLimits(max_files=20))


def test_archive_single_top_directory_is_unwrapped(tmp_path):
    data = zip_bytes({"project/train.py": b"print(1)\n", "project/out/accuracy.png": png_bytes()})
    report = ingest_archive(data, "project.zip", tmp_path / "dest")
    assert sorted(Workspace(tmp_path / "dest").files()) == ["out/accuracy.png", "train.py"]
    assert report.files == 2


def test_not_an_archive_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="not a zip or tar archive"):
        ingest_archive(b"just some text", "notes.txt", tmp_path / "dest")


def test_archive_top_directory_is_unwrapped_unless_the_checklist_names_paths_under_it(tmp_path):
    data = zip_bytes({"workspace/out/metrics.json": b"{}"})
    report = ingest_archive(data, "flowers.zip", tmp_path / "a", mentioned="1. writes out/metrics.json")
    assert Workspace(tmp_path / "a").files() == ["out/metrics.json"] and report.unwrapped == "workspace/"
    kept = ingest_archive(
        zip_bytes({"out/metrics.json": b"{}"}), "ws.zip", tmp_path / "b", mentioned="1. writes out/metrics.json",
    )
    assert Workspace(tmp_path / "b").files() == ["out/metrics.json"] and kept.unwrapped == ""
