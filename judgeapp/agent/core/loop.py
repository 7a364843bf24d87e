"""The agent judge's loop: one requirement, one conversation, until a verdict backed by evidence.

The judge gets the seed's Agent judge prompt (task and one requirement) and the read-only tools. It calls
tools; each call's result goes back to it; when it answers without a tool call, its answer is read as
{"verdict": "met" | "not_met", "evidence": …} and the evidence is checked against what the tools returned.
A reply that does not parse, or evidence that does not hold, gets a correction (at most two per
requirement) and the judge goes on. Once the judge has used 15 tool calls on the requirement, the
requirement is recorded as unverified, never guessed (the seed's stop rule); so are a judge that cannot
give a readable verdict and one whose evidence still does not hold after its corrections.

`chat(messages, tools)` is any callable returning an object with `text`, `tool_calls` (OpenAI's form:
[{"id", "type": "function", "function": {"name", "arguments"}}]) and `assistant_message()`: the judge
client's `chat` in the app, a stub in the core's tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from judgeapp.judging.parsing import AGENT_SPEC, ParseError, verdict_object
from judgeapp.judging.prompts import load_prompt

from .evidence import EvidenceCheck, check_evidence
from .inputs import Requirement
from .tools import ToolBox

MAX_TOOL_CALLS = 15  # the seed's stop rule
MAX_CORRECTIONS = 2
BUDGET_NOTE_FROM = 3  # tool results tell the judge how many calls are left once this few remain

TRUNCATED = "length"  # the finish_reason of a reply cut at max_tokens
EXCERPT_CHARS = 200  # how much of a cut reply the judge is shown again

MET, NOT_MET, UNVERIFIED = "met", "not_met", "unverified"
VERDICTS = (MET, NOT_MET, UNVERIFIED)


class ChatReplyLike(Protocol):
    text: str
    tool_calls: list[dict]

    def assistant_message(self) -> dict: ...


Chat = Callable[[list[dict], list[dict]], ChatReplyLike]


@dataclass
class ChatReply:
    """A judge's reply, for stub judges (judge_client.CallResult has the same shape)."""

    text: str = ""
    tool_calls: list[dict] = field(default_factory=list)

    def assistant_message(self) -> dict:
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        return message


