"""Human labels, samples and queues, judge–human agreement, and the release-gate lock.

A Sample is drawn from one finished run (or made by an import of labels); its items are what people label,
each given to one or more annotators (an Assignment, which also holds the label). An AgreementResult is
the agreement of one judge configuration with the people on one sample; a JudgeLock is whether that judge
configuration may still back a release gate, for the prompt and rubric versions its evidence was judged with.
"""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from calibration.core import adjudication as adjudication_rules
from calibration.core import alt_test as alt_test_rules
from calibration.core import checkup as checkup_rules
from calibration.core import handling as handling_rules
from calibration.core.status import unreadable_text
from judgeapp.models import TimeStampedModel


class LabelKind(models.TextChoices):
    SCORE = "score", "score 1–5"
    PASS_FAIL = "pass_fail", "pass / fail"
    PAIRWISE = "pairwise", "A / B / tie"


class AgreementMetric(models.TextChoices):
    # Quadratic-weighted kappa for 1–5 scores; Cohen's kappa for pass/fail and pairwise labels.
    KAPPA = "kappa", "kappa"
    AGREEMENT = "agreement", "agreement"


DEFAULT_LEVEL_THRESHOLD = 0.6
DEFAULT_LEVEL_MIN_ITEMS = 20


class AgreementLevel(TimeStampedModel):
    """The level a judge configuration's agreement must reach. Each change is a new row: the latest
    holds, and the history shows who set what."""

    metric = models.CharField(max_length=20, choices=AgreementMetric.choices, default=AgreementMetric.KAPPA)
    threshold = models.FloatField(default=DEFAULT_LEVEL_THRESHOLD)
    min_items = models.PositiveIntegerField(
        default=DEFAULT_LEVEL_MIN_ITEMS,
        help_text="Labelled items a sample needs before its agreement can lock or unlock a judge.",
    )
    set_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(threshold__gte=-1) & Q(threshold__lte=1), name="level_threshold_in_range"),
            models.CheckConstraint(condition=Q(min_items__gte=1), name="level_min_items_positive"),
        ]

    def __str__(self):
        return f"{self.get_metric_display()} ≥ {self.threshold:.2f} on at least {self.min_items} items"

    @property
    def explained(self) -> str:
        if self.metric == AgreementMetric.KAPPA:
            return "quadratic-weighted kappa for 1–5 scores, Cohen's kappa for pass/fail and pairwise labels"
        return "exact agreement for 1–5 scores, percent agreement for pass/fail and pairwise labels"


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


DEFAULT_HANDLING_WORDS = {kind: handling_rules.Handling().words(kind) for kind in ("score", "pass_fail", "pairwise")}


class AgreementResultQuerySet(models.QuerySet):
    def counting(self):
        """The results that speak for their judge: the run's own judges', and adopted candidates'."""
        return self.filter(Q(candidate__isnull=True) | Q(candidate__adopted_at__isnull=False))


