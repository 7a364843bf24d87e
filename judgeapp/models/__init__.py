from .base import TimeStampedModel, content_hash, short_version
from .content import (
    Artifact,
    ArtifactSet,
    Case,
    Criterion,
    Goal,
    OutputRow,
    OutputSet,
    PromptMode,
    PromptTemplate,
    Rubric,
    TestSet,
)
from .endpoints import EndpointSource, Judge, StructuredOutput, System
from .releases import BaselineRule, GateAction, GateDecision, Release, ReleasePolicy
from .runs import (
    ACTIVE_UNIT_STATUSES,
    FINISHED_RUN_STATUSES,
    AuditLog,
    CachedResponse,
    Executor,
    JudgeSlot,
    Judgment,
    Output,
    Purpose,
    Run,
    RunKind,
    RunStatus,
    RunTag,
    StopReason,
    UnitStatus,
)

__all__ = [
    "ACTIVE_UNIT_STATUSES",
    "FINISHED_RUN_STATUSES",
    "Artifact",
    "ArtifactSet",
    "AuditLog",
    "BaselineRule",
    "CachedResponse",
    "Case",
    "Criterion",
    "EndpointSource",
    "Executor",
    "GateDecision",
    "Goal",
    "Judge",
    "JudgeSlot",
    "Judgment",
    "Output",
    "OutputRow",
    "OutputSet",
    "PromptMode",
    "PromptTemplate",
    "Purpose",
    "Release",
    "ReleasePolicy",
    "Rubric",
    "Run",
    "RunKind",
    "RunStatus",
    "RunTag",
    "GateAction",
    "StopReason",
    "StructuredOutput",
    "System",
    "TestSet",
    "TimeStampedModel",
    "UnitStatus",
    "content_hash",
    "short_version",
]

from .blind import BlindComparison, BlindRunOutput, BlindVersion  # noqa: E402

__all__ += ["BlindComparison", "BlindRunOutput", "BlindVersion"]
from .ranker import (  # noqa: E402
    Comparison,
    ComparisonStage,
    Insertion,
    InsertionOutcome,
    InsertionSource,
    InsertionStatus,
    Ranklist,
    RanklistEntry,
    Strategy,
    Winner,
)

__all__ += [
    "Comparison",
    "ComparisonStage",
    "Insertion",
    "InsertionOutcome",
    "InsertionSource",
    "InsertionStatus",
    "Ranklist",
    "RanklistEntry",
    "Strategy",
    "Winner",
]
from .api import ApiToken, IdempotencyKey  # noqa: E402

__all__ += ["ApiToken", "IdempotencyKey"]
from .throttle import AuthFailureCount  # noqa: E402

__all__ += ["AuthFailureCount"]
from .webhooks import DeliveryStatus, Webhook, WebhookDelivery, WebhookEvent  # noqa: E402

__all__ += ["DeliveryStatus", "Webhook", "WebhookDelivery", "WebhookEvent"]
