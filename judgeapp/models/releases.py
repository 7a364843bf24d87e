"""Releases and the release gate: what shipped (per system, from a run, with its mean) and the leads'
approve/block decisions on a run. Every write here also goes to the AuditLog."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from .base import TimeStampedModel


class Release(TimeStampedModel):
    """A run a lead marked as released: its mean is the baseline the system's next runs must not fall below."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    system = models.ForeignKey("judgeapp.System", on_delete=models.PROTECT, related_name="releases")
    run = models.ForeignKey("judgeapp.Run", on_delete=models.PROTECT, related_name="releases")
    mean = models.FloatField(help_text="The run's mean score when it was released.")
    label = models.CharField(max_length=100, blank=True, help_text="The version shipped, e.g. v2.4.0.")
    note = models.TextField(blank=True)
    released_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # A run ships once; two leads clicking at the same moment get one release.
            models.UniqueConstraint(fields=["run"], name="release_unique_run"),
        ]
        indexes = [
            # The gate's baseline: a system's most recent release.
            models.Index(fields=["system", "-created_at"], name="release_latest_per_system"),
        ]

    def __str__(self):
        return f"{self.system} {self.label or self.run.run_id}"


class GateDecision(TimeStampedModel):
    """A lead's approval or block of a run's release, with the reason and the gate as it stood then.

    The latest decision on a run is the one in force: a block keeps the gate closed until a lead approves.
    """

    class Verdict(models.TextChoices):
        APPROVED = "approved"
        BLOCKED = "blocked"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    run = models.ForeignKey("judgeapp.Run", on_delete=models.PROTECT, related_name="gate_decisions")
    verdict = models.CharField(max_length=10, choices=Verdict.choices)
    reason = models.TextField()
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    actor_label = models.CharField(max_length=150)
    gate = models.JSONField(default=dict, help_text="The automatic gate when the lead decided.")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(reason=""), name="gatedecision_reason_required"),
        ]
        indexes = [
            # The decision in force on a run: its latest one.
            models.Index(fields=["run", "-created_at"], name="gatedecision_latest_per_run"),
        ]

    def __str__(self):
        return f"{self.run} {self.verdict} by {self.actor_label}"
