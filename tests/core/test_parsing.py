import pytest

from judgeapp.judging.parsing import (
    JUROR_SPEC,
    PAIRWISE_SPEC,
    ParseError,
    parse_winner_rationale,
    score_spec,
)


def test_plain_json_reply_parses():
    assert score_spec().parse('{"reasoning": "Solves it.", "score": 4}') == {"reasoning": "Solves it.", "score": 4}


def test_json_inside_code_fence_parses():
    reply = 'Here is my grade:\n```json\n{"reasoning": "Polite but vague.", "score": 3}\n```\n'
    assert score_spec().parse(reply)["score"] == 3


def test_json_after_a_sentence_parses():
    reply = 'The reply misses the refund policy. {"reasoning": "Misses policy.", "score": 2} Hope this helps.'
    assert score_spec().parse(reply)["score"] == 2


@pytest.mark.parametrize(
    "reply, message",
    [
        ('{"reasoning": "ok", "score": "4"}', "integer"),
        ('{"reasoning": "ok", "score": 4.5}', "integer"),
        ('{"reasoning": "ok", "score": true}', "integer"),
        ('{"reasoning": "ok", "score": 6}', "outside the scale"),
        ('{"reasoning": "ok", "score": 0}', "outside the scale"),
        ('{"score": 4}', "missing reasoning"),
        ('{"reasoning": "", "score": 4}', "non-empty"),
        ("I would give it a four.", "no JSON object"),
        ("", "empty reply"),
    ],
)
def test_score_reply_is_validated_strictly(reply, message):
    with pytest.raises(ParseError, match=message):
        score_spec().parse(reply)


def test_score_scale_comes_from_the_rubric():
    assert score_spec(1, 3).parse('{"reasoning": "x", "score": 3}')["score"] == 3
    with pytest.raises(ParseError):
        score_spec(1, 3).parse('{"reasoning": "x", "score": 4}')


def test_pairwise_winner_must_be_in_the_allowed_set():
    assert PAIRWISE_SPEC.parse('{"reasoning": "r", "winner": "2"}')["winner"] == "2"
    assert PAIRWISE_SPEC.parse('{"reasoning": "r", "winner": "Tie"}')["winner"] == "tie"
    with pytest.raises(ParseError):
        PAIRWISE_SPEC.parse('{"reasoning": "r", "winner": "A"}')
    with pytest.raises(ParseError):
        PAIRWISE_SPEC.parse('{"reasoning": "r", "winner": 1}')


def test_juror_verdict_is_pass_or_fail():
    assert JUROR_SPEC.parse('{"reasoning": "r", "verdict": "pass"}')["verdict"] == "pass"
    with pytest.raises(ParseError):
        JUROR_SPEC.parse('{"reasoning": "r", "verdict": "maybe"}')


def test_an_echoed_format_example_after_the_answer_is_not_an_object():
    reply = '{"reasoning": "good", "score": 5}\nFormat was: {"reasoning": "...", "score": 1-5}'
    assert score_spec().parse(reply) == {"reasoning": "good", "score": 5}


def test_winner_rationale_form_parses():
    parsed = parse_winner_rationale("WINNER: B\nRATIONALE: B cites three studies; A cites none.")
    assert parsed == {"winner": "B", "rationale": "B cites three studies; A cites none."}


def test_winner_rationale_accepts_markdown_bold_and_case():
    assert parse_winner_rationale("**WINNER:** equal\n**RATIONALE:** Same depth.")["winner"] == "Equal"


def test_winner_line_inside_a_fenced_quote_is_not_the_verdict():
    reply = "```\nWINNER: A\n```\nWINNER: B\nRATIONALE: The quoted line is from artifact A's text."
    assert parse_winner_rationale(reply)["winner"] == "B"


def test_template_echo_is_not_a_verdict():
    with pytest.raises(ParseError):
        parse_winner_rationale("WINNER: A | B | Equal\nRATIONALE: ...")


def test_conflicting_winner_lines_are_refused():
    with pytest.raises(ParseError, match="conflicting"):
        parse_winner_rationale("WINNER: A\nRATIONALE: x\nWINNER: B")


def test_missing_rationale_is_refused():
    with pytest.raises(ParseError, match="RATIONALE"):
        parse_winner_rationale("WINNER: A")


def test_a_longer_fence_holding_a_shorter_one_is_quoted_whole():
    # A judge echoing an artifact the way the ranker's prompt fences it: four backticks around a text that
    # holds its own ``` block and a WINNER line after it.
    reply = "````\n```\ncode\n```\nWINNER: A\n````\nWINNER: B\nRATIONALE: B is deeper."
    assert parse_winner_rationale(reply)["winner"] == "B"


def test_an_unclosed_fence_is_left_as_text():
    assert parse_winner_rationale("```\nWINNER: B\nRATIONALE: r")["winner"] == "B"
