"""The HTTP API's tokens and the Idempotency-Key records that let a retried CI step get its run back."""

import hashlib
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from .base import TimeStampedModel

# A token reads `ja_<prefix>_<secret>`: the prefix is public (it finds the row and is shown on the profile
# page), the secret is 32 random bytes that only the token's holder has; the row keeps its sha256 alone.
TOKEN_SCHEME = "ja"


def token_digest(token: str) -> str:
    """sha256 of the whole token. A fast hash is enough: the secret has 256 bits, nothing to guess."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class ApiToken(TimeStampedModel):
    """A user's token for the HTTP API: it acts with its user's role, until it is revoked."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'github-actions'.")
    prefix = models.CharField(max_length=16, unique=True, help_text="The token's public part, to find its row.")
    secret_hash = models.CharField(max_length=64, help_text="sha256 of the whole token; the token itself is never stored.")
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The profile page: a user's tokens, newest first.
            models.Index(fields=["user", "-created_at"], name="apitoken_per_user_newest"),
        ]

    def __str__(self):
        return f"{self.user} {self.name} ({self.prefix})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def shown(self) -> str:
        """How the token is named where the secret must not appear: its public prefix."""
        return f"{TOKEN_SCHEME}_{self.prefix}_…"


class IdempotencyKey(TimeStampedModel):
    """An `Idempotency-Key` a user sent with a request that started a run: the same key again returns that
    run, and the same key with another request is refused (409)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64, help_text="sha256 of the request's endpoint, fields and files.")
    run = models.ForeignKey("judgeapp.Run", on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            # One run per (user, key): two retries racing each other get the same run.
            models.UniqueConstraint(fields=["user", "key"], name="idempotencykey_unique_per_user"),
            models.CheckConstraint(condition=~Q(key=""), name="idempotencykey_not_empty"),
        ]

    def __str__(self):
        return f"{self.user} {self.key} -> {self.run_id}"
