"""The seed prompts must stay word for word: their hashes are pinned here, so an edit fails a test."""

import pytest

from judgeapp.judging.prompts import PromptError, load_prompt

POINTWISE = """You are grading one reply from a customer-support assistant. Judge it only
against the rubric. Length and confident tone are not quality.

<rubric>{{rubric}}</rubric>
<customer_message>{{input}}</customer_message>
<assistant_reply>{{output}}</assistant_reply>

First explain in two or three sentences how the reply meets or misses each
criterion. Then give one integer score from 1 to 5 as defined in the rubric.
Respond in JSON: {"reasoning": "...", "score": 1-5}
"""

PAIRWISE = """Two assistants answered the same customer message. Decide which reply is
better against the rubric. The order of the replies means nothing, and
a longer reply is not a better one.

<rubric>{{rubric}}</rubric>
<customer_message>{{input}}</customer_message>
<reply_1>{{first}}</reply_1>
<reply_2>{{second}}</reply_2>

Explain your comparison in two or three sentences, then decide.
Respond in JSON: {"reasoning": "...", "winner": "1" | "2" | "tie"}
"""

JUROR = """You are one of several independent graders. Judge the reply only against
the rubric.

<rubric>{{rubric}}</rubric>
<customer_message>{{input}}</customer_message>
<assistant_reply>{{output}}</assistant_reply>

Explain your judgement in one or two sentences, then decide whether the
reply passes. Respond in JSON: {"reasoning": "...", "verdict": "pass" | "fail"}
"""

AGENT = """You are checking whether another agent's work meets one requirement. You can
inspect its workspace and its trace with your tools; you cannot change them.

<task>{{task}}</task>
<requirement>{{requirement}}</requirement>

Gather evidence before deciding: read the relevant files, search the trace,
and run code if that is the only way to know. Then respond in JSON:
{"verdict": "met" | "not_met", "evidence": "file paths, commands and output you relied on"}
"""

RANKER = """Comparison goal: {{goal}}

Artifact A:
{{artifact_a}}

Artifact B:
{{artifact_b}}

Decide which one better accomplishes the goal. Answer in this exact form:

WINNER: A | B | Equal
RATIONALE: <one paragraph, naming the specific evidence (sections,
  examples, completeness gaps) that drove the decision>
"""


@pytest.mark.parametrize(
    "name, text", [("pointwise", POINTWISE), ("pairwise", PAIRWISE), ("juror", JUROR), ("agent", AGENT), ("ranker", RANKER)]
)
def test_seed_prompt_is_verbatim(name, text):
    assert load_prompt(name).text == text


def test_render_fills_every_placeholder_once():
    prompt = load_prompt("pointwise")
    text = prompt.render(rubric="R", input="I typed {{output}} here", output="O")
    assert "<customer_message>I typed {{output}} here</customer_message>" in text
    assert "<assistant_reply>O</assistant_reply>" in text


def test_render_refuses_a_missing_value():
    with pytest.raises(PromptError, match="output"):
        load_prompt("pointwise").render(rubric="R", input="I")


def test_version_is_the_content_hash():
    prompt = load_prompt("juror")
    assert prompt.version == prompt.content_hash[:12]
