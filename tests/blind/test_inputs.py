"""Reading the blind comparator's inputs: version directories with run-* directories, archives,
expectations; bad input is one clear InputError."""

import io
import json
import zipfile

import pytest

from judgeapp.blind.core.inputs import parse_expectations, read_version_dir, read_version_zip, split_version_argument
from judgeapp.blind.core.replies import render_run
from judgeapp.judging.errors import InputError

LIMIT = 10_000


def write(root, files):
    for path, data in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data if isinstance(data, bytes) else data.encode())
    return root


def test_every_run_directory_is_a_run_in_natural_order(tmp_path):
    write(tmp_path, {"run-10/a.md": "ten", "run-2/a.md": "two", "run-1/sub/b.md": "one", "run-1/a.md": "one-a"})
    content = read_version_dir(tmp_path, max_run_bytes=LIMIT)
    assert [r.real_name for r in content.runs] == ["run-1", "run-2", "run-10"]
    assert [f.path for f in content.runs[0].files] == ["a.md", "sub/b.md"]


def test_a_directory_without_runs_is_a_single_run(tmp_path):
    write(tmp_path, {"report.md": "r", "data/table.csv": "a,b"})
    content = read_version_dir(tmp_path, max_run_bytes=LIMIT)
    assert len(content.runs) == 1 and content.runs[0].real_name == ""
    assert [f.path for f in content.runs[0].files] == ["data/table.csv", "report.md"]


def test_files_beside_run_directories_are_counted_not_compared(tmp_path):
    write(tmp_path, {"run-1/a.md": "x", "run-2/a.md": "y", "notes.txt": "z"})
    content = read_version_dir(tmp_path, max_run_bytes=LIMIT)
    assert content.stray_files == 1 and len(content.runs) == 2


def test_hidden_files_and_symbolic_links_are_skipped(tmp_path):
    outside = write(tmp_path / "outside", {"secret.txt": "do not read"})
    version = write(tmp_path / "v", {"a.md": "x", ".git/config": "[core]", ".DS_Store": "junk"})
    (version / "link.txt").symlink_to(outside / "secret.txt")
    (version / "linked-dir").symlink_to(outside)
    content = read_version_dir(version, max_run_bytes=LIMIT)
    assert [f.path for f in content.runs[0].files] == ["a.md"]


def test_binary_files_are_listed_not_shown(tmp_path):
    write(tmp_path, {"chart.png": b"\x89PNG\x00\x00" + b"\x01" * 50_000, "a.md": "text"})
    content = read_version_dir(tmp_path, max_run_bytes=LIMIT)
    shown = render_run(content.runs[0])
    assert 'path="chart.png" binary="true"' in shown and "not shown" in shown and "\x89PNG" not in shown


@pytest.mark.parametrize(
    "files, message",
    [
        ({}, "no files to compare"),
        ({".hidden": "x"}, "no files to compare"),
        ({"big.md": "x" * (LIMIT + 1)}, "over the limit"),
        ({"run-1/a.md": "x" * 6000, "run-1/b.md": "y" * 6000}, "run-1: 12,000 bytes of text is over the limit"),
    ],
)
def test_unusable_versions_are_refused_with_one_line(tmp_path, files, message):
    write(tmp_path, files)
    with pytest.raises(InputError, match=message):
        read_version_dir(tmp_path, max_run_bytes=LIMIT)


def test_a_missing_directory_is_refused(tmp_path):
    with pytest.raises(InputError, match="no such directory"):
        read_version_dir(tmp_path / "nope", max_run_bytes=LIMIT)
    (tmp_path / "file.md").write_text("x")
    with pytest.raises(InputError, match="not a directory"):
        read_version_dir(tmp_path / "file.md", max_run_bytes=LIMIT)


def zipped(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_an_archive_with_one_wrapping_directory_is_unwrapped():
    content = read_version_zip(zipped({"myversion/run-1/a.md": "x", "myversion/run-2/a.md": "y"}),
                               name="v", max_run_bytes=LIMIT, max_total_bytes=10 * LIMIT)
    assert [r.real_name for r in content.runs] == ["run-1", "run-2"]


@pytest.mark.parametrize("entry", ["../evil.md", "/etc/passwd", "C:/x.md"])
def test_an_archive_entry_pointing_outside_is_refused(entry):
    with pytest.raises(InputError, match="points outside the archive"):
        read_version_zip(zipped({entry: "x"}), name="v", max_run_bytes=LIMIT, max_total_bytes=10 * LIMIT)


def test_a_file_that_is_not_an_archive_is_refused():
    with pytest.raises(InputError, match="not a valid zip archive"):
        read_version_zip(b"plain text", name="v.zip", max_run_bytes=LIMIT, max_total_bytes=LIMIT)


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"", []),
        (b"  \n", []),
        (b"[]", []),
        (json.dumps(["has steps", "  has   a rollback "]).encode(), ["has steps", "has a rollback"]),
        (json.dumps({"expectations": ["x"]}).encode(), ["x"]),
        (json.dumps([{"text": "from skill-creator"}]).encode(), ["from skill-creator"]),
        (b"# comment\n- has steps\n\n2. has a rollback\n", ["has steps", "has a rollback"]),
    ],
)
def test_expectations_formats(data, expected):
    assert parse_expectations(data, "e") == expected


@pytest.mark.parametrize(
    "data, message",
    [(b"[1, 2]", "must be a non-empty text"), (b"{\"x\": 1}", "needs an 'expectations' array"), (b"[oops", "not valid JSON"),
     (b"\x00\x01", "binary")],
)
def test_bad_expectations_are_refused(data, message):
    with pytest.raises(InputError, match=message):
        parse_expectations(data, "e")


def test_version_arguments_are_label_equals_directory():
    assert split_version_argument("A=out/a") == ("A", "out/a")
    with pytest.raises(InputError, match="expected LABEL=DIR"):
        split_version_argument("out/a")


def test_an_empty_run_directory_is_a_run_that_produced_nothing(tmp_path):
    write(tmp_path, {"run-1/a.md": "x", "run-2/a.md": "y"})
    (tmp_path / "run-3").mkdir()
    content = read_version_dir(tmp_path, max_run_bytes=LIMIT)
    assert [r.real_name for r in content.runs] == ["run-1", "run-2", "run-3"]
    assert content.runs[2].files == [] and render_run(content.runs[2]) == "(this run produced no files)"


def test_an_empty_run_directory_in_an_archive_is_kept():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("v/run-1/a.md", "x")
        archive.writestr(zipfile.ZipInfo("v/run-2/"), "")
    content = read_version_zip(buffer.getvalue(), name="v", max_run_bytes=LIMIT, max_total_bytes=LIMIT)
    assert [r.real_name for r in content.runs] == ["run-1", "run-2"] and content.runs[1].files == []
