"""Runs, their units of judging work, and what the app keeps about every judge call."""

import uuid
from pathlib import Path

from django.conf import settings
from django.db import models
from django.db.models import Q

from .base import TimeStampedModel


class RunKind(models.TextChoices):
    COMPARE = "compare", "direct compare"
    RANK = "rank", "batch rank"
    POINTWISE = "pointwise", "pointwise"
    PAIRWISE = "pairwise", "pairwise A/B"
    JURY = "jury", "jury"
    AGENT = "agent", "agent-as-a-judge"
    BLIND = "blind", "blind comparison"
    CHECKUP = "checkup", "judge check-up"
    CANDIDATE = "candidate", "calibration candidate"


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    INVALID = "invalid"
    FAILED = "failed"
    CANCELLED = "cancelled"


class StopReason(models.TextChoices):
    """Why a run stopped before judging all its units, when nobody cancelled it."""

    BUDGET = "budget", "its budget was spent"


FINISHED_RUN_STATUSES = (RunStatus.DONE, RunStatus.INVALID, RunStatus.FAILED, RunStatus.CANCELLED)


class Executor(models.TextChoices):
    CELERY = "celery", "Celery workers"
    INLINE = "inline", "in the calling process"


class Run(TimeStampedModel):
    run_id = models.CharField(
        max_length=100, unique=True, help_text="User-supplied or <utc>_<short-uuid>; the id in URLs and the CLI."
    )
    kind = models.CharField(max_length=20, choices=RunKind.choices)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED)
    executor = models.CharField(max_length=10, choices=Executor.choices, default=Executor.CELERY)
    title = models.CharField(max_length=300, blank=True)
    judge = models.ForeignKey("judgeapp.Judge", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    system = models.ForeignKey(
        "judgeapp.System", null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    testset = models.ForeignKey("judgeapp.TestSet", null=True, blank=True, on_delete=models.PROTECT)
    rubric = models.ForeignKey("judgeapp.Rubric", null=True, blank=True, on_delete=models.PROTECT)
    prompt = models.ForeignKey("judgeapp.PromptTemplate", null=True, blank=True, on_delete=models.PROTECT)
    # Frozen at start: every judge's and system's configuration, options and thresholds, so a later edit
    # of a judge in the admin never changes what an old report claims.
    config = models.JSONField(default=dict, blank=True)
    versions = models.JSONField(default=dict, blank=True)
    stage = models.PositiveSmallIntegerField(default=0)
    total_units = models.PositiveIntegerField(default=0)
    done_units = models.PositiveIntegerField(default=0)
    failed_units = models.PositiveIntegerField(default=0)
    # The run's window on the queue (judging/runs/lifecycle.py, run_dispatch): how many of its units were
    # sent to the workers, and the last one sent (units are sent in id order). A run has a few batches per
    # judge slot in the queue at a time, so a small run started behind a huge one is not queued behind all
    # of the huge one's units.
    dispatched_units = models.PositiveIntegerField(default=0)
    dispatched_through = models.BigIntegerField(default=0)
    report = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A sequential run (a batch rank) is one task; it claims the run the way a fan-out task claims a unit.
    # A fan-out run's planner holds the same lease while it creates a stage's units: a token set on a
    # fan-out run means its current stage is not fully planned yet.
    claim_token = models.UUIDField(null=True, blank=True)
    claimed_by = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # A message the run needs (its start, its sequential task, its pending units) could not be sent: the
    # broker was down. The workers' recovery sends it at its next pass after the broker is back, and the
    # run's page and the API say why the run waits.
    awaiting_broker = models.BooleanField(default=False)
    # A spend cap in the judges' price currency (USD): when the run's judge calls have cost this much, no
    # further unit is started and the run ends invalid, `stopped` "budget" (judging/costs.py). `spent` is what
    # its recorded units cost, moved with the counters once per recorded batch.
    budget = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    spent = models.DecimalField(max_digits=16, decimal_places=8, default=0)
    stopped = models.CharField(max_length=20, choices=StopReason.choices, blank=True)

    class Meta:
        # No default ordering: the counters of a running run are updated after every unit, and every read
        # says the order it needs (the dashboard: newest first, served by run_by_kind_newest).
        indexes = [
            # The dashboard: newest runs first, optionally of one kind.
            models.Index(fields=["kind", "-created_at"], name="run_by_kind_newest"),
            # Worker start-up recovery looks only at runs still in flight.
            models.Index(
                fields=["status"], name="run_in_flight", condition=Q(status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
            ),
        ]

    def __str__(self):
        return self.run_id

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_RUN_STATUSES

    @property
    def progress_percent(self) -> int:
        if self.is_finished and self.status == RunStatus.DONE:
            return 100
        if not self.total_units:
            return 0
        return min(100, round(100 * (self.done_units + self.failed_units) / self.total_units))

    @property
    def broker_notice(self) -> str:
        """Why a run in flight waits, when it waits for the broker; else ""."""
        if not self.awaiting_broker or self.is_finished:
            return ""
        if self.status == RunStatus.QUEUED:
            return "queued — will start when the broker is back"
        return "waiting for the broker: its units are sent when the broker is back"

    @property
    def options(self) -> dict:
        """The options the run was created with (frozen in `config`): what its kind plans and reports by."""
        return self.config.get("options") or {}

    @property
    def uses_scripted_judge(self) -> bool:
        return any(j.get("scripted_demo") for j in self.config.get("judges", {}).values())

    @property
    def run_dir(self) -> Path:
        """Where this run's files live under DATA_DIR (the ranker's layout is fixed by CONTRACT §2)."""
        if self.kind in (RunKind.RANK, RunKind.COMPARE):
            return Path(settings.DATA_DIR) / "sst-llm-judge-ranker" / self.run_id
        return Path(settings.DATA_DIR) / "runs" / self.run_id


TAG_MAX_LENGTH = 40


class RunTag(TimeStampedModel):
    """A word a team puts on a run ("nightly", "rc-2"), to find it again on the runs page and in the API."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tags")
    name = models.SlugField(max_length=TAG_MAX_LENGTH, allow_unicode=False)
    # Who tagged: the signed-in person or the API token's owner; null when a command tagged it.
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="run_tag_unique_name")]
        indexes = [
            # The runs list filtered by tag: the runs with this tag.
            models.Index(fields=["name", "run"], name="run_tag_by_name"),
        ]

    def __str__(self):
        return self.name


class UnitStatus(models.TextChoices):
    PENDING = "pending"
    CLAIMED = "claimed"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


ACTIVE_UNIT_STATUSES = (UnitStatus.PENDING, UnitStatus.CLAIMED)


class Purpose(models.TextChoices):
    JUDGE = "judge", "a judge's verdict"
    GENERATE = "generate", "a system under test's output"
    PLAN = "plan", "a judge's plan for later units (a derived rubric)"
    # A pointwise run's baseline stage: the released run's reply to a shared case, judged again with this
    # run's rubric, prompt and judge so that the two are compared like for like. Not the run's own verdict.
    BASELINE = "baseline", "the baseline's reply, judged the way this run judges"


class Judgment(TimeStampedModel):
    """One unit of judging work and its result: the prompt sent, the raw reply, what was parsed from it.

    The unit key is unique per run, so a unit is created once however often a run is started or resumed,
    and a task claims it with a conditional UPDATE before calling the judge.
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="judgments")
    key = models.CharField(max_length=300, help_text="Unique per run: case/criterion/judge/order or similar.")
    stage = models.PositiveSmallIntegerField(default=0)
    purpose = models.CharField(max_length=10, choices=Purpose.choices, default=Purpose.JUDGE)
    case = models.ForeignKey("judgeapp.Case", null=True, blank=True, on_delete=models.PROTECT)
    criterion = models.ForeignKey("judgeapp.Criterion", null=True, blank=True, on_delete=models.PROTECT)
    judge = models.ForeignKey("judgeapp.Judge", null=True, blank=True, on_delete=models.PROTECT)
    system = models.ForeignKey("judgeapp.System", null=True, blank=True, on_delete=models.PROTECT)
    order = models.CharField(max_length=4, blank=True, help_text="'ab' or 'ba' for both-order judging.")
    payload = models.JSONField(default=dict, blank=True)

    status = models.CharField(max_length=10, choices=UnitStatus.choices, default=UnitStatus.PENDING)
    claim_token = models.UUIDField(null=True, blank=True)
    claimed_by = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)

    prompt = models.ForeignKey("judgeapp.PromptTemplate", null=True, blank=True, on_delete=models.PROTECT)
    prompt_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the messages sent.")
    messages = models.JSONField(default=list, blank=True)
    raw_reply = models.TextField(blank=True)
    parsed = models.JSONField(null=True, blank=True)
    parse_error = models.TextField(blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="HTTP attempts, retries included.")
    parse_attempts = models.PositiveSmallIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    cached = models.BooleanField(default=False, help_text="Answered from the response cache, no call made.")
    truncated = models.BooleanField(
        default=False, help_text="The judge's reply was cut at its max_tokens (finish_reason 'length') and not used."
    )
    transcript = models.JSONField(null=True, blank=True, help_text="A tool-using judge's whole conversation.")
    flags = models.JSONField(
        null=True, blank=True,
        help_text=(
            "What the unit's judged texts say to the judge (judging/injection.py): [{place, rule, rules, text}]; null when clean."
        ),
    )
    trials = models.JSONField(
        null=True, blank=True,
        help_text=(
            "With --trials K > 1: each trial's verdict and tokens [{trial, verdict, prompt_tokens, completion_tokens, cached, "
            "parse_error}]; `parsed` holds the verdict used."
        ),
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # No default ordering: this is the busiest table (claimed, recorded and counted for every unit);
        # a read that lists units says its order (`judgments_for_run`: stage, then creation).
        constraints = [
            models.UniqueConstraint(fields=["run", "key"], name="judgment_unique_unit_per_run"),
            # A claim is its token: the record and the recovery both match on it, so a claimed unit
            # without one could be neither recorded nor released.
            models.CheckConstraint(
                condition=~Q(status=UnitStatus.CLAIMED) | Q(claim_token__isnull=False),
                name="judgment_claimed_has_token",
            ),
        ]
        indexes = [
            # Whether a run's stage has units left (after every recorded batch), and the next pending units
            # to claim or dispatch. Not a partial index on the active statuses: SQLite uses a partial index
            # only when the query's values are literals, not bound parameters, and then scanned every unit
            # of the run after each batch (judging slowed down as a run grew).
            models.Index(fields=["run", "stage", "status"], name="judgment_per_run_stage_status"),
        ]

    def __str__(self):
        return f"{self.run_id}:{self.key}"

    @property
    def is_parse_failure(self) -> bool:
        return self.status == UnitStatus.FAILED and bool(self.parse_error) and not self.error



class Output(TimeStampedModel):
    """A system's reply to one case, kept beside its input: from the test set, a file, or generated."""

    class Source(models.TextChoices):
        TESTSET = "testset"
        FILE = "file"
        SYSTEM = "system"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="outputs")
    case = models.ForeignKey("judgeapp.Case", on_delete=models.PROTECT, related_name="run_outputs")
    slot = models.CharField(max_length=10, blank=True, help_text="'' for pointwise, 'A' or 'B' for pairwise.")
    text = models.TextField()
    source = models.CharField(max_length=10, choices=Source.choices)
    system = models.ForeignKey("judgeapp.System", null=True, blank=True, on_delete=models.PROTECT)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "case", "slot"], name="output_unique_per_run_case_slot"),
        ]


