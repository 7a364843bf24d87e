"""One insert at a time per ranklist: its lease is taken by one holder, renewed by it, and lapses one lease
after it goes silent (at once when its process is seen dead)."""

import socket
import time

import pytest

from judgeapp.ranker.runkind.lease import (
    LeaseLost,
    ranklist_lease_held,
    ranklist_lease_release,
    ranklist_lease_renew,
    ranklist_lease_try,
)
from judgeapp.ranker.services import candidates_in_dir, rank_run_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def ranklist(oracle_judge, oracle, tmp_path):
    oracle.write(tmp_path / "c", 3)
    run = rank_run_create(
        candidates=candidates_in_dir(tmp_path / "c"), goal="clarity", judge=oracle_judge, set_name="c", executor="inline",
    )
    return run.ranklists.get()


@pytest.mark.slow  # waits on the wall clock: a lease renewed, then let lapse
def test_a_ranklists_lease_has_one_holder_is_renewed_and_lapses_after_one_lease(ranklist, settings):
    settings.LEASE_SECONDS = 0.5
    first = ranklist_lease_try(ranklist_pk=ranklist.pk, holder="host-a:1:1")
    assert first is not None
    assert ranklist_lease_try(ranklist_pk=ranklist.pk, holder="host-b:1:1") is None
    ranklist.refresh_from_db()
    assert ranklist_lease_held(ranklist)

    time.sleep(0.3)
    ranklist_lease_renew(ranklist_pk=ranklist.pk, token=first)
    time.sleep(0.3)  # past the first lease, within the renewed one
    assert ranklist_lease_try(ranklist_pk=ranklist.pk, holder="host-b:1:1") is None

    time.sleep(0.6)  # silent for more than a lease
    ranklist.refresh_from_db()
    assert not ranklist_lease_held(ranklist)
    second = ranklist_lease_try(ranklist_pk=ranklist.pk, holder="host-b:1:1")
    assert second is not None
    with pytest.raises(LeaseLost):
        ranklist_lease_renew(ranklist_pk=ranklist.pk, token=first)
    ranklist_lease_release(ranklist_pk=ranklist.pk, token=first)  # not its own any more: changes nothing
    assert ranklist_lease_try(ranklist_pk=ranklist.pk, holder="host-c:1:1") is None

    ranklist_lease_release(ranklist_pk=ranklist.pk, token=second)
    assert ranklist_lease_try(ranklist_pk=ranklist.pk, holder="host-c:1:1") is not None


def test_a_dead_holders_ranklist_lease_is_taken_at_once(ranklist):
    dead = f"{socket.gethostname()}:999999:1:1"  # no such pid on this host
    assert ranklist_lease_try(ranklist_pk=ranklist.pk, holder=dead) is not None
    assert ranklist_lease_try(ranklist_pk=ranklist.pk, holder="host-b:1:1") is not None
