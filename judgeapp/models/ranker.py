"""The ranker (seed ranker.md): ranklists, their entries, every insertion and every comparison.

The database is the source of truth; the files of CONTRACT §2 (ranklist.json, metadata.jsonl,
comparisons.jsonl) are written from it.
"""

import uuid
from pathlib import Path

from django.db import models
from django.db.models import Q

from .base import TimeStampedModel


class Winner(models.TextChoices):
    A = "A"
    B = "B"
    EQUAL = "Equal"


class Strategy(models.TextChoices):
    SEED = "seed", "binary insertion (top, bottom, then bisection)"
    ROBUST = "robust", "robust (gate in both orders, reserve, verification pass)"
    TOURNAMENT = "tournament", "tournament (Bradley–Terry, active pairs, call budget)"


class Ranklist(TimeStampedModel):
    """One artifact set's ranked list, bound for life to its goal, its comparator (prompt version and
    judge) and whether each comparison is judged in both orders.

    Inserts into one ranklist are serialised by a lease on this row (claim_token, claimed_by,
    lease_expires_at), not by a database transaction: an insert calls the judge several times, and a
    transaction held across those calls would block every writer of a SQLite database for seconds.
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    run = models.ForeignKey("judgeapp.Run", on_delete=models.CASCADE, related_name="ranklists")
    artifact_set = models.OneToOneField("judgeapp.ArtifactSet", on_delete=models.CASCADE, related_name="ranklist")
    goal = models.ForeignKey("judgeapp.Goal", on_delete=models.PROTECT, related_name="ranklists")
    prompt = models.ForeignKey(
        "judgeapp.PromptTemplate", on_delete=models.PROTECT, help_text="The comparator's prompt, pinned."
    )
    judge = models.ForeignKey("judgeapp.Judge", on_delete=models.PROTECT, related_name="ranklists")
    judge_version = models.CharField(max_length=12, help_text="The judge's configuration version when the list was built.")
    max_size = models.PositiveIntegerField(default=10)
    both_orders = models.BooleanField(
        default=False, help_text="Each comparison judged in both orders; a disagreement counts as Equal."
    )
    strategy = models.CharField(
        max_length=12, choices=Strategy.choices, default=Strategy.SEED, help_text="How candidates are placed; fixed for life."
    )
    strategy_options = models.JSONField(
        default=dict, blank=True, help_text="The strategy's settings: robust's reserve, tournament's budget and confidence."
    )
    version = models.PositiveIntegerField(default=0, help_text="Bumped by every change of the entries.")
    claim_token = models.UUIDField(null=True, blank=True)
    claimed_by = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(max_size__gte=1), name="ranklist_max_size_positive"),
        ]

    def __str__(self):
        return f"{self.run.run_id}/{self.artifact_set.name}"

    @property
    def name(self) -> str:
        return self.artifact_set.name

    @property
    def path(self) -> Path:
        return self.run.run_dir / "ranking_state" / f"{self.artifact_set.name}.ranklist.json"


class RanklistEntry(TimeStampedModel):
    """One place in a ranklist, best first (position 0). Positions from max_size on are robust's reserve:
    kept and compared, not written to the ranklist file."""

    ranklist = models.ForeignKey(Ranklist, on_delete=models.CASCADE, related_name="entries")
    artifact = models.ForeignKey("judgeapp.Artifact", on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["ranklist", "position"]
        constraints = [
            models.UniqueConstraint(fields=["ranklist", "position"], name="rankentry_unique_position"),
            models.UniqueConstraint(fields=["ranklist", "artifact"], name="rankentry_unique_artifact"),
        ]


class InsertionStatus(models.TextChoices):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed", "unplaced"  # a comparison failed even after a retry: not in the list, may be retried
    CANCELLED = "cancelled"


class InsertionOutcome(models.TextChoices):
    INSERTED = "inserted"
    DISCARDED = "discarded", "discarded (worse than the worst of a full list)"


class InsertionSource(models.TextChoices):
    BATCH = "batch", "batch rank"
    INSERT = "insert", "incremental insert"


class Insertion(TimeStampedModel):
    """A registered candidate's way into the ranklist (Mode 3), queued in arrival order.

    Registering a candidate creates its Artifact, its metadata.jsonl line and this row, pending; inserts
    are then made strictly in `sequence` order by whoever holds the ranklist's lease. One row per artifact:
    an ID that surfaces again is skipped.
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    ranklist = models.ForeignKey(Ranklist, on_delete=models.CASCADE, related_name="insertions")
    artifact = models.OneToOneField("judgeapp.Artifact", on_delete=models.CASCADE, related_name="insertion")
    sequence = models.PositiveIntegerField(help_text="Arrival order within the ranklist.")
    source = models.CharField(max_length=10, choices=InsertionSource.choices)
    status = models.CharField(max_length=10, choices=InsertionStatus.choices, default=InsertionStatus.PENDING)
    outcome = models.CharField(max_length=10, choices=InsertionOutcome.choices, blank=True)
    position = models.PositiveIntegerField(null=True, blank=True, help_text="Index when inserted (0 is best).")
    list_length = models.PositiveIntegerField(null=True, blank=True, help_text="Length of the list it met.")
    comparisons = models.PositiveIntegerField(default=0)
    dropped = models.JSONField(default=list, blank=True, help_text="IDs the prune pushed out.")
    error = models.TextField(blank=True, help_text="Why it is unplaced (a comparison that failed twice).")
    notes = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the strategy did besides placing it: robust's verification, a tournament round, earlier failures.",
    )
    requested_by = models.CharField(max_length=150, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["ranklist", "sequence"]
        constraints = [
            models.UniqueConstraint(fields=["ranklist", "sequence"], name="insertion_unique_sequence"),
        ]
        indexes = [
            # The work queue: a ranklist's next pending insertion, in arrival order.
            models.Index(
                fields=["ranklist", "sequence"], name="insertion_pending", condition=Q(status=InsertionStatus.PENDING)
            ),
        ]


class ComparisonStage(models.TextChoices):
    TOP = "top"
    BOTTOM = "bottom"
    MIDDLE = "middle"
    DIRECT = "direct", "direct compare"
    VERIFY = "verify", "verification"
    WARMUP = "warmup", "warm-up"
    CUT = "cut", "the cut at K"
    ROUND_ROBIN = "roundrobin", "round robin"


class Comparison(TimeStampedModel):
    """One comparator decision: A (the candidate, or the first file of a direct compare) against B.

    `winner` is the decision the algorithm used; with both orders it combines `judgment` (A shown first)
    and `judgment_swapped` (B shown first), a disagreement counting as Equal.
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    run = models.ForeignKey("judgeapp.Run", on_delete=models.CASCADE, related_name="comparisons")
    ranklist = models.ForeignKey(Ranklist, null=True, blank=True, on_delete=models.CASCADE, related_name="comparisons")
    insertion = models.ForeignKey(Insertion, null=True, blank=True, on_delete=models.CASCADE, related_name="steps")
    artifact_a = models.ForeignKey("judgeapp.Artifact", on_delete=models.CASCADE, related_name="+")
    artifact_b = models.ForeignKey("judgeapp.Artifact", on_delete=models.CASCADE, related_name="+")
    stage = models.CharField(max_length=10, choices=ComparisonStage.choices)
    index = models.PositiveIntegerField(null=True, blank=True, help_text="Where B stood in the list.")
    goal = models.ForeignKey("judgeapp.Goal", on_delete=models.PROTECT, related_name="+")
    winner = models.CharField(max_length=10, choices=Winner.choices)
    rationale = models.TextField()
    judgment = models.ForeignKey("judgeapp.Judgment", on_delete=models.PROTECT, related_name="+")
    judgment_swapped = models.ForeignKey(
        "judgeapp.Judgment", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    verdicts = models.JSONField(
        default=dict, blank=True, help_text='With both orders, each order\'s verdict from A\'s side: {"ab": .., "ba": ..}.'
    )

    class Meta:
        ordering = ["run", "created_at", "id"]
        constraints = [
            # A resumed insert finds the comparison it already made instead of making it twice.
            models.UniqueConstraint(
                fields=["ranklist", "artifact_a", "artifact_b"],
                name="comparison_unique_pair_per_ranklist",
                condition=Q(ranklist__isnull=False),
            ),
        ]
        indexes = [
            # The run page lists a run's comparisons in order.
            models.Index(fields=["run", "created_at"], name="comparison_by_run"),
        ]

    @property
    def orders_disagree(self) -> bool:
        return len(set(self.verdicts.values())) > 1
