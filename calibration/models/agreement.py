"""Judge–human agreement: the level it must reach, the agreement of a judge configuration with the people on a
sample, and the lock that says whether that configuration may still back a release gate."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from calibration.core import alt_test as alt_test_rules
from calibration.core import handling as handling_rules
from calibration.core.status import unreadable_text
from calibration.models.samples import LabelKind, Sample
from judgeapp.models import TimeStampedModel


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

    def as_dict(self) -> dict:
        """The level as the run report, `calibrate agreement --json` and the level form give it."""
        return {"metric": self.metric, "threshold": self.threshold, "min_items": self.min_items}

    @property
    def explained(self) -> str:
        if self.metric == AgreementMetric.KAPPA:
            return "quadratic-weighted kappa for 1–5 scores, Cohen's kappa for pass/fail and pairwise labels"
        return "exact agreement for 1–5 scores, percent agreement for pass/fail and pairwise labels"


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
