"""Blind comparisons: which real version each blinded label stands for, and what each run contained.

The mapping (label -> real name) is kept here and nowhere else: the run, its units and every prompt carry
labels only. Reviewers and leads see the mapping only after the verdict, by revealing it, which is logged
(AuditLog `blind.mapping_revealed`).
"""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from .base import TimeStampedModel


class BlindComparison(TimeStampedModel):
    class Status(models.TextChoices):
        LEAKED = "leaked", "stopped on leakage"
        STARTED = "started", "judging started"

    class Origin(models.TextChoices):
        WEB = "web", "browser"
        CLI = "cli", "command line"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    run = models.OneToOneField(
        "judgeapp.Run", null=True, blank=True, on_delete=models.CASCADE, related_name="blind_comparison",
        help_text="None while stopped on leakage: nothing was judged.",
    )
    status = models.CharField(max_length=10, choices=Status.choices)
    origin = models.CharField(max_length=5, choices=Origin.choices, default=Origin.WEB)
    eval_prompt = models.TextField()
    expectations = models.JSONField(default=list, blank=True)
    leakage_flags = models.JSONField(default=list, blank=True)
    judge = models.ForeignKey("judgeapp.Judge", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    output_path = models.CharField(max_length=1000, blank=True, help_text="Where comparison.json is written.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    revealed_at = models.DateTimeField(null=True, blank=True)
    revealed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # The blind comparisons page: newest first.
            models.Index(fields=["-created_at"], name="blind_newest"),
        ]

    def __str__(self):
        return f"blind {self.run.run_id if self.run else self.uuid} ({self.status})"

    @property
    def is_revealed(self) -> bool:
        return self.revealed_at is not None


class BlindVersion(TimeStampedModel):
    class Source(models.TextChoices):
        BROWSE = "browse", "server directory"
        UPLOAD = "upload", "upload"
        CLI = "cli", "command line directory"

    comparison = models.ForeignKey(BlindComparison, on_delete=models.CASCADE, related_name="versions")
    label = models.CharField(max_length=2, blank=True, help_text="Blank while stopped on leakage: no label was drawn.")
    real_name = models.CharField(max_length=300, help_text="The mapping: hidden until revealed after the verdict.")
    source = models.CharField(max_length=10, choices=Source.choices)
    source_path = models.CharField(max_length=1000, blank=True, help_text="The directory read, or the uploaded files.")
    content_hash = models.CharField(max_length=64, blank=True)
    stray_files = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["comparison", "label", "real_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["comparison", "label"], condition=~Q(label=""), name="blindversion_unique_label"
            ),
        ]

    def __str__(self):
        return self.label or self.real_name


class BlindRunOutput(TimeStampedModel):
    """One run of a version, as the judge reads it: files relative to the run, in order."""

    version = models.ForeignKey(BlindVersion, on_delete=models.CASCADE, related_name="runs")
    position = models.PositiveSmallIntegerField(help_text="1, 2, …: the judge sees run-<position>.")
    real_name = models.CharField(max_length=300, blank=True, help_text="The run directory's own name (hidden).")
    files = models.JSONField(default=list, help_text='[{"path", "text" (null when binary), "size"}]')

    class Meta:
        ordering = ["version", "position"]
        constraints = [
            models.UniqueConstraint(fields=["version", "position"], name="blindrunoutput_unique_position"),
        ]

    def __str__(self):
        return f"{self.version}/{self.blinded_name}"

    @property
    def blinded_name(self) -> str:
        return f"run-{self.position}"
