"""Foundation fix: a judge's concurrency slots held by a killed worker are freed for the living at once,
instead of after the hard time limit (which stalled every other worker calling that judge)."""

import socket
import threading

import pytest
from django.db import connections
from django.utils import timezone

from judgeapp.models import JudgeSlot
from judgeapp.services.judges import DatabaseSlotLimiter
from judgeapp.workers import worker_identity

pytestmark = pytest.mark.django_db

DEAD = f"{socket.gethostname()}:999999:1:1:abcd1234"  # no such pid on this host
ELSEWHERE = "another-host:4242:1:1:abcd1234"


def hold(name: str, slot: int, holder: str) -> None:
    JudgeSlot.objects.create(judge_name=name, slot=slot, holder=holder, leased_until=timezone.now() + timezone.timedelta(minutes=10))


def test_a_caller_takes_a_slot_a_dead_worker_left_leased(transactional_db):
    hold("j", 0, DEAD)
    hold("j", 1, DEAD)
    limiter = DatabaseSlotLimiter()
    entered = threading.Event()

    def call():
        try:
            with limiter("j", 2):
                entered.set()
        finally:
            connections.close_all()

    # In a thread, so that the old behaviour (waiting out the 10-minute lease) fails instead of hanging.
    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    caller.join(timeout=10)
    assert entered.is_set()
    assert not JudgeSlot.objects.filter(judge_name="j", holder=DEAD).exists()


def test_only_dead_holders_on_this_host_are_released():
    hold("k", 0, DEAD)
    hold("k", 1, ELSEWHERE)
    hold("k", 2, f"{worker_identity()}:live0001")
    assert DatabaseSlotLimiter.release_dead_holders("k", 3) == 1
    holders = dict(JudgeSlot.objects.filter(judge_name="k").values_list("slot", "holder"))
    assert holders == {0: "", 1: ELSEWHERE, 2: f"{worker_identity()}:live0001"}
