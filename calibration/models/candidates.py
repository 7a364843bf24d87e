"""Candidates: a configuration of a judge a lead tries on a sample before adopting it."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from calibration.models.samples import Sample
from judgeapp.models import TimeStampedModel


class Candidate(TimeStampedModel):
    """A candidate configuration of a judge (another prompt text, rubric, model or structured-output setting),
    judged on exactly the labelled items of a sample by a run of kind "candidate". A lead may adopt it: it
    becomes the judge's configuration and its agreement comes from that run."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="candidates")
    judge_name = models.CharField(max_length=100, help_text="The judge this candidate would replace.")
    base_version = models.CharField(max_length=64, help_text="The judge's configuration version when the candidate was made.")
    run = models.OneToOneField("judgeapp.Run", on_delete=models.CASCADE, related_name="calibration_candidate")
    label = models.CharField(max_length=100, blank=True)
    model = models.CharField(max_length=200)
    structured_output = models.CharField(max_length=20)
    config_version = models.CharField(max_length=64, help_text="The candidate's endpoint configuration version.")
    changes = models.JSONField(default=list, help_text="What differs from the judge: prompt, rubric, model, structured output.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    adopted_at = models.DateTimeField(null=True, blank=True)
    adopted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # A judge's adopted configuration: its latest adopted candidate.
            models.Index(
                fields=["judge_name", "-adopted_at"], name="candidate_adopted_latest", condition=Q(adopted_at__isnull=False)
            ),
        ]

    def __str__(self):
        return f"candidate {self.short_id} of {self.judge_name}"

    @property
    def short_id(self) -> str:
        return str(self.uuid)[:8]

    @property
    def title(self) -> str:
        return self.label or ", ".join(self.changes) or f"candidate {self.short_id}"