def tool_call(name: str, arguments: dict, call_id: str = "call_1") -> dict:
    """A tool call in OpenAI's form (for stub judges)."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


@dataclass
class RequirementOutcome:
    requirement: Requirement
    verdict: str
    evidence: str = ""
    reason: str = ""  # why the requirement is unverified
    tool_calls: list[dict] = field(default_factory=list)
    transcript: list[dict] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)
    evidence_check: dict | None = None
    judge_turns: int = 0
    # Why no verdict could be read, when that is why it is unverified: "truncated" (the reply was cut at the
    # judge's max_tokens) or "unparsable"; "" otherwise. The report's counts read it (CONTRACT §6).
    reply_problem: str = ""

    @property
    def tool_call_count(self) -> int:
        return len(self.tool_calls)

    def parsed(self) -> dict:
        """The verdict as the app stores it (Judgment.parsed)."""
        return {
            "verdict": self.verdict,
            "evidence": self.evidence,
            "reason": self.reason,
            "tool_call_count": self.tool_call_count,
            "evidence_check": self.evidence_check,
            "reply_problem": self.reply_problem,
        }


def read_verdict(reply: str, *, judged: Sequence[str] = ()) -> dict:
    """{"verdict": "met" | "not_met", "evidence": text}; ParseError otherwise. Evidence given as a list of
    items (judges do that) is joined. The verdict is read as every mode reads one (parsing.verdict_object):
    the last object with both fields, never one copied from `judged` — the task, the requirement and what
    the tools returned from the workspace and trace under judgment."""
    obj = verdict_object(reply, fields=list(AGENT_SPEC.fields), judged=judged)
    if isinstance(obj.get("evidence"), list) and all(isinstance(e, str) for e in obj["evidence"]):
        obj["evidence"] = "; ".join(e.strip() for e in obj["evidence"] if e.strip())
    missing = [name for name in AGENT_SPEC.fields if name not in obj]
    if missing:
        raise ParseError(f"missing {', '.join(missing)} in the reply")
    return {name: validate(obj[name]) for name, validate in AGENT_SPEC.fields.items()}


def render_prompt(task: str, requirement: Requirement) -> str:
    return load_prompt("agent").render(task=task, requirement=requirement.text)


@dataclass
class _Conversation:
    """One requirement's conversation with the judge: what it was sent, the transcript, the outcome so far."""

    toolbox: ToolBox
    messages: list[dict]
    transcript: list[dict]
    outcome: RequirementOutcome
    corrections: int = 0

    @classmethod
    def start(cls, task: str, requirement: Requirement, toolbox: ToolBox) -> _Conversation:
        prompt = render_prompt(task, requirement)
        messages: list[dict] = [{"role": "user", "content": prompt}]
        transcript: list[dict] = [{"role": "prompt", "content": prompt, "tools": toolbox.names}]
        outcome = RequirementOutcome(requirement=requirement, verdict=UNVERIFIED, transcript=transcript, messages=messages)
        return cls(toolbox=toolbox, messages=messages, transcript=transcript, outcome=outcome)

    def stop(self, reason: str) -> RequirementOutcome:
        self.outcome.verdict, self.outcome.reason = UNVERIFIED, reason
        self.outcome.tool_calls = [r.as_dict() for r in self.toolbox.records]
        self.transcript.append({"role": "stopped", "reason": reason})
        return self.outcome

    def correct(self, why: str, text: str, **extra) -> None:
        self.corrections += 1
        self.messages.append({"role": "user", "content": text})
        self.transcript.append({"role": "correction", "why": why, "content": text, **extra})


def judge_requirement(
    *,
    chat: Chat,
    task: str,
    requirement: Requirement,
    toolbox: ToolBox,
    max_tool_calls: int = MAX_TOOL_CALLS,
) -> RequirementOutcome:
    talk = _Conversation.start(task, requirement, toolbox)
    while True:
        reply = chat(talk.messages, toolbox.schemas)
        talk.outcome.judge_turns += 1
        # A reply cut at max_tokens is not read: its tool calls may be cut too, and the judge is asked again
        # with the start of it only (a runaway reply resent whole fills the model's context).
        if getattr(reply, "finish_reason", "") == TRUNCATED:
            done = _truncated_reply(talk, reply)
        else:
            done = _reply_read(talk, reply, task, requirement, max_tool_calls)
        if done is not None:
            return done


def _truncated_reply(talk: _Conversation, reply: ChatReplyLike) -> RequirementOutcome | None:
    """Show the judge the start of its cut reply and ask again; stop once the corrections are used up."""
    text = (reply.text or "").strip()
    excerpt = text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + " [… cut here]"
    talk.messages.append({"role": "assistant", "content": excerpt})
    talk.transcript.append({"role": "judge", "content": excerpt, "tool_calls": [], "usage": _usage(reply), "truncated": True})
    if talk.corrections >= MAX_CORRECTIONS:
        talk.outcome.reply_problem = "truncated"
        return talk.stop("the judge's reply was cut off at the token limit before it finished")
    talk.correct("truncated", "Your reply was cut off at the token limit before it finished. Call a tool, or answer "
                              'briefly with only the JSON object {"verdict": "met" | "not_met", "evidence": "..."}.')
    return None


