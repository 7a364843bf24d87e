"""Writes of the API: tokens created, checked and revoked (each creation and revocation audited), and a run
started at most once per Idempotency-Key."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Callable
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from judgeapp.judging.audit import audit_log_create, cli_actor
from judgeapp.judging.content import InputFile
from judgeapp.judging.errors import InputError
from judgeapp.models import ApiToken, AuditLog, IdempotencyKey, Run, content_hash
from judgeapp.models.api import TOKEN_SCHEME, token_digest
from judgeapp.throttle import Scope, auth_failure_record, auth_failures_check, throttle_keys

PREFIX_BYTES = 6  # 12 hex digits: enough that two tokens never need the same prefix
SECRET_BYTES = 32
NAME_MAX = 100
# last_used_at is written at most this often per token: a CI job polling its run every second would
# otherwise make every read a write.
LAST_USED_RESOLUTION = timedelta(seconds=60)
IDEMPOTENCY_KEY_MAX = 200


class IdempotencyConflict(Exception):
    """The Idempotency-Key was used before with another request: the API answers 409."""


def api_token_create(*, user, name: str = "", actor=None) -> tuple[ApiToken, str]:
    """A new token for `user`: (its row, the token). The token is returned once and never stored; only its
    sha256 is. `actor` is who created it (None: the command line)."""
    name = " ".join((name or "").split()) or "token"
    if len(name) > NAME_MAX:
        raise InputError(f"the token's name is {len(name)} characters; at most {NAME_MAX}")
    prefix = secrets.token_hex(PREFIX_BYTES)
    token = f"{TOKEN_SCHEME}_{prefix}_{secrets.token_urlsafe(SECRET_BYTES)}"
    with transaction.atomic():
        row = ApiToken.objects.create(user=user, name=name, prefix=prefix, secret_hash=token_digest(token))
        audit_log_create(
            actor=actor or cli_actor(),
            action=AuditLog.Action.TOKEN_CREATED,
            subject=f"API token {row.shown} ({name}) of {user.username}",
            detail={"token": str(row.uuid), "prefix": prefix, "name": name, "user": user.username},
        )
    return row, token


def api_token_revoke(*, token: ApiToken, actor=None) -> bool:
    """Revoke a token; False when it already was (nothing is written or audited twice)."""
    with transaction.atomic():
        revoked = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        if not revoked:
            return False
        token.refresh_from_db(fields=["revoked_at"])
        audit_log_create(
            actor=actor or cli_actor(),
            action=AuditLog.Action.TOKEN_REVOKED,
            subject=f"API token {token.shown} ({token.name}) of {token.user.username}",
            detail={"token": str(token.uuid), "prefix": token.prefix, "name": token.name, "user": token.user.username},
        )
    return True


def api_token_authenticate(*, token: str, address: str | None = None) -> ApiToken | None:
    """The active token this Bearer value is, with its user (active), or None. Marks its last use.

    With `address` (the client's, as the API sees it) failures are throttled (judgeapp/throttle.py): a wrong
    token counts against the address, and a wrong secret after a real prefix also against that token's
    user; Throttled once either is locked, before the token is checked. A revoked token or an inactive
    user's counts against the address alone: its secret was not guessed.
    """
    scheme, _, rest = token.partition("_")
    prefix, _, secret = rest.partition("_")
    well_formed = scheme == TOKEN_SCHEME and bool(prefix) and bool(secret)
    row = ApiToken.objects.select_related("user").filter(prefix=prefix).first() if well_formed else None
    keys = []
    if address is not None:
        keys = throttle_keys(scope=Scope.API, address=address, account=f"user:{row.user_id}" if row is not None else None)
        auth_failures_check(keys=keys)
    # compare_digest: the time taken says nothing about how much of the hash matched.
    if row is None or not hmac.compare_digest(row.secret_hash, token_digest(token)):
        auth_failure_record(keys=keys)
        return None
    if row.revoked_at is not None or not row.user.is_active:
        auth_failure_record(keys=keys[:1])  # the address alone (throttle_keys puts it first): nobody guessed this secret
        return None
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
        row.last_used_at = now
    return row


# --- Starting a run at most once per Idempotency-Key ------------------------------------------------------


def idempotency_key_check(key: str | None) -> str | None:
    if key is None:
        return None
    key = key.strip()
    if not key or len(key) > IDEMPOTENCY_KEY_MAX or not key.isprintable() or not key.isascii():
        raise InputError(f"Idempotency-Key: give 1 to {IDEMPOTENCY_KEY_MAX} printable ASCII characters")
    return key


def request_fingerprint(*, endpoint: str, fields: dict[str, object], files: dict[str, InputFile]) -> str:
    """sha256 of what a run-starting request asked for: the endpoint, its fields, each file's name and content."""
    canonical = {
        "endpoint": endpoint,
        "fields": {k: v for k, v in sorted(fields.items()) if v not in (None, "")},
        "files": {k: [f.name, content_hash(f.data)] for k, f in sorted(files.items())},
    }
    return hashlib.sha256(json.dumps(canonical, sort_keys=True, default=str).encode()).hexdigest()


def _replayed(user, key: str, request_hash: str) -> Run | None:
    entry = IdempotencyKey.objects.select_related("run").filter(user=user, key=key).first()
    if entry is None:
        return None
    if entry.request_hash != request_hash:
        raise IdempotencyConflict(
            f"Idempotency-Key {key!r} was used for another request (run {entry.run.run_id}); use a new key for a new run"
        )
    return entry.run


def run_start_idempotent(*, user, key: str | None, request_hash: str, create: Callable[[], Run]) -> tuple[Run, bool]:
    """(the run, whether it was started now). Without a key, `create()` starts a run. With one, the first
    request under it starts the run and keeps the key beside it, in one transaction; the same request
    again gets that run back, another request under the same key raises IdempotencyConflict.

    A request that failed (bad input) keeps no key: the retry, fixed, starts its run.
    """
    if key is None:
        return create(), True
    run = _replayed(user, key, request_hash)
    if run is not None:
        return run, False
    try:
        # The run's task is sent when this transaction commits; if the key is taken meanwhile (a retry
        # racing the first request), the run and its inputs roll back and nothing is sent.
        with transaction.atomic():
            run = create()
            IdempotencyKey.objects.create(user=user, key=key, request_hash=request_hash, run=run)
    except IntegrityError:
        run = _replayed(user, key, request_hash)
        if run is None:
            raise
        return run, False
    return run, True
