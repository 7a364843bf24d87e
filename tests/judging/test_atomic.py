"""Reports, comparisons and exports are written whole or not at all."""

import pytest

from judgeapp.judging import atomic


def test_a_write_replaces_the_file_whole_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old\n")
    atomic.write_text_atomic(target, atomic.json_text({"mean": 4.0, "name": "café"}))
    assert target.read_text(encoding="utf-8") == '{\n  "mean": 4.0,\n  "name": "café"\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_a_write_that_fails_midway_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "report.json"
    target.write_text("old\n")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", disk_full)
    with pytest.raises(OSError):
        atomic.write_text_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
