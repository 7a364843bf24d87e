"""Releases and the release gate: what shipped (per system, from a run, with its mean) and the leads'
approve/block decisions on a run. Every write here also goes to the AuditLog."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from .base import TimeStampedModel


class Release(TimeStampedModel):
    """A run a lead marked as released, kept as it was decided: what its mean was measured on and the gate
    as it stood when the lead marked it. Neither is ever recomputed: a lock or a release that comes later is a
    dated note beside it (releases.selectors.release_notes_for_release), not a rewrite.

    It is the baseline of the system's runs created after it: they are compared with it like for like, on
    the cases both test sets share (releases.selectors.baseline_plan_for_run).
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    system = models.ForeignKey("judgeapp.System", on_delete=models.PROTECT, related_name="releases")
    run = models.ForeignKey("judgeapp.Run", on_delete=models.PROTECT, related_name="releases")
    mean = models.FloatField(help_text="The run's mean score when it was released.")
    label = models.CharField(max_length=100, blank=True, help_text="The version shipped, e.g. v2.4.0.")
    note = models.TextField(blank=True)
    released_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    measured_on = models.JSONField(
        default=dict, blank=True,
        help_text=(
            "What the mean was measured on: the versions (and names) of the test set, rubric, prompt and judge configuration."
        ),
    )
    gate = models.JSONField(
        default=dict, blank=True,
        help_text=(
            "The gate as it stood when the lead marked the release (decision, reasons, mean, baseline, calibration, who, when)."
        ),
    )

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


class BaselineRule(models.TextChoices):
    MEAN = "mean", "its mean is below the baseline's on the same cases (the default)"
    REGRESSION = "regression", "a real regression: the difference's 95% interval is below zero"


class GateAction(models.TextChoices):
    """What the gate does with something it cannot weigh: note it and pass, or block."""

    WARN = "warn", "note it and pass"
    BLOCK = "block", "block the release"


class ReleasePolicy(TimeStampedModel):
    """What a lead decided the gate does with the baseline. Each change is a new row: the latest holds, and
    every change is in the audit log (`release.policy_set`)."""

    baseline_rule = models.CharField(
        max_length=12, choices=BaselineRule.choices, default=BaselineRule.MEAN,
        help_text="When a run compared like for like with its baseline is blocked.",
    )
    skipped_baseline = models.CharField(
        max_length=8, choices=GateAction.choices, default=GateAction.WARN,
        help_text="A run with a baseline it cannot be compared with (no shared case, no outputs kept): note it, or block.",
    )
    injection_flags = models.CharField(
        max_length=8, choices=GateAction.choices, default=GateAction.WARN,
        help_text=(
            "A judged text that addresses the judge (prompt injection, judging/injection.py): note it on the gate, or block."
        ),
    )
    flaky = models.CharField(
        max_length=8, choices=GateAction.choices, default=GateAction.WARN,
        help_text=(
            "The threshold or the baseline inside the run's noise band across trials (--trials K): note it on the gate, or block."
        ),
    )
    # A run started from a page asks "Start this run of about N judge calls" above these (judging/forms.py:
    # LargeRunForm); empty: the deployment's LARGE_RUN_CALLS and LARGE_RUN_COST.
    large_run_calls = models.PositiveIntegerField(null=True, blank=True)
    large_run_cost = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    set_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "release policies"

    def __str__(self):
        return (
            f"baseline rule: {self.baseline_rule}; a skipped baseline: {self.skipped_baseline}; "
            f"injection flags: {self.injection_flags}; flaky: {self.flaky}; a run from a page asks first above "
            f"{f'{self.large_run_calls:,}' if self.large_run_calls else 'the default number of'} judge calls or "
            f"{f'${self.large_run_cost}' if self.large_run_cost is not None else 'the default cost'}"
        )

    def as_dict(self) -> dict:
        cost = self.large_run_cost
        return {"baseline_rule": self.baseline_rule, "skipped_baseline": self.skipped_baseline,
                "injection_flags": self.injection_flags, "flaky": self.flaky, "large_run_calls": self.large_run_calls,
                "large_run_cost": None if cost is None else str(cost)}