class CachedResponse(TimeStampedModel):
    """A judge server's answer keyed by (base URL, model, messages, parameters): re-judging costs no call."""

    key = models.CharField(max_length=64, unique=True)
    response = models.JSONField()
    hits = models.PositiveIntegerField(default=0)


class JudgeSlot(models.Model):
    """One of a judge's max_concurrency slots, leased by whichever process is calling it right now.

    Workers run on many machines; this table is what keeps their calls to one judge under its limit.
    """

    judge_name = models.CharField(max_length=100)
    slot = models.PositiveIntegerField()
    holder = models.CharField(max_length=200, blank=True)
    leased_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["judge_name", "slot"], name="judgeslot_unique_slot"),
        ]


class AuditLog(TimeStampedModel):
    """Append-only record of every decision a person or the app made about a release, a judge, an API token or a webhook."""

    class Action(models.TextChoices):
        RELEASE_APPROVED = "release.approved"
        RELEASE_BLOCKED = "release.blocked"
        RELEASE_MARKED = "release.marked_released"
        RELEASE_POLICY_SET = "release.policy_set"
        RUN_CANCELLED = "run.cancelled"
        JUDGE_LOCKED = "calibration.locked"
        JUDGE_UNLOCKED = "calibration.unlocked"
        LEVEL_SET = "calibration.level_set"
        POLICY_SET = "calibration.policy_set"
        CANDIDATE_ADOPTED = "calibration.candidate_adopted"
        ITEM_RESOLVED = "calibration.item_resolved"
        MARGIN_SET = "calibration.margin_set"
        MAPPING_REVEALED = "blind.mapping_revealed"
        TOKEN_CREATED = "api.token_created"
        TOKEN_REVOKED = "api.token_revoked"
        JUDGES_LOADED = "judges.loaded"
        WEBHOOK_CREATED = "webhook.created"
        WEBHOOK_CHANGED = "webhook.changed"
        WEBHOOK_DELETED = "webhook.deleted"
        PROMPT_SAVED = "prompt.saved"

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    actor_label = models.CharField(
        max_length=150,
        help_text="The username; or, with no actor, 'system' (the app on its own) or 'cli:<os user>' (a command).",
    )
    action = models.CharField(max_length=40, choices=Action.choices)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_entries")
    subject = models.CharField(max_length=300, blank=True, help_text="What the decision is about.")
    reason = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["action", "-created_at"], name="audit_by_action_newest")]

    def __str__(self):
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_label} {self.action} {self.subject}"
