"""The blind comparator's prompts and the strict checks on the judge's replies."""

import json

import pytest
from jsonschema import Draft202012Validator

from judgeapp.blind.core.replies import RUBRIC_SPEC, render_expectations, render_rubric, score_spec
from judgeapp.judging.parsing import ParseError
from judgeapp.judging.prompts import load_prompt

CORE = [
    {"name": n, "description": f"{n} for this task", "score_1": "bad", "score_5": "good"}
    for n in ("correctness", "completeness", "structure", "usability")
]
DOMAIN = {"name": "actionability", "description": "can be followed", "score_1": "no", "score_5": "yes"}


def rubric_reply(criteria):
    return json.dumps({"task_analysis": "The task wants a runbook.", "criteria": criteria})


def test_a_rubric_with_the_four_shared_criteria_and_a_domain_one_parses_shared_first():
    parsed = RUBRIC_SPEC.parse("Here it is:\n```json\n" + rubric_reply([DOMAIN, *CORE]) + "\n```")
    assert [c["name"] for c in parsed["criteria"]] == ["correctness", "completeness", "structure", "usability", "actionability"]


@pytest.mark.parametrize(
    "criteria, message",
    [
        (CORE, "domain-specific"),
        (CORE[:3] + [DOMAIN], "must include usability"),
        ([*CORE, DOMAIN, DOMAIN], "appears twice"),
        ([*CORE, {**DOMAIN, "name": "Action Ability"}], "snake_case"),
        ([*CORE, {**DOMAIN, "score_5": ""}], "score_5"),
        ([*CORE, *({**DOMAIN, "name": f"d{i}x"} for i in range(4))], "got 4"),
    ],
)
def test_a_rubric_that_breaks_the_rules_is_a_parse_error(criteria, message):
    with pytest.raises(ParseError, match=message):
        RUBRIC_SPEC.parse(rubric_reply(criteria))


CRITERIA = ["correctness", "completeness", "structure", "usability", "actionability"]


def score_reply(**changes):
    reply = {
        "completed": True,
        "scores": {c: {"reasoning": "fine", "score": 4} for c in CRITERIA},
        "expectations": [
            {"id": 1, "passed": True, "evidence": "runbook.md: Steps"}, {"id": 2, "passed": False, "evidence": "no rollback"},
        ],
        "strengths": ["Clear steps"],
        "weaknesses": [],
    }
    reply.update(changes)
    return json.dumps(reply)


def test_a_complete_score_reply_parses():
    parsed = score_spec(CRITERIA, 2).parse(score_reply())
    assert parsed["scores"]["usability"] == {"reasoning": "fine", "score": 4}
    assert [e["passed"] for e in parsed["expectations"]] == [True, False]


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"completed": "yes"}, "true or false"),
        ({"scores": {c: {"reasoning": "x", "score": 4} for c in CRITERIA[:-1]}}, "misses actionability"),
        (
            {"scores": {**{c: {"reasoning": "x", "score": 4} for c in CRITERIA}, "speed": {"reasoning": "x", "score": 3}}},
            "does not: speed",
        ),
        (
            {"scores": {**{c: {"reasoning": "x", "score": 4} for c in CRITERIA}, "usability": {"reasoning": "x", "score": 4.5}}},
            "scores.usability",
        ),
        (
            {"scores": {**{c: {"reasoning": "x", "score": 4} for c in CRITERIA}, "usability": {"reasoning": "x", "score": 6}}},
            "outside the scale",
        ),
        ({"scores": {**{c: {"reasoning": "x", "score": 4} for c in CRITERIA}, "usability": {"score": 3}}}, "reasoning"),
        ({"expectations": [{"id": 1, "passed": True, "evidence": "x"}]}, "array of 2 entries"),
        ({"expectations": [{"id": 2, "passed": True, "evidence": "x"}, {"id": 1, "passed": True, "evidence": "x"}]}, "in order"),
        (
            {"expectations": [{"id": 1, "passed": True, "evidence": ""}, {"id": 2, "passed": True, "evidence": "x"}]},
            "expectation 1",
        ),
        ({"strengths": "Clear"}, "array of short texts"),
    ],
)
def test_a_score_reply_that_misses_or_invents_anything_is_a_parse_error(changes, message):
    with pytest.raises(ParseError, match=message):
        score_spec(CRITERIA, 2).parse(score_reply(**changes))


def test_the_structured_output_schemas_accept_the_replies_they_describe():
    Draft202012Validator.check_schema(RUBRIC_SPEC.schema)
    Draft202012Validator(RUBRIC_SPEC.schema).validate(json.loads(rubric_reply([*CORE, DOMAIN])))
    spec = score_spec(CRITERIA, 2)
    Draft202012Validator.check_schema(spec.schema)
    Draft202012Validator(spec.schema).validate(json.loads(score_reply()))


@pytest.mark.parametrize(
    "reply, message",
    [
        (
            score_reply(
                scores={**{c: {"reasoning": "x", "score": 4} for c in CRITERIA}, "usability": {"reasoning": "x", "score": 6}}
            ),
            "greater than the maximum",
        ),
        (
            score_reply(scores={c: {"reasoning": "x", "score": 4} for c in CRITERIA[:-1]}),
            "'actionability' is a required property",
        ),
        (
            score_reply(
                scores={**{c: {"reasoning": "x", "score": 4} for c in CRITERIA}, "speed": {"reasoning": "x", "score": 3}}
            ),
            "'speed' was unexpected",
        ),
        (score_reply(expectations=[{"id": 1, "passed": True, "evidence": "x"}]), "too short"),
        (score_reply(completed="yes"), "not of type 'boolean'"),
    ],
)
def test_the_structured_output_schema_refuses_a_reply_that_breaks_it(reply, message):
    # What a server that enforces the schema would refuse to generate; the parser refuses it too (above).
    errors = [e.message for e in Draft202012Validator(score_spec(CRITERIA, 2).schema).iter_errors(json.loads(reply))]
    assert errors and any(message in e for e in errors), errors


def test_the_rubric_schema_refuses_a_rubric_without_criteria_or_a_domain_one():
    validator = Draft202012Validator(RUBRIC_SPEC.schema)
    assert not validator.is_valid({"task_analysis": "x"})
    assert not validator.is_valid(json.loads(rubric_reply(CORE)))


def test_the_prompts_are_versioned_and_ask_for_json_only_with_blinded_placeholders():
    rubric = load_prompt("blind_rubric")
    score = load_prompt("blind_score")
    assert rubric.placeholders == {"task", "expectations"}
    assert score.placeholders == {"task", "rubric", "expectations", "label", "run", "output"}
    assert len(rubric.version) == 12 and rubric.version != score.version
    assert "must not guess" in score.text and "Respond in JSON" in score.text


def test_rendered_rubric_and_expectations_carry_names_and_ids():
    assert render_expectations([]) == "(none)"
    assert render_expectations(["a", "b"]) == '<expectation id="1">a</expectation>\n<expectation id="2">b</expectation>'
    assert '<criterion name="actionability">can be followed\n1 = no\n5 = yes</criterion>' in render_rubric([*CORE, DOMAIN])
