"""Failed logins and failed API tokens, throttled per account and per address (docs/api.md, "Throttles").

The rule:
- A failure — a wrong username or password on the login page, a wrong token at the API — counts against two
  keys: the account tried (the username typed; the user whose token prefix was sent) and the client's
  address. A key with AUTH_FAILURE_LIMIT failures within AUTH_FAILURE_WINDOW_SECONDS of its first one is
  locked until that window ends: the failure that reaches the limit and every attempt after it are answered
  429 with Retry-After, before any password or token is checked, so that guessing on learns nothing — a
  right guess included.
- A success resets nothing. If a success cleared the address's count, an attacker holding one account of
  their own could log into it between guesses at others; if it cleared the account's, every login of the
  real user would hand an attacker a fresh allowance. Counts fall away only with their window. (The price:
  someone failing 30 times at an account locks its owner out for up to one window; the limit is a setting.)
- The address is REMOTE_ADDR. X-Forwarded-For is trusted only behind TRUSTED_PROXY_COUNT proxies: then the
  address is the entry the outermost of them wrote (counted from the right; the entries to its left are the
  client's own to write). An IPv6 address counts as its /64, which one machine usually holds whole.
- The counts are rows of the database (AuthFailureCount), updated with one conditional UPDATE per key: every
  web process on every machine shares them, increments are atomic, and nothing beyond `migrate` sets them
  up. Django's default cache is per process (LocMemCache: each gunicorn worker would allow its own 30), and
  its database cache increments by a read and a write (concurrent failures are lost).
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import unicodedata
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Case, F, Q, Value, When
from django.http import HttpRequest
from django.utils import timezone

from judgeapp.models import AuthFailureCount

Scope = AuthFailureCount.Scope
Kind = AuthFailureCount.Kind
ACCOUNT_MAX = 300  # characters of a typed username kept for its key (the form refuses longer ones anyway)


class Throttled(Exception):
    """Too many failures for the account or from the address: answer 429 with `Retry-After: retry_after`."""

    def __init__(self, retry_after: int):
        self.retry_after = retry_after
        super().__init__(
            f"too many failed attempts for this account or from this address: try again in {wait_words(retry_after)}"
        )


@dataclass(frozen=True)
class ThrottleKey:
    scope: str
    kind: str
    value: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(f"{self.scope}\0{self.kind}\0{self.value}".encode("utf-8", "surrogatepass")).hexdigest()


def wait_words(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{math.ceil(seconds / 60)} minutes"


def client_address(request: HttpRequest) -> str:
    """The address failures are counted against (see the module's rule)."""
    address = request.META.get("REMOTE_ADDR") or ""
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies > 0:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
        if forwarded:
            address = forwarded[-min(proxies, len(forwarded))]
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address[:100]  # not an address (a proxy writing something else): counted as it reads
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def account_name(username: str) -> str:
    """The account a typed username names, as a key: "Alice", "alice " and "ａｌｉｃｅ" count together."""
    return unicodedata.normalize("NFKC", username or "").strip().casefold()[:ACCOUNT_MAX]


def throttle_keys(*, scope: str, address: str, account: str | None) -> list[ThrottleKey]:
    """The keys a failure counts against: the address (client_address), and the account when one was named."""
    keys = [ThrottleKey(scope, Kind.ADDRESS, address)]
    if account:
        keys.append(ThrottleKey(scope, Kind.ACCOUNT, account))
    return keys


def _window() -> timedelta:
    return timedelta(seconds=settings.AUTH_FAILURE_WINDOW_SECONDS)


def auth_failures_check(*, keys: list[ThrottleKey]) -> None:
    """Raise Throttled when any key is locked, with the seconds until the last of their windows ends."""
    limit = settings.AUTH_FAILURE_LIMIT
    if limit <= 0 or not keys:
        return
    now, window = timezone.now(), _window()
    starts = list(
        AuthFailureCount.objects.filter(
            key_hash__in=[key.digest for key in keys], failures__gte=limit, window_start__gt=now - window
        ).values_list("window_start", flat=True)
    )
    if starts:
        raise Throttled(retry_after=max(1, math.ceil((max(starts) + window - now).total_seconds())))


def auth_failure_record(*, keys: list[ThrottleKey]) -> None:
    """Count one failure against each key; raise Throttled when that locks one of them."""
    if settings.AUTH_FAILURE_LIMIT <= 0 or not keys:
        return
    now, window = timezone.now(), _window()
    ended = Q(window_start__lte=now - window)
    counted = {
        # One statement per key: two failures at the same moment both count (SQL reads the row's old values
        # on the right-hand side, so a window that ended restarts at 1).
        "failures": Case(When(ended, then=Value(1)), default=F("failures") + 1),
        "window_start": Case(When(ended, then=Value(now)), default=F("window_start")),
        "updated_at": now,
    }
    for key in keys:
        counter = AuthFailureCount.objects.filter(key_hash=key.digest)
        if counter.update(**counted):
            continue
        try:
            with transaction.atomic():
                AuthFailureCount.objects.create(scope=key.scope, kind=key.kind, key_hash=key.digest, window_start=now, failures=1)
        except IntegrityError:  # another request recorded this key's first failure a moment ago
            counter.update(**counted)
    # Counters whose window ended are as good as none; a spray of made-up usernames does not pile up.
    AuthFailureCount.objects.filter(window_start__lte=now - window).delete()
    auth_failures_check(keys=keys)
