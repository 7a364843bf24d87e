"""One lease for every piece of work that one holder must have alone: a judgment unit, a sequential run, a
ranklist's insert, a judge's slot (on the database limiter).

A lease is three columns of the row (`Lease` names them): a token (the claim: a write that must only be the
holder's filters on it), the holder's identity (`workers.worker_identity()`: host, pid, start time), and
when the lease runs out. It is taken with one conditional UPDATE over a queryset (the rows that are free, or
whose lease ran out), renewed by its holder while it works (`Heartbeat`), and given back with another
conditional UPDATE. Leases are short (`LEASE_SECONDS`, about twice the longest judge call): a holder that
goes silent (killed, its machine gone, its database out of reach) loses its rows within one lease; on the
same host a dead holder's rows are taken back at once (`lapsed`).

A holder that cannot renew (the database refused, or another holder took the row over) is told so by its
heartbeat (`Heartbeat.lost`): it stops starting work under the lease and gives back what it can.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import connections
from django.db.models import Q, QuerySet
from django.utils import timezone

from judgeapp.judging.workers import claimer_is_dead

log = logging.getLogger(__name__)


def lease_seconds() -> float:
    """How long a lease lasts without renewal (LEASE_SECONDS)."""
    return float(settings.LEASE_SECONDS)


@dataclass(frozen=True)
class Lease:
    """Which columns of a model hold its lease. `token=None`: the holder's identity is the claim (a judge's
    slot row, whose holder names are unique per call)."""

    token: str | None = "claim_token"
    holder: str = "claimed_by"
    until: str = "lease_expires_at"

    def free(self, now=None) -> Q:
        """Rows nobody holds, or whose lease ran out."""
        now = now or timezone.now()
        held = Q(**{f"{self.token}__isnull": True}) if self.token else Q(**{self.holder: ""})
        return held | Q(**{f"{self.until}__lt": now})

    def mine(self, token) -> Q:
        return Q(**{self.token: token}) if self.token else Q(**{self.holder: token})

    def new_claim(self, holder: str) -> uuid.UUID | str:
        """A claim to take rows under: a new token, or `holder` when the model has no token column."""
        return uuid.uuid4() if self.token else holder

    def take(
        self, rows: QuerySet, *, holder: str, seconds: float | None = None, free: Q | None = None, claim=None, **also
    ) -> tuple[uuid.UUID | str, int]:
        """Lease the rows of `rows` that are `free` (default: not held, or lapsed) in one UPDATE that also
        sets `also`. Returns the claim and how many rows it holds now.

        `claim` (from `new_claim`, made before the first try): rows this claim holds already count as free,
        so a take tried again after its answer was lost (the connection dropped as the UPDATE committed)
        finds the rows the first try took, instead of leaving them held by a claim nobody knows."""
        now = timezone.now()
        taking = free if free is not None else self.free(now)
        if claim is None:
            claim = self.new_claim(holder)
        elif taking:  # an empty Q() takes every row already (and `Q() | mine` would be `mine` alone)
            taking = taking | self.mine(claim)
        values = {self.holder: holder, self.until: now + timezone.timedelta(seconds=seconds or lease_seconds())}
        if self.token:
            values[self.token] = claim
        return claim, rows.filter(taking).update(**values, **also)

    def renew(self, rows: QuerySet, claim, seconds: float | None = None) -> int:
        """Push the lease of the rows this claim still holds one lease further; how many it holds."""
        until = timezone.now() + timezone.timedelta(seconds=seconds or lease_seconds())
        return rows.filter(self.mine(claim)).update(**{self.until: until})

    def release(self, rows: QuerySet, claim, **also) -> int:
        """Give back the rows this claim still holds (setting `also` on them)."""
        values = {self.holder: "", self.until: None}
        if self.token:
            values[self.token] = None
        return rows.filter(self.mine(claim)).update(**values, **also)

    def expire(self, rows: QuerySet, claim) -> int:
        """End the lease of the rows this claim holds now, leaving its token: the next holder takes them at
        once and knows the work under it was begun (a planner cut off by its time limit hands over so)."""
        return rows.filter(self.mine(claim)).update(**{self.until: timezone.now()})

    def lapsed(self, rows: QuerySet, now=None) -> list[tuple[int, object]]:
        """(pk, claim) of the held rows of `rows` whose lease ran out or whose holder is a dead process of
        this host. Release each with `release(rows.filter(pk=pk), claim)`: a holder that renewed meanwhile
        keeps its row only if its lease had not run out (the claim is the same), which is the rule."""
        now = now or timezone.now()
        claim_field = self.token or self.holder
        held = rows.exclude(**({f"{self.token}__isnull": True} if self.token else {self.holder: ""}))
        found = []
        for pk, claim, holder, until in held.values_list("pk", claim_field, self.holder, self.until):
            if (until is not None and until < now) or claimer_is_dead(holder):
                found.append((pk, claim))
        return found


UNIT = Lease()  # Judgment, Run (a sequential run), Ranklist
SLOT = Lease(token=None, holder="holder", until="leased_until")  # JudgeSlot


class Heartbeat:
    """Renew a lease while its holder works: every third of a lease, in a thread, with its own database
    connection. `lost` is set when a renewal finds the claim gone (another holder took the rows over) or
    cannot reach the database for as long as the lease lasts: the holder must stop starting work under it.

        with Heartbeat(UNIT, Judgment.objects.filter(pk__in=ids), token) as beat:
            for unit in units:
                if beat.lost.is_set(): break
                ...
    """

    def __init__(self, lease: Lease, rows: QuerySet, claim, *, seconds: float | None = None, name: str = "lease"):
        self.lease, self.rows, self.claim = lease, rows, claim
        self.seconds = seconds or lease_seconds()
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"judgeapp-{name}-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=self.seconds)

    def _beat(self) -> None:
        last_renewed = timezone.now()
        try:
            while not self._stop.wait(self.seconds / 3):
                try:
                    held = self.lease.renew(self.rows, self.claim, self.seconds)
                except Exception as exc:  # noqa: BLE001 - the database is out of reach: the lease runs on until it lapses
                    connections.close_all()
                    if (timezone.now() - last_renewed).total_seconds() >= self.seconds:
                        log.warning("lease %s lapsed: the database could not be reached to renew it (%s)", self.claim, exc)
                        self.lost.set()
                        return
                    continue
                if not held:
                    self.lost.set()
                    return
                last_renewed = timezone.now()
        finally:
            connections.close_all()
