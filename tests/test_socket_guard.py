"""No test reaches beyond the loopback (tests/conftest.py), and none inherits a developer's real endpoint."""

import os
import socket
import time

import pytest

from judgeapp.judging.endpoints import client_for
from judgeapp.judging.judge_errors import JudgeUnavailable
from judgeapp.models import Judge
from tests.conftest import InternetBlocked


def test_connecting_beyond_the_loopback_raises_at_once():
    started = time.monotonic()
    with socket.socket() as s, pytest.raises(InternetBlocked, match="192.0.2.1"):
        s.connect(("192.0.2.1", 80))  # TEST-NET-1: never routed
    with socket.socket() as s, pytest.raises(InternetBlocked):
        s.connect_ex(("2001:db8::1" if socket.has_ipv6 else "198.51.100.7", 443))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s, pytest.raises(InternetBlocked):
        s.sendto(b"x", ("203.0.113.9", 53))
    assert time.monotonic() - started < 1  # refused here, not after a network timeout


def test_the_loopback_stays_reachable():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=2):
            pass
        with socket.create_connection(("localhost", server.getsockname()[1]), timeout=2):
            pass


def test_the_environment_names_no_real_endpoint_or_key():
    assert "OPENAI_BASE_URL" not in os.environ and "OPENAI_API_KEY" not in os.environ


@pytest.mark.django_db
def test_a_judge_pointed_beyond_the_loopback_fails_without_leaving_the_machine():
    judge = Judge.objects.create(name="remote", model="gpt-4o", base_url="http://192.0.2.1/v1", timeout_seconds=30)
    started = time.monotonic()
    with pytest.raises(JudgeUnavailable):
        client_for(judge).chat([{"role": "user", "content": "hello"}])
    assert time.monotonic() - started < 10