def _reply_read(
    talk: _Conversation, reply: ChatReplyLike, task: str, requirement: Requirement, max_tool_calls: int
) -> RequirementOutcome | None:
    """Record a whole reply and act on it: run its tool calls, or read its verdict. The outcome when the
    requirement is settled, None while the conversation goes on."""
    calls = list(reply.tool_calls or [])
    talk.messages.append(reply.assistant_message())
    talk.transcript.append({
        "role": "judge",
        "content": reply.text or "",
        "tool_calls": [_call_summary(c) for c in calls],
        "usage": _usage(reply),
    })
    if calls:
        return _tool_calls_run(talk, calls, max_tool_calls)
    try:
        judged = (task, requirement.text, *(record.output for record in talk.toolbox.records))
        answer = read_verdict(reply.text or "", judged=judged)
    except ParseError as exc:
        if talk.corrections >= MAX_CORRECTIONS:
            talk.outcome.reply_problem = "unparsable"
            return talk.stop(f"the judge's reply could not be read as a verdict: {exc}")
        talk.correct("parse", f"Your reply could not be used: {exc}. Answer again with only the JSON object "
                              '{"verdict": "met" | "not_met", "evidence": "..."}.', error=str(exc))
        return None
    return _verdict_checked(talk, answer, task, requirement)


def _tool_calls_run(talk: _Conversation, calls: list[dict], max_tool_calls: int) -> RequirementOutcome | None:
    """Run the reply's tool calls and send their results back, each telling how many calls are left once
    few are; stop when the budget is used up."""
    toolbox = talk.toolbox
    for call in calls:
        if len(toolbox.records) >= max_tool_calls:
            return talk.stop(f"the judge used all {max_tool_calls} tool calls without reaching a verdict")
        function = call.get("function") or {}
        record = toolbox.call(str(function.get("name", "")), function.get("arguments") or "{}", str(call.get("id", "")))
        left = max_tool_calls - len(toolbox.records)
        note = (
            f"\n[{left} tool call{'s' if left != 1 else ''} left for this requirement; when none are left it "
            "is recorded as unverified]" if 0 < left <= BUDGET_NOTE_FROM else ""
        )
        talk.messages.append({"role": "tool", "tool_call_id": record.call_id, "content": record.output + note})
        talk.transcript.append({"role": "tool", **record.as_dict(), **({"note": note.strip()} if note else {})})
    if len(toolbox.records) >= max_tool_calls:
        return talk.stop(f"the judge used all {max_tool_calls} tool calls without reaching a verdict")
    return None


def _verdict_checked(talk: _Conversation, answer: dict, task: str, requirement: Requirement) -> RequirementOutcome | None:
    """Accept a verdict whose evidence holds against the tool results; otherwise correct the judge, or stop
    once the corrections are used up."""
    outcome = talk.outcome
    check = _check(answer["evidence"], talk.toolbox, task, requirement)
    talk.transcript.append({"role": "verdict", **answer, "evidence_check": check.as_dict()})
    if check.ok:
        outcome.verdict, outcome.evidence = answer["verdict"], answer["evidence"]
        outcome.evidence_check = check.as_dict()
        outcome.tool_calls = [r.as_dict() for r in talk.toolbox.records]
        return outcome
    if talk.corrections >= MAX_CORRECTIONS:
        outcome.evidence = answer["evidence"]
        outcome.evidence_check = check.as_dict()
        problems = "; ".join(check.problems) or "no citation of what the tools returned"
        return talk.stop(
            f"the judge said {answer['verdict']}, but its evidence does not hold against the tool results: {problems}"
        )
    talk.correct("evidence", check.message(), problems=check.problems)
    return None


def _check(evidence: str, toolbox: ToolBox, task: str, requirement: Requirement) -> EvidenceCheck:
    return check_evidence(
        evidence,
        toolbox.observations,
        workspace_files=toolbox.workspace.files(),
        has_trace=toolbox.trace is not None,
        allowed_quotes=[task, requirement.text],
    )


def _call_summary(call: dict) -> dict:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError:
        parsed = arguments
    return {"id": call.get("id", ""), "name": function.get("name", ""), "arguments": parsed}


def _usage(reply) -> dict:
    return {
        key: getattr(reply, key)
        for key in ("prompt_tokens", "completion_tokens", "latency_ms", "cached", "attempts")
        if hasattr(reply, key)
    }
