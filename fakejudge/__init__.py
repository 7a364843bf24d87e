"""A fake OpenAI-compatible judge server for tests, benchmarks and the demo (see server.py)."""

from .brains import DemoBrain, artifact_quality, support_reply_quality
from .server import (
    SCRIPTED_NOTE,
    BrokenBody,
    Delay,
    FakeJudgeServer,
    FakeRequest,
    Hang,
    PerConversation,
    Reply,
    ReplyJSON,
    Response,
    Sequence,
    Status,
    ToolCalls,
    When,
    completion,
    prompt_contains,
)

__all__ = [
    "SCRIPTED_NOTE",
    "BrokenBody",
    "Delay",
    "DemoBrain",
    "FakeJudgeServer",
    "FakeRequest",
    "Hang",
    "PerConversation",
    "Reply",
    "ReplyJSON",
    "Response",
    "Sequence",
    "Status",
    "ToolCalls",
    "When",
    "artifact_quality",
    "completion",
    "prompt_contains",
    "support_reply_quality",
]
