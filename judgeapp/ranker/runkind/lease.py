"""One insert at a time per ranklist: a lease on the Ranklist row.

Why a lease and not a transaction: an insert makes up to 2 + log2 N judge calls, seconds each. A
database transaction (SELECT ... FOR UPDATE) held across them would, on SQLite, hold the database's one
write lock for that long and stall every other writer (web, workers, CLI). Optimistic versioning (judge
without a lock, retry on a version conflict) would let two inserts spend judge calls on positions one of
them then has to throw away. So the row carries a lease, taken and given back with conditional UPDATEs
(short transactions); the holder renews it after every judge call and checks it still holds it in the
transaction that writes the entries. A holder that dies loses the lease when its process is seen dead
(same host) or when the lease runs out (elsewhere); the next holder replays the comparisons already
made for free (they are stored).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from judgeapp.judging.workers import claimer_is_dead
from judgeapp.models import Ranklist


class LeaseLost(Exception):
    """This process no longer holds the ranklist's lease: another holder took over; stop writing."""


def lease_seconds() -> int:
    # One judge call (its retries included) fits in a unit's time limit; the lease is renewed after each.
    return settings.UNIT_HARD_TIME_LIMIT + 60


def ranklist_lease_try(*, ranklist_pk: int, holder: str) -> uuid.UUID | None:
    """Take the lease if it is free, expired, or held by a dead process; None when someone holds it."""
    token = uuid.uuid4()
    now = timezone.now()
    until = now + timezone.timedelta(seconds=lease_seconds())
    free = Q(claim_token__isnull=True) | Q(lease_expires_at__lt=now)
    if Ranklist.objects.filter(free, pk=ranklist_pk).update(claim_token=token, claimed_by=holder, lease_expires_at=until):
        return token
    current = Ranklist.objects.filter(pk=ranklist_pk).values("claim_token", "claimed_by").first()
    if current and current["claim_token"] and claimer_is_dead(current["claimed_by"]):
        if Ranklist.objects.filter(pk=ranklist_pk, claim_token=current["claim_token"]).update(
            claim_token=token, claimed_by=holder, lease_expires_at=until
        ):
            return token
    return None


def ranklist_lease_renew(*, ranklist_pk: int, token: uuid.UUID) -> None:
    until = timezone.now() + timezone.timedelta(seconds=lease_seconds())
    if not Ranklist.objects.filter(pk=ranklist_pk, claim_token=token).update(lease_expires_at=until):
        raise LeaseLost(f"lost the lease on ranklist {ranklist_pk}")


def ranklist_lease_release(*, ranklist_pk: int, token: uuid.UUID) -> None:
    Ranklist.objects.filter(pk=ranklist_pk, claim_token=token).update(claim_token=None, claimed_by="", lease_expires_at=None)


def ranklist_lease_held(ranklist: Ranklist) -> bool:
    """Someone holds a live lease (for the page: "an insert is in progress")."""
    return bool(ranklist.claim_token and ranklist.lease_expires_at and ranklist.lease_expires_at > timezone.now())
