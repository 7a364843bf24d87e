"""Versioned inputs: prompts, goals, test sets, rubrics, artifacts. Each carries its content hash."""

import uuid

from django.conf import settings
from django.db import models

from .base import TimeStampedModel, short_version


class PromptMode(models.TextChoices):
    """The modes whose judge prompt a team may replace with one of the prompt library."""

    POINTWISE = "pointwise", "pointwise"
    PAIRWISE = "pairwise", "pairwise A/B"
    JURY = "jury", "jury"


class PromptTemplate(TimeStampedModel):
    """A judge prompt's text, by content hash. The built-in prompts (judgeapp/prompts/*.md, named by their file)
    and a calibration candidate's text are stored when a run first uses them (`mode` empty, `number` null).
    A prompt of the library (a team's own, `docs/prompts.md`) has a mode and a sequential `number` per
    (mode, name): a version is never changed, an edit saves the next number."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=100)
    content_hash = models.CharField(max_length=64)
    text = models.TextField()
    source_path = models.CharField(max_length=500, blank=True)
    git_commit = models.CharField(max_length=40, blank=True)
    mode = models.CharField(max_length=20, choices=PromptMode.choices, blank=True)
    number = models.PositiveIntegerField(null=True, blank=True, help_text="The library version: 1 for v1, 2 for v2…")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name", "content_hash"], name="prompttemplate_unique_version"),
            # One v1, v2… per prompt of the library; the built-ins and candidates have no number.
            models.UniqueConstraint(
                fields=["mode", "name", "number"], condition=models.Q(number__isnull=False),
                name="prompttemplate_unique_library_version",
            ),
        ]

    def __str__(self):
        return f"{self.name} {self.label}" if self.number else f"{self.name}@{self.version}"

    @property
    def label(self) -> str:
        """The version as people say it: v2 (a prompt of the library), else its short hash."""
        return f"v{self.number}" if self.number else self.version

    @property
    def version(self) -> str:
        return short_version(self.content_hash)


class Goal(TimeStampedModel):
    text = models.TextField()
    content_hash = models.CharField(max_length=64, unique=True)

    def __str__(self):
        return self.text[:80]


class TestSet(TimeStampedModel):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200)
    content_hash = models.CharField(max_length=64)
    source_path = models.CharField(max_length=500, blank=True)
    git_commit = models.CharField(max_length=40, blank=True)
    case_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="Who saved this version on the Datasets page (empty for a file a run or a command stored).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name", "content_hash"], name="testset_unique_version"),
        ]

    def __str__(self):
        return f"{self.name}@{self.version}"

    @property
    def version(self) -> str:
        return short_version(self.content_hash)


class Case(TimeStampedModel):
    testset = models.ForeignKey(TestSet, on_delete=models.CASCADE, related_name="cases")
    case_id = models.CharField(max_length=200)
    position = models.PositiveIntegerField()
    input = models.TextField()
    output = models.TextField(null=True, blank=True, help_text="Present when the test set carries outputs.")
    extra = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["testset", "position"]
        constraints = [
            models.UniqueConstraint(fields=["testset", "case_id"], name="case_unique_id_per_testset"),
        ]

    def __str__(self):
        return self.case_id


class OutputSet(TimeStampedModel):
    """One version of a system's replies to a test set, uploaded (browser, API, `manage.py outputs add`):
    what a run labelled with that system judges instead of the test set's own outputs."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    system = models.ForeignKey("judgeapp.System", on_delete=models.PROTECT, related_name="output_sets")
    version_label = models.CharField(max_length=50, help_text='The version it answers as, e.g. "v2.1".')
    testset = models.ForeignKey(TestSet, on_delete=models.PROTECT, related_name="output_sets")
    content_hash = models.CharField(max_length=64)
    source_name = models.CharField(max_length=255, blank=True, help_text="The uploaded file's name.")
    row_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_by_label = models.CharField(max_length=150, blank=True, help_text="The username, or 'cli:<os user>'.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["system", "version_label", "content_hash"], name="outputset_unique_per_system_version"
            ),
        ]
        indexes = [
            # A run labelled with a system finds the outputs uploaded for it on its test set, newest first.
            models.Index(fields=["system", "testset", "-created_at"], name="outputset_by_system_testset"),
        ]

    def __str__(self):
        return f"{self.system.name} {self.version_label}"


class OutputRow(TimeStampedModel):
    output_set = models.ForeignKey(OutputSet, on_delete=models.CASCADE, related_name="rows")
    case_id = models.CharField(max_length=200)
    position = models.PositiveIntegerField()
    text = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["output_set", "case_id"], name="outputrow_unique_id_per_set"),
        ]

    def __str__(self):
        return self.case_id


class Rubric(TimeStampedModel):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200)
    content_hash = models.CharField(max_length=64)
    source_path = models.CharField(max_length=500, blank=True)
    git_commit = models.CharField(max_length=40, blank=True)
    raw = models.TextField(help_text="The rubric file as loaded.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="Who saved this version on the Datasets page (empty for a file a run or a command stored).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name", "content_hash"], name="rubric_unique_version"),
        ]

    def __str__(self):
        return f"{self.name}@{self.version}"

    @property
    def version(self) -> str:
        return short_version(self.content_hash)


class Criterion(TimeStampedModel):
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="criteria")
    name = models.CharField(max_length=100)
    position = models.PositiveIntegerField()
    description = models.TextField()
    scale = models.JSONField(help_text='{"1": meaning, ..., "5": meaning}')
    examples = models.JSONField(default=dict, blank=True, help_text='{"1": example reply, ...}')

    class Meta:
        ordering = ["rubric", "position"]
        constraints = [
            models.UniqueConstraint(fields=["rubric", "name"], name="criterion_unique_name_per_rubric"),
        ]

    def __str__(self):
        return self.name

    @property
    def scale_bounds(self) -> tuple[int, int]:
        points = sorted(int(k) for k in self.scale)
        return points[0], points[-1]


class ArtifactSet(TimeStampedModel):
    """A named group of candidate artifacts inside one run directory (the ranker's `<artifact-set>`)."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    run = models.ForeignKey("judgeapp.Run", on_delete=models.CASCADE, related_name="artifact_sets")
    name = models.CharField(max_length=200)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "name"], name="artifactset_unique_name_per_run"),
        ]

    def __str__(self):
        return self.name


class Artifact(TimeStampedModel):
    artifact_set = models.ForeignKey(ArtifactSet, on_delete=models.CASCADE, related_name="artifacts")
    artifact_id = models.CharField(max_length=255, help_text="The file's basename.")
    relative_path = models.CharField(max_length=1000)
    content_hash = models.CharField(max_length=64)
    size = models.PositiveIntegerField()
    content = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["artifact_set", "artifact_id"], name="artifact_unique_id_per_set"),
        ]

    def __str__(self):
        return self.artifact_id

    @property
    def preview(self) -> str:
        """The first non-empty line, cut to one line of a report."""
        for line in self.content.splitlines():
            if line.strip():
                text = line.strip()
                return text if len(text) <= 80 else text[:79] + "…"
        return ""