class AgreementResult(TimeStampedModel):
    """How one judge configuration agrees with the people on one sample, for one criterion ("" = all).

    Recomputed in place when the sample's labels change; `labels_version` is the sample's version it saw.
    A candidate's result (`candidate` set) is the agreement of a candidate configuration of the judge on the
    same labelled items; it speaks for the judge only once a lead adopts the candidate.
    """

    objects = AgreementResultQuerySet.as_manager()

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="results")
    candidate = models.ForeignKey("Candidate", null=True, blank=True, on_delete=models.CASCADE, related_name="results")
    effective_at = models.DateTimeField(
        null=True, blank=True,
        help_text="When this evidence came into force: the sample's drawing, or a candidate's adoption. The latest decides.",
    )
    judge_name = models.CharField(max_length=100)
    judge_version = models.CharField(max_length=64, help_text="The judge's configuration hash (model, family, URL, …).")
    prompt_version = models.CharField(max_length=64, blank=True)
    rubric_version = models.CharField(max_length=64, blank=True)
    criterion = models.CharField(max_length=100, blank=True, help_text="Empty: every criterion pooled.")
    label_kind = models.CharField(max_length=20, choices=LabelKind.choices)
    scripted_demo = models.BooleanField(default=False, help_text="The judge is the repo's scripted demo server.")
    n_items = models.PositiveIntegerField(
        help_text="Labelled items compared: those with a judge verdict and those whose judge reply was unusable."
    )
    # A labelled item whose judge reply was unusable (parse failure, truncated, no reply) is compared as the
    # judge value farthest from each of its labels: it counts toward the minimum and never as a match, so a
    # judge cannot stay out of a lock by failing to answer.
    n_unreadable = models.PositiveIntegerField(
        default=0, help_text="Labelled items of n_items whose judge reply gave no usable verdict."
    )
    n_labels = models.PositiveIntegerField(help_text="Human labels compared (an item with overlap counts each).")
    kappa = models.FloatField(null=True, blank=True, help_text="Quadratic-weighted (scores) or Cohen's kappa.")
    agreement = models.FloatField(null=True, blank=True, help_text="Exact / percent agreement.")
    metrics = models.JSONField(default=dict, help_text="{name: {value, ci: [low, high]}}")
    per_annotator = models.JSONField(default=list, blank=True)
    inter_annotator = models.JSONField(
        null=True, blank=True, help_text="Krippendorff's alpha and pairwise kappas where items overlap."
    )
    details = models.JSONField(
        default=dict, blank=True, help_text="{confusion: judge × human table, disagreements: the items furthest apart}"
    )
    # How labels, ties and non-answers were counted for these figures (calibration/core/handling.py): the
    # policy's declared handling as it applied to this sample, stored so that every figure says what it used.
    handling = models.JSONField(
        default=dict, blank=True,
        help_text=(
            "{annotators, ties, non_answers, note, words, left_out}: the handling the figures used; "
            "empty: before it was declared."
        ),
    )
    sensitivity = models.JSONField(
        default=list, blank=True,
        help_text=(
            "The same figures (points) under every other handling: [{annotators, ties, non_answers, "
            "words, n_items, kappa, agreement}]."
        ),
    )
    slices = models.JSONField(
        default=list, blank=True,
        help_text=(
            "Per tag of the labelled items: [{tag, n_items, n_labels, kappa: {value, ci}, agreement: {value, ci}}], by tag."
        ),
    )
    labels_version = models.PositiveIntegerField(default=0)

    class Meta:
        # No default ordering: it would join Sample on every read; reads say their order.
        constraints = [
            models.UniqueConstraint(fields=["sample", "judge_name", "criterion"], condition=Q(candidate__isnull=True),
                                    name="agreement_unique_per_sample_judge_criterion"),
            models.UniqueConstraint(fields=["candidate", "criterion"], condition=Q(candidate__isnull=False),
                                    name="agreement_unique_per_candidate_criterion"),
        ]
        indexes = [
            # The lock and the reports: the latest result of one judge configuration.
            models.Index(fields=["judge_name", "judge_version", "criterion"], name="agreement_by_judge_config"),
            # The decisive result: the latest evidence of one judge configuration.
            models.Index(fields=["judge_name", "judge_version", "-effective_at"], name="agreement_by_config_latest"),
        ]

    def __str__(self):
        return f"{self.judge_name}@{self.judge_version[:12]} on {self.sample}"

    @property
    def short_judge_version(self) -> str:
        return self.judge_version[:12]

    def metric_value(self, metric: str) -> float | None:
        return self.kappa if metric == AgreementMetric.KAPPA else self.agreement

    @property
    def kappa_figure(self) -> dict | None:
        """{value, ci} of the kappa: quadratic-weighted for scores, Cohen's otherwise."""
        return self.metrics.get("quadratic_kappa" if self.label_kind == LabelKind.SCORE else "kappa")

    @property
    def agreement_figure(self) -> dict | None:
        return self.metrics.get("exact" if self.label_kind == LabelKind.SCORE else "percent")

    @property
    def unreadable_words(self) -> str:
        """'5 of 20 labelled items had no usable verdict (counted as disagreements)', as the handling counted them."""
        return unreadable_text(self.n_unreadable, self.n_items, (self.handling or {}).get("non_answers", "disagreement"))

    @property
    def handling_words(self) -> str:
        """'pooled labels, ties kept, non-answers counted as disagreements' (today's rule for a result
        computed before the handling was declared)."""
        return (self.handling or {}).get("words") or DEFAULT_HANDLING_WORDS.get(self.label_kind, "")

    @property
    def alpha(self) -> float | None:
        """Krippendorff's alpha among the people on the sample's overlapping items (None without overlap)."""
        return ((self.inter_annotator or {}).get("alpha") or {}).get("value")

    def alt_test_at(self, epsilon: float) -> dict | None:
        """The alternative annotator test at ε from the stored per-annotator counts (calibration/core/alt_test.py);
        None when no item was labelled by two or more people."""
        stored = (self.details or {}).get("alt_test")
        if not stored:
            return None
        return alt_test_rules.alt_test_decide(alt_test_rules.counts_from_dicts(stored["counts"]), epsilon=epsilon)

    @property
    def rates(self) -> dict | None:
        """A pass/fail judge's TPR and TNR against the people (calibration/core/rates.py), else None."""
        return (self.details or {}).get("rates")


