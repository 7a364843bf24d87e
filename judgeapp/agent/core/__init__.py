"""Agent-as-a-Judge (seed llm-as-judge-patterns.md): a tool-using judge over an agent's workspace and
trace, one requirement per conversation. Plain Python, no Django: the app wires `judge_requirement` to
the judge client, the tests to stub judges.

- inputs.py: the task, the numbered requirements, the trace
- workspace.py: confinement to the workspace; taking a workspace in from a directory or an archive
- sandbox.py: running a file in bubblewrap, on a throw-away copy with no network, no host path and limits
- tools.py: the read-only tools and what they showed
- evidence.py: checking a verdict's evidence against what the tools showed
- loop.py: one requirement's conversation, the 15-tool-call stop rule
- report.py: the report's summary
"""

from .inputs import Requirement, Trace, TraceStep, parse_requirements, parse_task, parse_trace
from .loop import MAX_TOOL_CALLS, MET, NOT_MET, UNVERIFIED, ChatReply, RequirementOutcome, judge_requirement, tool_call
from .report import summarize
from .sandbox import Sandbox, SandboxError, SandboxLimits, SandboxStatus, sandbox_status
from .tools import ToolBox
from .workspace import IngestReport, ToolError, Workspace, WorkspaceLimits, ingest_archive, ingest_directory

__all__ = [
    "MAX_TOOL_CALLS",
    "MET",
    "NOT_MET",
    "UNVERIFIED",
    "ChatReply",
    "IngestReport",
    "Requirement",
    "RequirementOutcome",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "SandboxStatus",
    "ToolBox",
    "ToolError",
    "Trace",
    "TraceStep",
    "Workspace",
    "WorkspaceLimits",
    "ingest_archive",
    "ingest_directory",
    "judge_requirement",
    "parse_requirements",
    "parse_task",
    "parse_trace",
    "sandbox_status",
    "summarize",
    "tool_call",
]
