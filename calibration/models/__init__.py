"""Human labels, samples and queues, judge–human agreement, and the release-gate lock.

A Sample is drawn from one finished run (or made by an import of labels); its items are what people label,
each given to one or more annotators (an Assignment, which also holds the label). An AgreementResult is
the agreement of one judge configuration with the people on one sample; a JudgeLock is whether that judge
configuration may still back a release gate, for the prompt and rubric versions its evidence was judged with.

One module per subject (samples, agreement, policy, candidates); every model is imported here so that
Django registers it, with its choices and defaults, as `calibration.models` has always offered them.
"""

from .agreement import (
    DEFAULT_HANDLING_WORDS,
    DEFAULT_LEVEL_MIN_ITEMS,
    DEFAULT_LEVEL_THRESHOLD,
    AgreementLevel,
    AgreementMetric,
    AgreementResult,
    AgreementResultQuerySet,
    JudgeLock,
)
from .candidates import Candidate
from .policy import (
    DEFAULT_ALPHA_FLOOR,
    AltTestRequirement,
    AnnotatorHandling,
    CalibrationPolicy,
    NonAnswerHandling,
    PolicyAction,
    TieHandling,
)
from .samples import (
    MAX_NOTE_LENGTH,
    Adjudication,
    Assignment,
    AssignmentState,
    ItemNote,
    LabelKind,
    LabelSource,
    NoteKind,
    Sample,
    SampleItem,
)

__all__ = [
    "Adjudication",
    "AgreementLevel",
    "AgreementMetric",
    "AgreementResult",
    "AgreementResultQuerySet",
    "AltTestRequirement",
    "AnnotatorHandling",
    "Assignment",
    "AssignmentState",
    "CalibrationPolicy",
    "Candidate",
    "DEFAULT_ALPHA_FLOOR",
    "DEFAULT_HANDLING_WORDS",
    "DEFAULT_LEVEL_MIN_ITEMS",
    "DEFAULT_LEVEL_THRESHOLD",
    "ItemNote",
    "JudgeLock",
    "LabelKind",
    "LabelSource",
    "MAX_NOTE_LENGTH",
    "NonAnswerHandling",
    "NoteKind",
    "PolicyAction",
    "Sample",
    "SampleItem",
    "TieHandling",
]
