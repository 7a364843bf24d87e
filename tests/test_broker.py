"""The embedded broker hands a consumer whole messages only."""

from queue import Empty

import pytest
from kombu import Connection

import judgeapp.broker


@pytest.fixture
def channel(tmp_path):
    folders = {"data_folder_in": str(tmp_path), "data_folder_out": str(tmp_path), "control_folder": str(tmp_path / "control")}
    with Connection("filesystem://", transport="judgeapp.broker:Transport", transport_options=folders) as connection:
        yield connection.default_channel


def test_a_message_being_written_is_not_offered_to_the_consumer(channel, monkeypatch):
    """The consumer looks at the folder at the worst moment: the file is open and nothing is written yet."""
    from kombu.transport import filesystem

    real_dumps = filesystem.dumps
    offered_while_writing = []

    def dumps_while_a_consumer_looks(payload):
        try:
            offered_while_writing.append(channel._get("jobs"))
        except Empty:
            pass
        return real_dumps(payload)

    monkeypatch.setattr(filesystem, "dumps", dumps_while_a_consumer_looks)
    monkeypatch.setattr(judgeapp.broker, "dumps", dumps_while_a_consumer_looks)
    channel._put("jobs", {"body": "a unit"})
    assert offered_while_writing == []
    assert channel._get("jobs") == {"body": "a unit"}
    with pytest.raises(Empty):
        channel._get("jobs")


def test_the_app_uses_the_atomic_transport_for_the_embedded_broker(settings):
    from judgeapp.celery import app

    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        pytest.skip("a server broker is configured")
    with app.connection_for_write() as connection:
        assert isinstance(connection.transport, judgeapp.broker.Transport)
