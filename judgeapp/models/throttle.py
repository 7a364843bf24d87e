"""Failed logins and failed API tokens, counted per account and per address (judgeapp/throttle.py)."""

from django.db import models

from .base import TimeStampedModel


class AuthFailureCount(TimeStampedModel):
    """The failures of one key — an account or a client address, on the login page or at the API — in the
    window that began at `window_start`. A failure after the window ended starts a new window at 1.

    The key is stored as a sha256: what someone typed into the username field (a mistyped password, often)
    and the addresses of the people who typed it stay out of the database."""

    class Scope(models.TextChoices):
        LOGIN = "login", "the login page"
        API = "api", "an API token"

    class Kind(models.TextChoices):
        ACCOUNT = "account"
        ADDRESS = "address"

    scope = models.CharField(max_length=8, choices=Scope.choices)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    key_hash = models.CharField(max_length=64, help_text="sha256 of the scope, the kind and the account or address.")
    window_start = models.DateTimeField()
    failures = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            # One counter per key: two failures at the same moment add to the same row.
            models.UniqueConstraint(fields=["key_hash"], name="authfailurecount_unique_key"),
        ]
        indexes = [
            # Dropping the counters whose window ended long ago.
            models.Index(fields=["window_start"], name="authfailurecount_by_window"),
        ]

    def __str__(self):
        return f"{self.scope} {self.kind} {self.key_hash[:12]}: {self.failures} since {self.window_start:%Y-%m-%d %H:%M}"
