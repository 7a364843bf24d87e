"""What the blind comparator asks its judge, and how the replies are checked.

The seed gives no prompt text for deriving the rubric or scoring a run; ours are in
`judgeapp/prompts/blind_rubric.md` and `blind_score.md` (versioned by content hash like the seed prompts).
Both ask for one JSON object, validated strictly here: a reply that misses a criterion, scores one the
rubric does not have, gives 4.5 or "4", or skips an expectation is a ParseError, which the judge client
answers with one retry. The judge sees only blinded labels, `run-N` names and the run's own relative file
paths.
"""

from __future__ import annotations

import json
import re
from typing import Any

from judgeapp.blind.core.comparator import CORE_CRITERIA
from judgeapp.blind.core.inputs import VersionRun
from judgeapp.judging.parsing import ParseError, ReplySpec, integer_in, text
from judgeapp.judging.prompts import PromptMarkup, judged_text

CRITERION_NAME = re.compile(r"^[a-z][a-z0-9_]{1,39}$")
MIN_DOMAIN_CRITERIA, MAX_DOMAIN_CRITERIA = 1, 3
MAX_NOTES, MAX_NOTE_CHARS = 3, 300


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ParseError(f"expected true or false, got {json.dumps(value)}")
    return value


def _criteria(value: Any) -> list[dict]:
    if not isinstance(value, list) or not value:
        raise ParseError("'criteria' must be a non-empty array")
    seen: dict[str, dict] = {}
    for i, item in enumerate(value, start=1):
        if not isinstance(item, dict):
            raise ParseError(f"criterion {i} must be an object")
        name = item.get("name")
        if not isinstance(name, str) or not CRITERION_NAME.match(name.strip()):
            raise ParseError(f"criterion {i}: name must be lowercase snake_case, got {json.dumps(name)}")
        name = name.strip()
        if name in seen:
            raise ParseError(f"criterion {name!r} appears twice")
        fields = {}
        for key in ("description", "score_1", "score_5"):
            try:
                fields[key] = text(item.get(key))
            except ParseError:
                raise ParseError(f"criterion {name!r}: '{key}' must be a non-empty text") from None
        seen[name] = {"name": name, **fields}
    missing = [c for c in CORE_CRITERIA if c not in seen]
    if missing:
        raise ParseError(f"the rubric must include {', '.join(missing)} (names exactly as given)")
    domain = [n for n in seen if n not in CORE_CRITERIA]
    if not MIN_DOMAIN_CRITERIA <= len(domain) <= MAX_DOMAIN_CRITERIA:
        raise ParseError(f"add {MIN_DOMAIN_CRITERIA} to {MAX_DOMAIN_CRITERIA} domain-specific criteria, got {len(domain)}")
    # The four shared criteria first, in the seed's order, then the task's own.
    return [seen[c] for c in CORE_CRITERIA] + [seen[n] for n in domain]


_CRITERION_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "score_1": {"type": "string"},
        "score_5": {"type": "string"},
    },
    "required": ["name", "description", "score_1", "score_5"],
    "additionalProperties": False,
}

RUBRIC_SPEC = ReplySpec(
    name="blind_rubric",
    fields={"task_analysis": text, "criteria": _criteria},
    schema={
        "type": "object",
        "properties": {
            "task_analysis": {"type": "string"},
            "criteria": {"type": "array", "items": _CRITERION_SCHEMA, "minItems": 5, "maxItems": 7},
        },
        "required": ["task_analysis", "criteria"],
        "additionalProperties": False,
    },
    reasoning_field="task_analysis",
)


