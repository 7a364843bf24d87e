"""Foundation fix: the embedded broker never shows a worker a message that is still being written."""

import json
import os

from kombu import Connection
from kombu.transport import resolve_transport

from judgeapp import broker


def test_the_filesystem_broker_is_the_one_with_whole_messages():
    assert resolve_transport("filesystem") is broker.Transport


def test_a_message_appears_under_its_queue_name_only_once_written_whole(tmp_path, monkeypatch):
    folder = tmp_path / "queue"
    folder.mkdir()
    seen_before_rename = []
    real_replace = os.replace

    def replace(source, target):
        # What a polling worker could pick up right now (files named "<...>.<queue>.msg"), while the
        # message being put is already written: it must not be among them yet.
        visible = [n for n in os.listdir(folder) if n.partition(".")[2] == "jobs.msg"]
        seen_before_rename.append(len(visible))
        assert os.path.basename(target) not in visible
        assert os.path.basename(source).partition(".")[2] != "jobs.msg"
        real_replace(source, target)

    monkeypatch.setattr(broker.os, "replace", replace)
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder)}
    with Connection("filesystem://", transport_options=options) as connection:
        queue = connection.SimpleQueue("jobs")
        for i in range(3):
            queue.put({"n": i})
        assert seen_before_rename == [0, 1, 2]
        files = sorted(n for n in os.listdir(folder) if n.endswith(".jobs.msg"))
        assert len(files) == 3 and not [n for n in os.listdir(folder) if n.endswith(".partial")]
        for name in files:
            json.loads((folder / name).read_text())  # every visible message is complete
        received = [queue.get(timeout=1).payload["n"] for _ in range(3)]
        assert sorted(received) == [0, 1, 2]
        queue.close()