class JudgeLock(TimeStampedModel):
    """Whether one judge configuration may back the release gate of a run judged with one prompt version and
    one rubric version: a sample's agreement speaks for the scope it was judged in and nothing else. Changed
    only by a new agreement result, a new level, or a lead's override; every change is in the audit log."""

    judge_name = models.CharField(max_length=100)
    judge_version = models.CharField(max_length=64)
    prompt_version = models.CharField(max_length=64, blank=True, default="")
    rubric_version = models.CharField(max_length=64, blank=True, default="")
    locked = models.BooleanField(default=False)
    reason = models.TextField(blank=True)
    result = models.ForeignKey(AgreementResult, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    result_labels_version = models.PositiveIntegerField(default=0, help_text="The labels version of `result` when decided.")
    overridden = models.BooleanField(default=False, help_text="A lead unlocked it by hand; holds until new labels arrive.")
    changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["judge_name", "-changed_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["judge_name", "judge_version", "prompt_version", "rubric_version"], name="judgelock_unique_per_scope"
            ),
        ]
        indexes = [
            # A run's judge whose configuration has no row in the run's scope: the latest state of the judge
            # under its name, with the run's prompt and rubric.
            models.Index(
                fields=["judge_name", "prompt_version", "rubric_version", "-changed_at"], name="judgelock_by_scope_latest"
            ),
        ]

    def __str__(self):
        return (
            f"{self.judge_name}@{self.judge_version[:12]} (prompt {self.prompt_version[:12] or '—'}, "
            f"rubric {self.rubric_version[:12] or '—'}): {'locked' if self.locked else 'unlocked'}"
        )

    @property
    def short_judge_version(self) -> str:
        return self.judge_version[:12]


class PolicyAction(models.TextChoices):
    WARN = "warn", "warn only"
    BLOCK = "block", "block the release"


class AltTestRequirement(models.TextChoices):
    OFF = "off", "not required"
    WARN = "warn", "required: warn when not passed"
    BLOCK = "block", "required: block when not passed"


DEFAULT_ALPHA_FLOOR = 0.667


class AnnotatorHandling(models.TextChoices):
    POOLED = handling_rules.POOLED, "pooled: every human label is a pair with the judge"
    MAJORITY = handling_rules.MAJORITY, "majority: one label per item, its annotators' majority"


class TieHandling(models.TextChoices):
    KEPT = handling_rules.KEPT, "kept"
    HUMAN_TIES_DROPPED = handling_rules.HUMAN_TIES_DROPPED, "human ties dropped"
    DROPPED = handling_rules.DROPPED, "dropped: a tie by the person or the judge leaves the pair out"


