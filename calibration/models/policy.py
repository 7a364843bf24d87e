"""The calibration policy a lead sets: what the gate does with each status, the alternative annotator test,
how ties and non-answers count, and the check-up's floors."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from calibration.core import alt_test as alt_test_rules
from calibration.core import checkup as checkup_rules
from calibration.core import handling as handling_rules
from judgeapp.models import TimeStampedModel


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
