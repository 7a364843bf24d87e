"""The cross-process judge limiter: a killed holder's slot is taken back, a live one's is not."""

import socket
import time

import pytest
from django.utils import timezone

import judgeapp.judging.limiters as limiters_module
from judgeapp.judging.limiters import DatabaseSlotLimiter
from judgeapp.judging.workers import worker_identity
from judgeapp.models import JudgeSlot

pytestmark = pytest.mark.django_db


def hold_every_slot(holder: str, n: int = 2) -> None:
    until = timezone.now() + timezone.timedelta(hours=1)
    JudgeSlot.objects.bulk_create([JudgeSlot(judge_name="j", slot=i, holder=f"{holder}:{i}", leased_until=until) for i in range(n)])


def acquired_within(seconds: float, monkeypatch) -> bool:
    """Whether a caller gets one of the judge's 2 slots before `seconds` of waiting."""
    deadline = time.monotonic() + seconds
    real_sleep = time.sleep

    def sleep_until_the_deadline(pause):
        if time.monotonic() > deadline:
            raise TimeoutError
        real_sleep(pause)

    monkeypatch.setattr(limiters_module.time, "sleep", sleep_until_the_deadline)
    try:
        with DatabaseSlotLimiter()("j", 2):
            return True
    except TimeoutError:
        return False
    finally:
        monkeypatch.undo()


def test_slots_of_a_killed_process_on_this_host_are_taken_back_at_once(monkeypatch):
    hold_every_slot(f"{socket.gethostname()}:999999:1:1")  # no such pid on this host
    assert acquired_within(3, monkeypatch)
    assert JudgeSlot.objects.filter(holder="").count() == 2  # both taken back; the one used given back after


def test_slots_of_a_live_process_are_left_alone(monkeypatch):
    hold_every_slot(worker_identity())
    assert not acquired_within(1.5, monkeypatch)
    assert JudgeSlot.objects.filter(holder="").count() == 0
