"""One insert at a time per ranklist: a lease on the Ranklist row.

Why a lease and not a transaction: an insert makes up to 2 + log2 N judge calls, seconds each. A
database transaction (SELECT ... FOR UPDATE) held across them would, on SQLite, hold the database's one
write lock for that long and stall every other writer (web, workers, CLI). Optimistic versioning (judge
without a lock, retry on a version conflict) would let two inserts spend judge calls on positions one of
them then has to throw away. So the row carries a lease, the app's one (judgeapp/judging/leases.py,
LEASE_SECONDS): taken and given back with conditional UPDATEs (short transactions), renewed by a heartbeat
while the insert runs (ranker/runkind/work.py) and after every judge call, where the holder also checks it
still holds it, as it does in the transaction that writes the entries. A holder that dies loses the lease
when its process is seen dead (same host) or when the lease runs out (elsewhere, within one lease); the next
holder replays the comparisons already made for free (they are stored).
"""

from __future__ import annotations

import uuid

from django.utils import timezone

from judgeapp.judging.leases import UNIT
from judgeapp.models import Ranklist


class LeaseLost(Exception):
    """This process no longer holds the ranklist's lease: another holder took over; stop writing."""


def ranklist_lease_try(*, ranklist_pk: int, holder: str) -> uuid.UUID | None:
    """Take the lease if it is free, expired, or held by a dead process; None when someone holds it."""
    rows = Ranklist.objects.filter(pk=ranklist_pk)
    for _pk, claim in UNIT.lapsed(rows):  # a dead holder's lease is taken back at once, not when it runs out
        UNIT.release(rows, claim)
    token, taken = UNIT.take(rows, holder=holder)
    return token if taken else None


def ranklist_lease_renew(*, ranklist_pk: int, token: uuid.UUID) -> None:
    if not UNIT.renew(Ranklist.objects.filter(pk=ranklist_pk), token):
        raise LeaseLost(f"lost the lease on ranklist {ranklist_pk}")


def ranklist_lease_release(*, ranklist_pk: int, token: uuid.UUID) -> None:
    UNIT.release(Ranklist.objects.filter(pk=ranklist_pk), token)


def ranklist_lease_held(ranklist: Ranklist) -> bool:
    """Someone holds a live lease (for the page: "an insert is in progress")."""
    return bool(ranklist.claim_token and ranklist.lease_expires_at and ranklist.lease_expires_at > timezone.now())
