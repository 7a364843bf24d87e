"""Samples and queues: a sample's items, the assignments that give them to annotators (and hold their labels),
notes on items, and a lead's adjudications."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from calibration.core import adjudication as adjudication_rules
from judgeapp.models import TimeStampedModel


class LabelKind(models.TextChoices):
    SCORE = "score", "score 1–5"
    PASS_FAIL = "pass_fail", "pass / fail"
    PAIRWISE = "pairwise", "A / B / tie"


class Sample(TimeStampedModel):
    class Method(models.TextChoices):
        DRAWN = "drawn", "drawn from the run, stratified by the judge's verdict"
        IMPORTED = "imported", "imported labels"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    run = models.ForeignKey("judgeapp.Run", on_delete=models.CASCADE, related_name="calibration_samples")
    label_kind = models.CharField(max_length=20, choices=LabelKind.choices)
    method = models.CharField(max_length=10, choices=Method.choices, default=Method.DRAWN)
    size = models.PositiveIntegerField(help_text="Items in the sample.")
    seed = models.BigIntegerField(null=True, blank=True, help_text="The fixed seed of the draw.")
    overlap = models.PositiveSmallIntegerField(default=1, help_text="Annotators per item.")
    stratified_by = models.CharField(max_length=100, blank=True, help_text="The judge whose verdicts formed the strata.")
    source = models.CharField(max_length=500, blank=True, help_text="The file the labels came from, for an import.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Bumped in the transaction of every label change; the agreement task records the version it computed,
    # so a task that finds them equal has nothing to do, and one that computed a stale version throws it away.
    labels_version = models.PositiveIntegerField(default=0)
    agreement_version = models.PositiveIntegerField(default=0)
    # What the lead tells the annotators (Markdown, rendered without HTML at the top of their queue and on each
    # item: judgeapp/judging/markdown.py). Never says anything of the run, system or judge: annotators read it.
    instructions = models.TextField(blank=True, help_text="Instructions for the annotators, in Markdown.")
    adjudication_margin = models.PositiveSmallIntegerField(
        default=adjudication_rules.DEFAULT_MARGIN,
        help_text="Scores: an item whose highest and lowest labels differ by more than this goes to the lead to resolve.",
    )
    # Set by the label that finds it empty (a compare-and-set in that label's transaction), which alone sends
    # the agreement task, with a short countdown: the labels arriving meanwhile ride on that one computation.
    # The task empties it before it reads the labels, so a label arriving during the computation sends the
    # next one. A mark older than CALIBRATION_AGREEMENT_QUEUED_STALE (a task lost with a killed worker)
    # counts as empty.
    agreement_queued_at = models.DateTimeField(null=True, blank=True)
    # The snapshot every page and report reads (one labels version, never figures from two moments): the
    # labels the stored results were computed from, as [case id, criterion, annotator, value] rows, and when.
    agreement_labels = models.JSONField(default=list, blank=True, help_text="The labels of agreement_version, as computed.")
    agreement_computed_at = models.DateTimeField(null=True, blank=True)
    repeat = models.PositiveSmallIntegerField(
        default=0,
        help_text="0: the draw of its run, size and seed. A database from before a draw was made once (calibration "
        "0007) may hold repeats of one, numbered 1, 2, … in the order they were drawn.",
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # The same run, size and seed draw the same items: drawn twice (a double click, two reviewers at
            # the same moment), it is one sample, with one set of assignments (services/samples.py).
            models.UniqueConstraint(
                fields=["run", "size", "seed", "repeat"], condition=Q(method="drawn"), name="sample_drawn_once_per_run_size_seed"
            ),
        ]
        indexes = [
            # "The latest human sample" of a run's judge: samples newest first.
            models.Index(fields=["-created_at"], name="sample_newest"),
        ]

    def __str__(self):
        return f"sample {str(self.uuid)[:8]} of {self.run_id}"

    @property
    def short_id(self) -> str:
        return str(self.uuid)[:8]

    @property
    def agreement_stale(self) -> bool:
        return self.agreement_version != self.labels_version

    @property
    def snapshot(self) -> dict:
        """Which labels the stored agreement figures stand on: {sample_id, labels_version, computed_at, pending}."""
        return {
            "sample_id": str(self.uuid),
            "labels_version": self.agreement_version,
            "computed_at": self.agreement_computed_at.isoformat() if self.agreement_computed_at else None,
            "pending": self.agreement_stale,
        }


class SampleItem(TimeStampedModel):
    """One thing people label: a case of the run (and, for scores, one criterion of the rubric)."""

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    case = models.ForeignKey("judgeapp.Case", on_delete=models.PROTECT, related_name="+")
    case_key = models.CharField(max_length=200, help_text="The case's id in its test set.")
    criterion = models.CharField(max_length=100, blank=True, help_text="Empty for pairwise and jury labels.")
    stratum = models.CharField(
        max_length=20, blank=True, help_text="The stratifying judge's verdict (never shown to annotators)."
    )
    # What the leakage scan found in the item as an annotator would see it (judgeapp/judging/leakage/):
    # a flagged item is held back from every queue and shown to the reviewer with its flags.
    leakage_flags = models.JSONField(default=list, blank=True, help_text="Leakage flags; non-empty: held back from annotators.")
    # The case's tags as they were when the item was drawn (the test set's `tags`): its labels count toward
    # each tag's slice of the agreement and the corrected mean. Never shown to annotators.
    tags = models.JSONField(default=list, blank=True, help_text="The case's tags when drawn (slices).")

    class Meta:
        ordering = ["sample", "position"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "case_key", "criterion"], name="sampleitem_unique_per_sample"),
        ]

    def __str__(self):
        return f"{self.case_key}/{self.criterion}" if self.criterion else self.case_key

    @property
    def held_back(self) -> bool:
        return bool(self.leakage_flags)


class AssignmentState(models.TextChoices):
    PENDING = "pending"
    LABELLED = "labelled"
    SKIPPED = "skipped"


class LabelSource(models.TextChoices):
    WEB = "web", "scored in the browser"
    IMPORT = "import", "imported from a file"


class Assignment(TimeStampedModel):
    """An item in one annotator's queue, and that annotator's label for it.

    `value` is in the run's own terms: "1".."5", "pass"/"fail", or "A"/"B"/"tie" — for pairwise items the
    annotator saw the replies as 1 and 2 in an order of their own (`swapped`: reply 1 was B).
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    item = models.ForeignKey(SampleItem, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="calibration_assignments")
    position = models.PositiveIntegerField(help_text="Order in the annotator's queue within the sample.")
    swapped = models.BooleanField(default=False)
    state = models.CharField(max_length=10, choices=AssignmentState.choices, default=AssignmentState.PENDING)
    value = models.CharField(max_length=10, blank=True)
    source = models.CharField(max_length=10, choices=LabelSource.choices, blank=True)
    acted_at = models.DateTimeField(null=True, blank=True, help_text="When it was last labelled or skipped (for undo).")

    class Meta:
        # No default ordering: it would join SampleItem on every read of an annotator's queue; reads say
        # their order (a queue: position).
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="assignment_unique_per_item_annotator"),
            models.CheckConstraint(
                condition=Q(state=AssignmentState.LABELLED, value__gt="") | (~Q(state=AssignmentState.LABELLED) & Q(value="")),
                name="assignment_value_iff_labelled",
            ),
        ]
        indexes = [
            # An annotator's queue: their next pending (then skipped) item.
            models.Index(fields=["annotator", "state", "position"], name="assignment_queue",
                         condition=Q(state__in=[AssignmentState.PENDING, AssignmentState.SKIPPED])),
            # Undo: an annotator's most recent action.
            models.Index(fields=["annotator", "-acted_at"], name="assignment_last_action",
                         condition=Q(acted_at__isnull=False)),
        ]

    def __str__(self):
        return f"{self.item} for {self.annotator_id}"