class NonAnswerHandling(models.TextChoices):
    DISAGREEMENT = handling_rules.DISAGREEMENT, "counted as a disagreement"
    DROPPED = handling_rules.DROPPED, "dropped"
    TIE = handling_rules.TIE, "counted as the judge's tie (pairwise)"


class CalibrationPolicy(TimeStampedModel):
    """What a lead decided the calibration status does to a release gate. Each change is a new row: the
    latest holds, and the history shows who set what (and each change is in the audit log)."""

    not_calibrated = models.CharField(
        max_length=10, choices=PolicyAction.choices, default=PolicyAction.WARN,
        help_text="A judge no person has checked: warn on the gate, or block it.",
    )
    stale = models.CharField(
        max_length=10, choices=PolicyAction.choices, default=PolicyAction.WARN,
        help_text="The judge's configuration, prompt or rubric changed since its calibration sample: warn, or block.",
    )
    alpha_floor = models.FloatField(
        default=DEFAULT_ALPHA_FLOOR,
        help_text="Krippendorff's alpha among the annotators a sample needs before its labels may lock or unlock a judge.",
    )
    single_annotator_locks = models.BooleanField(
        default=False,
        help_text="A sample without overlap (the people's own agreement unknown) may lock and unlock like a reliable one.",
    )
    corrected_gate = models.BooleanField(
        default=False,
        help_text="The gate also requires the lower bound of the human-corrected (PPI++) 95% interval to reach the threshold.",
    )
    # The floors a judge's check-up (judgeapp/checkup/) must reach on every set, and what a failed one does
    # to the gates relying on that judge; the defaults and where they come from: calibration/core/checkup.py.
    checkup_failed = models.CharField(
        max_length=10, choices=PolicyAction.choices, default=PolicyAction.BLOCK,
        help_text="A judge whose latest check-up failed (a figure below its floor, or invalid): block the gate, or warn.",
    )
    checkup_position_floor = models.FloatField(
        default=checkup_rules.POSITION_FLOOR,
        help_text="Position consistency (both orders agree) a check-up must reach on every set.",
    )
    checkup_accuracy_floor = models.FloatField(
        default=checkup_rules.ACCURACY_FLOOR,
        help_text="Accuracy over consistent verdicts a check-up must reach on every set.",
    )
    checkup_kappa_floor = models.FloatField(
        default=checkup_rules.KAPPA_FLOOR,
        help_text="Cohen's kappa with the human label a check-up must reach on every set.",
    )
    # The alternative annotator test (calibration/core/alt_test.py): whether the judge must pass it, and the
    # lead's ε (the paper's guidance: 0.2 for experts, 0.15 for skilled annotators, 0.1 for crowd-workers).
    alt_test = models.CharField(
        max_length=10, choices=AltTestRequirement.choices, default=AltTestRequirement.OFF,
        help_text=(
            "Whether the judge must pass the alternative annotator test: off, or warn / block when it "
            "failed or could not be decided."
        ),
    )
    alt_test_epsilon = models.FloatField(
        default=alt_test_rules.DEFAULT_EPSILON,
        help_text=(
            "ε of the alternative annotator test: the advantage the judge is granted for being cheaper and faster than a person."
        ),
    )
    undecided = models.CharField(
        max_length=10, choices=PolicyAction.choices, default=PolicyAction.WARN,
        help_text="A judge whose agreement interval straddles the level (undecided): warn on the gate, or block it.",
    )
    # How a judge–human figure counts the labels (docs/calibration.md §4); the defaults are the rule from
    # before it was declared, so figures computed then stay as they were.
    annotators = models.CharField(
        max_length=20, choices=AnnotatorHandling.choices, default=AnnotatorHandling.POOLED,
        help_text="Annotators: every human label a pair with the judge (pooled), or one majority label per item.",
    )
    ties = models.CharField(
        max_length=20, choices=TieHandling.choices, default=TieHandling.KEPT,
        help_text="Pairwise ties: kept, the people's ties dropped, or any tie (the person's or the judge's) dropped.",
    )
    non_answers = models.CharField(
        max_length=20, choices=NonAnswerHandling.choices, default=NonAnswerHandling.DISAGREEMENT,
        help_text="A labelled item the judge gave no usable verdict on: a disagreement, dropped, or the judge's tie (pairwise).",
    )
    # The least the worst tag's agreement (the level's metric) may be, on a slice with the level's minimum of
    # items; off (null) by default. Below it the gate warns (the default: a slice is a small sample with a
    # wide interval) or, under `block`, blocks, naming the slice.
    slice_floor = models.FloatField(
        null=True, blank=True,
        help_text="The worst tag's agreement (the level's metric) a gate needs; empty: no floor.",
    )
    slice_floor_action = models.CharField(
        max_length=10, choices=PolicyAction.choices, default=PolicyAction.WARN,
        help_text="The worst slice below its floor: warn on the gate (the default), or block it.",
    )
    set_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "calibration policies"
        constraints = [
            models.CheckConstraint(condition=Q(alpha_floor__gte=-1) & Q(alpha_floor__lte=1), name="policy_alpha_floor_in_range"),
            models.CheckConstraint(
                condition=Q(checkup_position_floor__gte=0) & Q(checkup_position_floor__lte=1)
                & Q(checkup_accuracy_floor__gte=0) & Q(checkup_accuracy_floor__lte=1)
                & Q(checkup_kappa_floor__gte=-1) & Q(checkup_kappa_floor__lte=1),
                name="policy_checkup_floors_in_range",
            ),
            models.CheckConstraint(
                condition=Q(alt_test_epsilon__gte=0) & Q(alt_test_epsilon__lt=1), name="policy_alt_test_epsilon_in_range"
            ),
            models.CheckConstraint(
                condition=Q(slice_floor__isnull=True) | (Q(slice_floor__gte=-1) & Q(slice_floor__lte=1)),
                name="policy_slice_floor_in_range",
            ),
        ]

    def __str__(self):
        return (
            f"unchecked: {self.not_calibrated}; stale: {self.stale}; alpha floor {self.alpha_floor:.3f}; "
            f"single-annotator samples {'lock' if self.single_annotator_locks else 'warn only'}; "
            f"corrected gate {'on' if self.corrected_gate else 'off'}; a failed check-up: {self.checkup_failed} (floors: "
            f"position consistency {self.checkup_position_floor:.2f}, accuracy {self.checkup_accuracy_floor:.2f}, "
            f"kappa {self.checkup_kappa_floor:.2f}); undecided: {self.undecided}; handling: {self.declared_handling.words()}; "
            f"alternative annotator test: {self.alt_test} (ε {self.alt_test_epsilon:g})"
            + (f"; worst slice floor {self.slice_floor:.2f} ({self.slice_floor_action})" if self.slice_floor is not None else "")
        )

    def as_dict(self) -> dict:
        return {
            "not_calibrated": self.not_calibrated,
            "stale": self.stale,
            "alpha_floor": self.alpha_floor,
            "single_annotator_locks": self.single_annotator_locks,
            "corrected_gate": self.corrected_gate,
            "checkup_failed": self.checkup_failed,
            "checkup_position_floor": self.checkup_position_floor,
            "checkup_accuracy_floor": self.checkup_accuracy_floor,
            "checkup_kappa_floor": self.checkup_kappa_floor,
            "alt_test": self.alt_test,
            "alt_test_epsilon": self.alt_test_epsilon,
            "undecided": self.undecided,
            "annotators": self.annotators,
            "ties": self.ties,
            "non_answers": self.non_answers,
            "slice_floor": self.slice_floor,
            "slice_floor_action": self.slice_floor_action,
        }

    @property
    def declared_handling(self) -> handling_rules.Handling:
        return handling_rules.Handling(annotators=self.annotators, ties=self.ties, non_answers=self.non_answers)

    @property
    def checkup_floors(self) -> checkup_rules.Floors:
        return checkup_rules.Floors(
            position_consistency=self.checkup_position_floor,
            accuracy_consistent=self.checkup_accuracy_floor,
            kappa=self.checkup_kappa_floor,
        )


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
