"""The agent judge's loop with stub judges (no Django, no HTTP): the seed's test and the stop rule."""

import json
import re

from judgeapp.agent.core import (
    MAX_TOOL_CALLS,
    NOT_MET,
    UNVERIFIED,
    ChatReply,
    Requirement,
    ToolBox,
    Workspace,
    judge_requirement,
    parse_trace,
    tool_call,
)
from judgeapp.judging.prompts import load_prompt
from tests.agent.helpers import TASK, TRACE, make_workspace


class PathReadingStub:
    """A stub judge: reads the path named in the requirement, then decides on what read_file answered."""

    def __init__(self):
        self.calls = []

    def __call__(self, messages, tools):
        self.calls.append(list(messages))
        requirement = re.search(r"<requirement>(.*)</requirement>", messages[0]["content"]).group(1)
        path = re.search(r"[\w./-]+\.\w+", requirement).group(0)
        results = [m for m in messages if m["role"] == "tool"]
        if not results:
            return ChatReply(tool_calls=[tool_call("read_file", {"path": path})])
        seen = results[-1]["content"]
        if seen.startswith("error:"):
            return ChatReply(json.dumps({"verdict": "not_met", "evidence": f"read_file {path} answered: {seen}"}))
        return ChatReply(json.dumps({"verdict": "met", "evidence": f"{path}:1 was read"}))


def toolbox_for(root, trace=None):
    return ToolBox(Workspace(root), trace, None)


def test_stub_judge_and_workspace_missing_out_accuracy_png_gives_not_met_with_evidence_naming_the_missing_path(tmp_path):
    """The seed's test: a stub judge and a fake workspace missing out/accuracy.png; that requirement's
    verdict is not met and its evidence names the missing path."""
    workspace = make_workspace(tmp_path / "ws", with_plot=False)
    outcome = judge_requirement(
        chat=PathReadingStub(),
        task=TASK,
        requirement=Requirement("1", "saves the plot to out/accuracy.png"),
        toolbox=toolbox_for(workspace),
    )
    assert outcome.verdict == NOT_MET
    assert "out/accuracy.png" in outcome.evidence
    assert outcome.tool_call_count == 1
    assert outcome.tool_calls[0]["name"] == "read_file" and outcome.tool_calls[0]["ok"] is False


def test_judge_gets_the_seed_prompt_verbatim_with_one_requirement(tmp_path):
    stub = PathReadingStub()
    judge_requirement(
        chat=stub, task=TASK, requirement=Requirement("2", "writes out/metrics.json"),
        toolbox=toolbox_for(make_workspace(tmp_path)),
    )
    first = stub.calls[0][0]["content"]
    assert first == load_prompt("agent").render(task=TASK, requirement="writes out/metrics.json")
    assert "out/accuracy.png" not in first  # one requirement per conversation


def test_judge_that_keeps_calling_tools_is_unverified_after_exactly_15_calls(tmp_path):
    asked = []

    def always_a_tool(messages, tools):
        asked.append(1)
        return ChatReply(tool_calls=[tool_call("list_files", {"path": "."}, f"c{len(asked)}")])

    outcome = judge_requirement(chat=always_a_tool, task=TASK, requirement=Requirement("1", "saves out/accuracy.png"),
                                toolbox=toolbox_for(make_workspace(tmp_path)))
    assert outcome.verdict == UNVERIFIED
    assert outcome.tool_call_count == MAX_TOOL_CALLS == 15
    assert len(asked) == 15
    assert "15 tool calls" in outcome.reason and outcome.evidence == ""


def test_parallel_tool_calls_beyond_the_budget_are_not_run(tmp_path):
    def five_at_a_time(messages, tools):
        return ChatReply(tool_calls=[tool_call("list_files", {}, f"c{i}") for i in range(5)])

    outcome = judge_requirement(
        chat=five_at_a_time, task=TASK, requirement=Requirement("1", "x"), toolbox=toolbox_for(make_workspace(tmp_path)),
    )
    assert outcome.verdict == UNVERIFIED and outcome.tool_call_count == 15


def test_tool_results_warn_the_judge_when_few_calls_are_left(tmp_path):
    seen = []

    def reader(messages, tools):
        seen.append([m["content"] for m in messages if m["role"] == "tool"])
        return ChatReply(tool_calls=[tool_call("read_file", {"path": "train.py"}, f"c{len(seen)}")])

    judge_requirement(chat=reader, task=TASK, requirement=Requirement("1", "x"), toolbox=toolbox_for(make_workspace(tmp_path)))
    last_results = seen[-1]
    assert "tool call" not in last_results[10]
    assert "[3 tool calls left for this requirement" in last_results[11]
    assert "[1 tool call left" in last_results[13]