class NoteKind(models.TextChoices):
    COMMENT = "comment", "comment"
    FLAG = "flag", "flag"


MAX_NOTE_LENGTH = 2000


class ItemNote(TimeStampedModel):
    """An annotator's comment on an item of their queue, or a flag ("this item is broken", with the reason),
    for the lead to read on the sample's page. Several per item and annotator; never changes a label."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    item = models.ForeignKey(SampleItem, on_delete=models.CASCADE, related_name="notes")
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="notes")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="calibration_notes")
    kind = models.CharField(max_length=10, choices=NoteKind.choices)
    text = models.TextField(max_length=MAX_NOTE_LENGTH)

    class Meta:
        # No default ordering: reads say their order (a sample's notes: newest first).
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=NoteKind.values), name="itemnote_kind_known"),
            models.CheckConstraint(condition=~Q(text=""), name="itemnote_text_not_empty"),
        ]
        indexes = [
            # The lead's list of a sample's notes, and the flagged count per sample on the overview.
            models.Index(fields=["item", "kind"], name="itemnote_by_item_kind"),
        ]

    def __str__(self):
        return f"{self.kind} on {self.item_id} by {self.annotator_id}"


class Adjudication(TimeStampedModel):
    """A lead's resolved label of an item its annotators disagree on. Kept beside the annotators' own labels,
    never instead of them: agreement among annotators reads theirs; wherever the judge is set against the
    people's one label of an item (the majority), this label is that item's. `value` is in the run's terms,
    as an Assignment's is."""

    item = models.OneToOneField(SampleItem, on_delete=models.CASCADE, related_name="adjudication")
    value = models.CharField(max_length=10)
    note = models.TextField(blank=True, max_length=2000)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField()

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(value__gt=""), name="adjudication_value_not_empty")]

    def __str__(self):
        return f"{self.item}: {self.value}"