def _notes(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise ParseError(f"expected an array of short texts, got {json.dumps(value)}")
    notes = []
    for item in value:
        if not isinstance(item, str):
            raise ParseError(f"expected texts in the array, got {json.dumps(item)}")
        item = " ".join(item.split())
        if item:
            notes.append(item[:MAX_NOTE_CHARS])
    return notes[:MAX_NOTES]


def score_spec(criteria: list[str], n_expectations: int) -> ReplySpec:
    """The reply to blind_score: every criterion scored 1-5 with its reasoning first, every expectation
    checked in order."""
    score_1_to_5 = integer_in(1, 5)

    def scores(value: Any) -> dict:
        if not isinstance(value, dict):
            raise ParseError("'scores' must be an object with one entry per rubric criterion")
        unknown = [k for k in value if k not in criteria]
        if unknown:
            raise ParseError(f"'scores' has criteria the rubric does not: {', '.join(unknown)}")
        missing = [c for c in criteria if c not in value]
        if missing:
            raise ParseError(f"'scores' misses {', '.join(missing)}")
        clean = {}
        for name in criteria:
            entry = value[name]
            if not isinstance(entry, dict) or "score" not in entry or "reasoning" not in entry:
                raise ParseError(f"scores.{name} must be {{\"reasoning\": \"...\", \"score\": 1-5}}")
            try:
                clean[name] = {"reasoning": text(entry["reasoning"]), "score": score_1_to_5(entry["score"])}
            except ParseError as exc:
                raise ParseError(f"scores.{name}: {exc}") from None
        return clean

    def expectations(value: Any) -> list[dict]:
        if not isinstance(value, list) or len(value) != n_expectations:
            raise ParseError(f"'expectations' must be an array of {n_expectations} entries, one per expectation")
        clean = []
        for i, item in enumerate(value, start=1):
            if not isinstance(item, dict):
                raise ParseError(f"expectation {i} must be an object")
            if item.get("id", i) != i:
                raise ParseError(f"expectation entries must be in order: entry {i} has id {json.dumps(item.get('id'))}")
            try:
                clean.append({"id": i, "passed": _boolean(item.get("passed")), "evidence": text(item.get("evidence"))})
            except ParseError as exc:
                raise ParseError(f"expectation {i}: {exc}") from None
        return clean

    return ReplySpec(
        name="blind_score",
        fields={
            "completed": _boolean,
            "scores": scores,
            "expectations": expectations,
            "strengths": _notes,
            "weaknesses": _notes,
        },
        schema=_score_schema(criteria, n_expectations),
    )


def _score_schema(criteria: list[str], n_expectations: int) -> dict:
    """The JSON schema of a blind_score reply (for servers that constrain their output to one)."""
    criterion_schema = {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, "score": {"type": "integer", "minimum": 1, "maximum": 5}},
        "required": ["reasoning", "score"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "completed": {"type": "boolean"},
            "scores": {
                "type": "object",
                "properties": {c: criterion_schema for c in criteria},
                "required": list(criteria),
                "additionalProperties": False,
            },
            "expectations": {
                "type": "array",
                "minItems": n_expectations,
                "maxItems": n_expectations,
                "items": {
                    "type": "object",
                    "properties": {"id": {"type": "integer"}, "passed": {"type": "boolean"}, "evidence": {"type": "string"}},
                    "required": ["id", "passed", "evidence"],
                    "additionalProperties": False,
                },
            },
            "strengths": {"type": "array", "items": {"type": "string"}},
            "weaknesses": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["completed", "scores", "expectations", "strengths", "weaknesses"],
        "additionalProperties": False,
    }


# --- What the judge reads ------------------------------------------------------------------------------------
# Markup of our own around texts from the inputs (and the rubric the judge derived from them): each text is
# escaped with judged_text, so that a file holding `</file></version_output>` or named `x" binary="true`
# closes no tag and adds no attribute, and the whole is PromptMarkup, which the prompt inserts as it is.


def render_expectations(expectations: list[str]) -> PromptMarkup:
    if not expectations:
        return PromptMarkup("(none)")
    return PromptMarkup(
        "\n".join(f'<expectation id="{i}">{judged_text(e)}</expectation>' for i, e in enumerate(expectations, start=1))
    )


def render_rubric(criteria: list[dict]) -> PromptMarkup:
    return PromptMarkup("\n".join(
        f'<criterion name="{judged_text(c["name"], attribute=True)}">{judged_text(c["description"])}\n'
        f'1 = {judged_text(c["score_1"])}\n5 = {judged_text(c["score_5"])}</criterion>'
        for c in criteria
    ))


def render_run(run: VersionRun) -> PromptMarkup:
    """A run's files as the judge reads them: each under its path relative to the run."""
    if not run.files:
        return PromptMarkup("(this run produced no files)")
    parts = []
    for f in run.files:
        path = judged_text(f.path, attribute=True)
        if f.is_binary:
            parts.append(f'<file path="{path}" binary="true">(binary file, {f.size:,} bytes, not shown)</file>')
        else:
            parts.append(f'<file path="{path}">\n{judged_text(f.text.rstrip())}\n</file>')
    return PromptMarkup("\n".join(parts))


def judged_texts(run: VersionRun) -> tuple[str, ...]:
    """What of a run the judge judges, as written: its files' paths and texts (for the echo rule)."""
    return tuple(f.path for f in run.files) + tuple(f.text for f in run.files if f.text is not None)
