"""The prompt library's check on save (judging/prompts.py: prompt_text_problems) and the rubric helper's
skeleton (judging/files.py: rubric_skeleton), both plain functions."""

import pytest

from judgeapp.judging.errors import InputError
from judgeapp.judging.files import FILL_IN, parse_rubric, rubric_skeleton
from judgeapp.judging.prompts import LIBRARY_MODES, MAX_PROMPT_CHARS, library_prompt, prompt_text_problems

POINTWISE = library_prompt("pointwise").text
SUMMARIES = POINTWISE.replace("one reply from a customer-support assistant", "one summary of a document")


@pytest.mark.parametrize("mode", list(LIBRARY_MODES))
def test_every_built_in_prompt_passes_its_own_check(mode):
    assert prompt_text_problems(mode, library_prompt(mode).text) == []


def test_a_prompt_for_summaries_with_the_same_slots_passes():
    assert prompt_text_problems("pointwise", SUMMARIES) == []


def test_a_missing_slot_is_named():
    problems = prompt_text_problems("pointwise", SUMMARIES.replace("<rubric>{{rubric}}</rubric>\n", ""))
    assert problems == [
        "the prompt text lacks {{rubric}}: a pointwise prompt uses every one of {{rubric}}, {{input}}, {{output}}"
    ]


def test_an_unknown_slot_is_refused():
    problems = prompt_text_problems("pointwise", SUMMARIES + "\nTone: {{tone}}\n")
    assert problems == ["{{tone}} is not a slot of a pointwise prompt: use only {{rubric}}, {{input}}, {{output}}"]


def test_a_pairwise_slot_is_unknown_to_a_pointwise_prompt():
    assert any(
        "{{first}} is not a slot of a pointwise prompt" in p for p in prompt_text_problems("pointwise", SUMMARIES + "{{first}}")
    )


def test_a_slot_spelled_another_way_is_one_problem_not_two():
    problems = prompt_text_problems("pointwise", SUMMARIES.replace("{{input}}", "{{ input }}"))
    assert problems == ["{{ input }} is not a slot as written: slots are {{rubric}}, {{input}}, {{output}}, spelled exactly so"]


def test_a_slot_twice_and_an_unclosed_brace_are_refused():
    problems = prompt_text_problems("pointwise", SUMMARIES + "\nAgain: {{output}} and {{rubric")
    assert "{{output}} appears 2 times; each slot appears once" in problems
    assert any(p.startswith("a {{ opens no slot") for p in problems)


def test_the_verdict_before_the_reasoning_is_refused():
    text = SUMMARIES.replace('{"reasoning": "...", "score": 1-5}', '{"score": 1-5, "reasoning": "..."}')
    assert prompt_text_problems("pointwise", text) == [
        'the reply format asks for "score" before "reasoning": ask for the reasoning first, e.g. '
        'Respond in JSON: {"reasoning": "...", "score": 1-5}'
    ]


def test_a_reply_format_without_reasoning_is_refused():
    text = SUMMARIES.replace('{"reasoning": "...", "score": 1-5}', '{"score": 1-5}')
    assert prompt_text_problems("pointwise", text)[0].startswith('the reply format lacks "reasoning"')


def test_a_jury_prompt_needs_its_verdict_after_the_reasoning():
    juror = library_prompt("jury").text
    swapped = juror.replace(
        '{"reasoning": "...", "verdict": "pass" | "fail"}', '{"verdict": "pass" | "fail", "reasoning": "..."}',
    )
    assert prompt_text_problems("jury", swapped)[0].startswith('the reply format asks for "verdict" before "reasoning"')
    # A pointwise reply format in a jury prompt lacks the jury's verdict.
    assert prompt_text_problems("jury", POINTWISE)[0].startswith('the reply format lacks "verdict"')


def test_empty_too_long_and_nul_texts_are_refused_each_in_its_words():
    assert prompt_text_problems("pointwise", "  \n") == ["the prompt text is empty"]
    long = prompt_text_problems("pointwise", SUMMARIES + "x" * MAX_PROMPT_CHARS)
    assert long == [
        f"the prompt text is {len(SUMMARIES) + MAX_PROMPT_CHARS:,} characters long; at most {MAX_PROMPT_CHARS:,} are allowed"
    ]
    assert prompt_text_problems("pointwise", SUMMARIES + "\x00") == ["the prompt text holds a NUL character, which is not text"]


# --- The rubric helper --------------------------------------------------------------------------------------


def test_a_skeleton_is_refused_until_every_fill_in_is_replaced_then_it_is_a_valid_rubric():
    skeleton = rubric_skeleton("Is the summary faithful to the source?")
    assert skeleton.count(f"\"{FILL_IN}: ") == 10  # the meaning of each score 1-5, and an example of each
    with pytest.raises(InputError, match="'scale' for score 1 still says 'FILL IN'; write your own words there"):
        parse_rubric(skeleton.encode(), "draft.toml")
    # Half filled in: still refused, at the first placeholder left.
    half = skeleton.replace(f'1 = "{FILL_IN}: what a reply that scores 1 (the worst) does or misses"', '1 = "Invents facts."')
    with pytest.raises(InputError, match="'scale' for score 2 still says"):
        parse_rubric(half.encode(), "draft.toml")
    filled = skeleton.replace(f"{FILL_IN}: ", "")
    spec = parse_rubric(filled.encode(), "draft.toml")
    [criterion] = spec.criteria
    assert criterion.description == "Is the summary faithful to the source?"
    assert list(criterion.scale) == ["1", "2", "3", "4", "5"] and list(criterion.examples) == ["1", "2", "3", "4", "5"]
    assert spec.warnings == []


def test_a_criterion_with_quotes_and_backslashes_reads_back_as_written():
    sentence = 'Does the reply quote the "policy" exactly, \\ and nothing else?'
    filled = rubric_skeleton(sentence).replace(f"{FILL_IN}: ", "")
    assert parse_rubric(filled.encode(), "draft.toml").criteria[0].description == sentence


def test_an_empty_or_overlong_criterion_gets_one_line():
    with pytest.raises(InputError, match="give the criterion in one sentence"):
        rubric_skeleton("   ")
    with pytest.raises(InputError, match="one sentence of at most 500 is expected"):
        rubric_skeleton("word " * 200)


def test_a_rubric_without_a_scale_points_to_the_helper():
    rubric = b'name = "r"\n[[criteria]]\nname = "faithful"\ndescription = "Is the summary faithful to the source?"\n'
    with pytest.raises(InputError, match=r"missing 'scale' \(the meaning of each score 1-5\); the rubric helper drafts one"):
        parse_rubric(rubric, "r.toml")


def test_a_description_left_as_fill_in_is_refused():
    filled = rubric_skeleton("Is it kind?").replace(f"{FILL_IN}: ", "").replace(
        'description = "Is it kind?"', f'description = "{FILL_IN}"',
    )
    with pytest.raises(InputError, match="'description' still says 'FILL IN'"):
        parse_rubric(filled.encode(), "draft.toml")
