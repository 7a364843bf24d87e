"""Evidence is checked against what the tools returned; the task, checklist and trace are read strictly."""

import json

import pytest

from judgeapp.agent.core import ToolBox, Workspace, parse_requirements, parse_task, parse_trace
from judgeapp.agent.core.evidence import check_evidence
from judgeapp.judging.errors import InputError
from tests.agent.helpers import REQUIREMENTS_MD, TRACE, make_workspace


@pytest.fixture
def toolbox(tmp_path):
    return ToolBox(Workspace(make_workspace(tmp_path / "ws", with_plot=False)), parse_trace(TRACE, "t.jsonl"), None)


def check(toolbox, evidence):
    return check_evidence(evidence, toolbox.observations, workspace_files=toolbox.workspace.files(), has_trace=True,
                          allowed_quotes=["saves the plot to out/accuracy.png"])


def test_a_line_shown_by_read_file_is_a_citation(toolbox):
    toolbox.call("read_file", {"path": "train.py", "start_line": 1, "end_line": 6})
    result = check(toolbox, 'train.py:5 prints "test accuracy"; see also lines 3-4 of train.py')
    assert result.ok and result.citations == ["train.py:5", "train.py:3-4"]


def test_a_line_never_shown_is_a_problem(toolbox):
    toolbox.call("read_file", {"path": "train.py", "start_line": 1, "end_line": 2})
    result = check(toolbox, "train.py:7 saves the metrics")
    assert not result.ok
    assert result.problems == ["it cites train.py:7, but no tool showed that line of train.py (lines shown: 1-2)"]


def test_a_file_no_tool_looked_at_is_a_problem(toolbox):
    toolbox.call("read_file", {"path": "train.py"})
    result = check(toolbox, "train.py:1 is fine, and data/iris.csv has the data")
    assert not result.ok and result.problems == ["it cites data/iris.csv, but no tool call looked at it"]


def test_a_missing_file_reported_by_a_tool_is_a_citation(toolbox):
    toolbox.call("read_file", {"path": "out/accuracy.png"})
    result = check(toolbox, "out/accuracy.png does not exist (read_file: no such file or directory in the workspace)")
    assert result.ok and result.citations == ["out/accuracy.png (reported missing)"]


def test_absence_seen_in_a_directory_listing_is_a_citation(toolbox):
    toolbox.call("list_files", {"path": "out"})
    assert check(toolbox, "out/accuracy.png is not among the files of out/").ok


def test_a_quote_no_tool_returned_is_a_problem(toolbox):
    toolbox.call("read_file", {"path": "train.py"})
    result = check(toolbox, 'train.py:4 sets "accuracy = 0.99"')
    assert not result.ok and "quotes 'accuracy = 0.99', which no tool returned" in result.problems[0]
    # Quoting the requirement itself is fine.
    assert check(toolbox, 'train.py:4 does not "saves the plot"').ok


def test_trace_steps_must_have_been_shown(toolbox):
    toolbox.call("search", {"query": "pytest", "where": "trace"})
    assert check(toolbox, "trace step 3 ran pytest").ok
    result = check(toolbox, "trace step 2 ran it, and step 3 ran pytest")
    assert result.problems == ["it cites trace step 2, which no tool showed"]


def test_no_citation_at_all_is_refused(toolbox):
    result = check(toolbox, "The agent clearly did a good job.")
    assert not result.ok and result.problems == []
    assert "cites no file path and line" in result.message()


def test_plain_words_that_name_directories_are_not_citations(toolbox):
    toolbox.call("read_file", {"path": "train.py"})
    assert check(toolbox, "train.py:5 prints the accuracy computed on the out-of-sample data, e.g. 0.93").ok


# --- Inputs -------------------------------------------------------------------------------------------


def test_numbered_checklist_is_read_with_its_numbers():
    requirements = parse_requirements(REQUIREMENTS_MD, "requirements.md")
    assert [(r.id, r.text) for r in requirements] == [
        ("1", "saves the plot to out/accuracy.png"),
        ("2", "writes the metrics to out/metrics.json"),
        ("3", "train.py prints the test accuracy when run"),
    ]


def test_checklist_item_continued_on_the_next_line_is_one_requirement():
    requirements = parse_requirements(b"1. saves the plot\n   to out/accuracy.png\n2) prints it\n", "r.txt")
    assert [r.text for r in requirements] == ["saves the plot to out/accuracy.png", "prints it"]


@pytest.mark.parametrize(
    "data, name, message",
    [
        (
            b"saves the plot\n", "r.md",
            "r.md line 1: expected a numbered requirement such as '1. saves the plot to out/accuracy.png'",
        ),
        (b"1. a\n1. b\n", "r.md", "r.md: requirement 1 appears twice (items 1 and 2)"),
        (b"# Only a title\n", "r.md", "r.md: no requirements"),
        (b"", "r.md", "r.md: the file is empty"),
        (b'{"requirements": "x"}', "r.json", "r.json: expected a list of requirements"),
        (b"\x00\x01binary", "r.md", "looks like a binary file"),
    ],
)
def test_bad_checklists_are_one_clear_line(data, name, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        parse_requirements(data, name)


def test_devai_task_file_gives_task_and_requirements():
    devai = {
        "name": "01_Demo_Task",
        "query": "Build a classifier and save the results in `results/`.",
        "requirements": [
            {"requirement_id": 0, "criteria": "The \"Iris\" dataset is used.", "prerequisites": [], "satisfied": None},
            {
                "requirement_id": 1, "criteria": "Accuracy is saved in `results/accuracy.txt`.", "prerequisites": [0],
                "satisfied": None,
            },
        ],
    }
    data = json.dumps(devai).encode()
    assert parse_task(data, "01_Demo_Task.json") == devai["query"]
    assert [(r.id, r.text) for r in parse_requirements(data, "01_Demo_Task.json")] == [
        ("0", 'The "Iris" dataset is used.'), ("1", "Accuracy is saved in `results/accuracy.txt`."),
    ]


def test_trace_jsonl_and_json_array_are_read_with_their_step_numbers():
    jsonl = parse_trace(TRACE, "trace.jsonl")
    assert [s.id for s in jsonl.steps] == [1, 2, 3] and jsonl.get(3).data["action"] == "pytest -q"
    array = parse_trace(json.dumps([{"step": 0, "agent": {"thought": "a", "action": None}}, {"step": 1}]).encode(), "t.json")
    assert [s.id for s in array.steps] == [0, 1]
    positional = parse_trace(b'{"action": "a"}\n{"action": "b"}\n', "t.jsonl")
    assert [s.id for s in positional.steps] == [1, 2]


def test_bad_trace_line_is_named():
    with pytest.raises(InputError, match=r"t\.jsonl line 2: not valid JSON"):
        parse_trace(b'{"step": 1}\n{oops\n', "t.jsonl")


@pytest.mark.parametrize("evidence", [
    "Read `train.py` lines 4-5: it prints the accuracy",
    "train.py#L4-L5 prints the accuracy",
    "lines 4-5 of `train.py` print the accuracy",
    "train.py (line 5) prints the accuracy",
])
def test_the_usual_ways_of_citing_lines_are_understood(toolbox, evidence):
    toolbox.call("read_file", {"path": "train.py", "start_line": 4, "end_line": 5})
    result = check(toolbox, evidence)
    assert result.ok, result.problems
    assert any(c.startswith("train.py:") for c in result.citations)
