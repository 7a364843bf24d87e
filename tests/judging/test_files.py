import json

import pytest

from judgeapp.judging import files
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import parse_outputs, parse_rubric, render_criterion

RUBRIC = b'''
name = "support-quality"
[[criteria]]
name = "helpfulness"
description = "Does the reply solve the problem?"
scale = { 1 = "no", 2 = "barely", 3 = "partly", 4 = "mostly", 5 = "fully" }
examples = { 1 = "a", 2 = "b", 3 = "c", 4 = "d", 5 = "e" }
'''


def test_jsonl_testset_parses_with_optional_output():
    rows = list(files.testset_rows(b'{"id": "c1", "input": "hi", "output": "hello"}\n{"id": "c2", "input": "yo"}\n', "t.jsonl"))
    assert [(r.case_id, r.output) for r in rows] == [("c1", "hello"), ("c2", None)]


def test_csv_testset_parses():
    rows = list(files.testset_rows(b"id,input,output\nc1,hi,hello\n", "t.csv"))
    assert rows[0].input == "hi" and rows[0].output == "hello"


@pytest.mark.parametrize(
    "data, message",
    [
        (b'{"id": "c1"}\n', "missing column 'input'"),
        (b'{"input": "x"}\n', "missing column 'id'"),
        (b'{"id": "c1", "input": "a"}\n{"id": "c1", "input": "b"}\n', "duplicate id 'c1' on lines 1 and 2"),
        (b'{"id": "c1", "input": "a"}\n{"id": "c2", "input": \n', "line 2: not valid JSON"),
        (b"", "empty"),
        (b"\x00\x01binary", "binary"),
        (b"[1, 2]\n", "expected a JSON object"),
    ],
)
def test_bad_testset_gets_one_clear_line(data, message):
    with pytest.raises(InputError, match=message) as exc:
        list(files.testset_rows(data, "t.jsonl"))
    assert "\n" not in str(exc.value)


def test_rubric_parses_scale_and_examples():
    spec = parse_rubric(RUBRIC, "r.toml")
    assert spec.name == "support-quality"
    assert spec.criteria[0].bounds == (1, 5)
    assert "Score 5: e" in render_criterion(spec.criteria[0])


def test_rubric_without_a_scale_is_refused():
    data = b'name = "r"\n[[criteria]]\nname = "helpfulness"\ndescription = "d"\n'
    with pytest.raises(InputError, match="missing 'scale'"):
        parse_rubric(data, "r.toml")


def test_rubric_with_a_gap_in_its_scale_is_refused():
    data = b'name = "r"\n[[criteria]]\nname = "h"\ndescription = "d"\nscale = { 1 = "a", 2 = "b", 4 = "d" }\n'
    with pytest.raises(InputError, match="exactly the scores 1 to 5"):
        parse_rubric(data, "r.toml")


def test_rubric_in_json_parses():
    scale = {str(p): f"meaning {p}" for p in range(1, 6)}
    data = json.dumps({"name": "r", "criteria": [{"name": "h", "description": "d", "scale": scale}]}).encode()
    spec = parse_rubric(data, "r.json")
    assert spec.criteria[0].bounds == (1, 5)
    assert spec.warnings  # no examples: the report will say so


def test_outputs_file_maps_ids():
    assert parse_outputs(b'{"id": "c1", "output": "x"}\n', "a.jsonl") == {"c1": "x"}
