"""Searches that cannot hang: patterns and texts from judges and users run on RE2 (judgeapp/judging/regexes.py).

A backtracking pattern holds the GIL, so a hang cannot be stopped from a thread: the cases that would hang
under `re` run in a child process with a timeout, so that a regression fails here instead of hanging.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from judgeapp.agent.core import ToolBox, Trace, TraceStep, Workspace
from judgeapp.judging.regexes import PatternRefused, linear_regex

ROOT = Path(__file__).resolve().parents[2]


def run_in_child(code: str, timeout: float = 20) -> dict:
    """Run `code` (which prints one JSON line) in a fresh interpreter; the JSON and the seconds it took inside."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], check=False, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("line", ["a" * 40, "a" * 40 + "!", "a" * 900 + "!"])
def test_catastrophic_pattern_in_the_search_tool_answers_within_a_second(tmp_path, line):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "data.txt").write_text(f"first\n{line}\nlast\n")
    (workspace / "trace.txt").write_text(line + "\n")
    result = run_in_child(f"""
        import json, time
        from judgeapp.agent.core import ToolBox, Workspace, Trace, TraceStep
        trace = Trace((TraceStep(1, {{"observation": {line!r}}}),))
        toolbox = ToolBox(Workspace({str(workspace)!r}), trace, None)
        started = time.monotonic()
        record = toolbox.call("search", {{"query": "(a+)+$", "regex": True}})
        print(json.dumps({{"seconds": time.monotonic() - started, "output": record.output}}))
    """)
    assert result["seconds"] < 1.0
    matches = 2 if not line.endswith("!") else 0  # data.txt and trace.txt; the trace step's JSON ends in "}
    assert result["output"].startswith(f"{matches} match")


@pytest.mark.parametrize("pattern, why", [
    (r"(a)\1", "backreferences are not supported"),
    (r"(?=secret)", "lookahead and lookbehind are not supported"),
    (r"(?<!x)y", "lookahead and lookbehind are not supported"),
    (r"[unclosed", "missing ]"),
])
def test_pattern_re2_refuses_is_a_clear_tool_error(tmp_path, pattern, why):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("aa\n")
    record = ToolBox(Workspace(workspace), None, None).call("search", {"query": pattern, "regex": True})
    assert not record.ok
    assert record.output.startswith("error: the regular expression is refused:")
    assert why in record.output and "RE2" in record.output and "\n" not in record.output


def test_search_reports_each_matching_line_once_with_its_number(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("x = 1\r\nAccuracy accuracy\r\n\r\nprint(accuracy)\n")
    (workspace / "b.txt").write_text("no hit here\n")
    toolbox = ToolBox(Workspace(workspace), None, None)
    plain = toolbox.call("search", {"query": "ACCURACY"}).output
    assert plain.splitlines() == [
        "2 matches for 'ACCURACY' in the workspace", "a.py:2: Accuracy accuracy", "a.py:4: print(accuracy)",
    ]
    # A match never spans lines; an empty line is a line; the end of the file is not one more line.
    assert toolbox.call("search", {"query": r"accuracy\s+print", "regex": True}).output.startswith("0 matches")
    assert toolbox.call("search", {"query": "^$", "regex": True}).output.splitlines()[1:] == ["a.py:3: "]
    assert toolbox.observations.lines["a.py"] == {2, 3, 4}


def test_trace_search_with_a_regex_shows_the_step(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    trace = Trace((TraceStep(7, {"observation": "3 passed in 0.4s"}),))
    output = ToolBox(Workspace(workspace), trace, None).call(
        "search", {"query": r"\d+ passed", "regex": True, "where": "trace"},
    ).output
    assert output.splitlines()[1] == 'trace step 7: {"observation": "3 passed in 0.4s"}'


def test_ranker_reply_of_many_spaces_parses_within_a_second():
    # With `re`, these WINNER/RATIONALE patterns backtracked quadratically: 20,000 spaces took 2.6 s.
    result = run_in_child("""
        import json, time
        from judgeapp.judging.parsing import ParseError, parse_winner_rationale
        started = time.monotonic()
        for reply in [" " * 200_000, "WINNER:" + " " * 200_000 + "x", "\\n" * 100_000, "*" * 100_000]:
            try:
                parse_winner_rationale(reply)
            except ParseError:
                pass
        print(json.dumps({"seconds": time.monotonic() - started}))
    """)
    assert result["seconds"] < 1.0


def test_linear_regex_keeps_re_flags():
    assert linear_regex("^winner", ignore_case=True, multiline=True).search("x\nWINNER: A")
    assert not linear_regex("^winner", ignore_case=True).search("x\nWINNER: A")
    assert linear_regex("a.b", dotall=True).search("a\nb") and not linear_regex("a.b").search("a\nb")
    with pytest.raises(PatternRefused):
        linear_regex(r"(x)\1")