def test_evidence_citing_a_line_no_tool_showed_is_corrected_and_then_accepted(tmp_path):
    replies = iter([
        ChatReply(tool_calls=[tool_call("read_file", {"path": "train.py", "start_line": 1, "end_line": 3})]),
        ChatReply(json.dumps({"verdict": "met", "evidence": "train.py:5 prints the accuracy"})),
        ChatReply(tool_calls=[tool_call("read_file", {"path": "train.py", "start_line": 4, "end_line": 6}, "c2")]),
        ChatReply(json.dumps({"verdict": "met", "evidence": "train.py:5 prints \"test accuracy\""})),
    ])
    outcome = judge_requirement(chat=lambda m, t: next(replies), task=TASK, requirement=Requirement("3", "prints the accuracy"),
                                toolbox=toolbox_for(make_workspace(tmp_path)))
    assert outcome.verdict == "met" and outcome.evidence.startswith("train.py:5")
    corrections = [t for t in outcome.transcript if t["role"] == "correction"]
    assert len(corrections) == 1 and "no tool showed that line of train.py" in corrections[0]["content"]


def test_evidence_that_never_holds_makes_the_requirement_unverified_not_guessed(tmp_path):
    def claims_without_looking(messages, tools):
        return ChatReply(json.dumps({"verdict": "met", "evidence": "out/accuracy.png:1 is a fine plot"}))

    outcome = judge_requirement(chat=claims_without_looking, task=TASK, requirement=Requirement("1", "saves out/accuracy.png"),
                                toolbox=toolbox_for(make_workspace(tmp_path)))
    assert outcome.verdict == UNVERIFIED
    assert "evidence does not hold" in outcome.reason and "no tool call looked at out/accuracy.png" in outcome.reason
    assert outcome.judge_turns == 3  # the answer, then two corrections


def test_a_reply_that_is_not_a_verdict_gets_a_correction(tmp_path):
    replies = iter([
        ChatReply(tool_calls=[tool_call("read_file", {"path": "out/metrics.json"})]),
        ChatReply("It looks fine to me."),
        ChatReply('```json\n{"verdict": "met", "evidence": "out/metrics.json:1 has \\"accuracy\\": 0.93"}\n```'),
    ])
    outcome = judge_requirement(chat=lambda m, t: next(replies), task=TASK,
                                requirement=Requirement("2", "writes out/metrics.json"),
                                toolbox=toolbox_for(make_workspace(tmp_path)))
    assert outcome.verdict == "met"
    assert [t["why"] for t in outcome.transcript if t["role"] == "correction"] == ["parse"]


def test_unreadable_replies_after_the_corrections_are_unverified(tmp_path):
    outcome = judge_requirement(chat=lambda m, t: ChatReply("no idea"), task=TASK, requirement=Requirement("1", "x"),
                                toolbox=toolbox_for(make_workspace(tmp_path)))
    assert outcome.verdict == UNVERIFIED and "could not be read as a verdict" in outcome.reason


def test_trace_step_evidence_is_accepted_once_the_step_was_read(tmp_path):
    trace = parse_trace(TRACE, "trace.jsonl")
    replies = iter([
        ChatReply(tool_calls=[tool_call("search", {"query": "pytest", "where": "trace"})]),
        ChatReply(tool_calls=[tool_call("read_trace_step", {"step": 3}, "c2")]),
        ChatReply(json.dumps({"verdict": "met", "evidence": "trace step 3 ran pytest: \"3 passed in 0.4s\""})),
    ])
    outcome = judge_requirement(chat=lambda m, t: next(replies), task=TASK,
                                requirement=Requirement("4", "the agent ran the tests"),
                                toolbox=toolbox_for(make_workspace(tmp_path), trace))
    assert outcome.verdict == "met"
    assert "trace step 3" in outcome.evidence_check["citations"]


def test_the_transcript_keeps_every_turn_and_tool_call(tmp_path):
    outcome = judge_requirement(chat=PathReadingStub(), task=TASK, requirement=Requirement("2", "writes out/metrics.json"),
                                toolbox=toolbox_for(make_workspace(tmp_path)))
    roles = [t["role"] for t in outcome.transcript]
    assert roles == ["prompt", "judge", "tool", "judge", "verdict"]
    tool = outcome.transcript[2]
    assert (
        tool["name"] == "read_file" and tool["arguments"] == {"path": "out/metrics.json"} and '"accuracy": 0.93' in tool["output"]
    )
