"""Reply parsing shared by every mode.

Judges answer in one of two forms: the ranker's `WINNER:` / `RATIONALE:` lines, or a JSON object, which
models wrap in code fences or put after a sentence of their own. Parsing finds the object wherever it is,
then validates every field strictly: a score must be a JSON integer on the rubric's scale (not "4", not
4.5), a winner one of the allowed values. Anything else is a ParseError, which the judge client answers
with one retry and then records.
"""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from judgeapp.judging.regexes import linear_regex


class ParseError(ValueError):
    """The reply does not have the required form. The message says what was wrong, in one line."""


_FENCE = re.compile(r"```[ \t]*([\w-]*)[ \t]*\n(.*?)```", re.S)


def extract_json_object(text: str) -> dict:
    """The JSON object in a reply: the whole reply, a fenced block, or the first object after some prose.

    When a reply holds several objects, the first one that decodes is taken: judges put their answer
    first and sometimes echo an example after it.
    """
    stripped = text.strip()
    if not stripped:
        raise ParseError("empty reply")
    candidates: list[str] = [stripped]
    candidates += [body.strip() for _lang, body in _FENCE.findall(text)]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _end = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise ParseError("no JSON object in the reply")


# --- Field validators: each returns the clean value or raises ParseError --------------------------------

Validator = Callable[[Any], Any]


def integer_in(low: int, high: int) -> Validator:
    def validate(value: Any) -> int:
        # bool is an int in Python; a judge answering `true` has not given a score.
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParseError(f"score must be an integer from {low} to {high}, got {json.dumps(value)}")
        if not low <= value <= high:
            raise ParseError(f"score {value} is outside the scale {low}-{high}")
        return value

    return validate


def one_of(*allowed: str) -> Validator:
    by_lower = {a.lower(): a for a in allowed}

    def validate(value: Any) -> str:
        if not isinstance(value, str) or value.strip().lower() not in by_lower:
            raise ParseError(f"expected one of {', '.join(allowed)}, got {json.dumps(value)}")
        return by_lower[value.strip().lower()]

    return validate


def text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ParseError(f"expected a non-empty text, got {json.dumps(value)}")
    return value.strip()


JSON_FORM = "the JSON object the instructions ask for, with every field and nothing else"


@dataclass(frozen=True)
class ReplySpec:
    """The reply a prompt asks for. For JSON: its fields in order, a validator for each, and the matching
    schema for servers that enforce structured output. For another form: a parser of its own."""

    name: str
    fields: dict[str, Validator] = field(default_factory=dict)
    schema: dict = field(default_factory=dict)
    # The field the judge must write before its decision (the seed: reasoning before score).
    reasoning_field: str | None = None
    parser: Callable[[str], dict] | None = None
    form: str = JSON_FORM  # how the retry names what to answer with

    def parse(self, reply: str) -> dict:
        if self.parser is not None:
            return self.parser(reply)
        obj = extract_json_object(reply)
        missing = [name for name in self.fields if name not in obj]
        if missing:
            raise ParseError(f"missing {', '.join(missing)} in the reply")
        return {name: validate(obj[name]) for name, validate in self.fields.items()}


def _object_schema(properties: dict) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def score_spec(low: int = 1, high: int = 5) -> ReplySpec:
    """Pointwise: {"reasoning": "...", "score": low-high}."""
    return ReplySpec(
        name="pointwise_score",
        fields={"reasoning": text, "score": integer_in(low, high)},
        schema=_object_schema(
            {"reasoning": {"type": "string"}, "score": {"type": "integer", "minimum": low, "maximum": high}}
        ),
        reasoning_field="reasoning",
    )


PAIRWISE_SPEC = ReplySpec(
    name="pairwise_verdict",
    fields={"reasoning": text, "winner": one_of("1", "2", "tie")},
    schema=_object_schema({"reasoning": {"type": "string"}, "winner": {"type": "string", "enum": ["1", "2", "tie"]}}),
    reasoning_field="reasoning",
)

JUROR_SPEC = ReplySpec(
    name="juror_verdict",
    fields={"reasoning": text, "verdict": one_of("pass", "fail")},
    schema=_object_schema(
        {"reasoning": {"type": "string"}, "verdict": {"type": "string", "enum": ["pass", "fail"]}}
    ),
    reasoning_field="reasoning",
)

AGENT_SPEC = ReplySpec(
    name="agent_verdict",
    fields={"verdict": one_of("met", "not_met"), "evidence": text},
    schema=_object_schema(
        {"verdict": {"type": "string", "enum": ["met", "not_met"]}, "evidence": {"type": "string"}}
    ),
)


# --- The ranker's line form ----------------------------------------------------------------------------

# RE2: with `re`, a reply of many spaces makes these patterns backtrack quadratically (20,000 spaces: 2.6 s
# holding the GIL), and a reply is the judge's to write.
_WINNER_LINE = linear_regex(r"^\s*\**\s*WINNER\s*\**\s*:\s*\**\s*(?P<value>[^\n*]*?)\s*\**\s*$", ignore_case=True, multiline=True)
_RATIONALE_LINE = linear_regex(r"^\s*\**\s*RATIONALE\s*\**\s*:\s*\**(?P<value>.*)", ignore_case=True, multiline=True, dotall=True)


_FENCE_OPENING = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def strip_fenced_blocks(reply: str) -> str:
    """The reply with every fenced block removed: a judge that quotes an artifact inside a fence must not
    have a `WINNER:` line in the quote read as its verdict.

    Fences are read as Markdown reads them, line by line: a block opened by a run of N backticks (or
    tildes) closes only on a line of at least N of them, so an artifact quoted inside a longer fence (as
    the ranker's prompt shows it) stays whole even when it holds fences of its own. A fence that never
    closes is left as text.
    """
    lines = reply.splitlines(keepends=True)
    kept: list[str] = []
    i = 0
    while i < len(lines):
        opening = _FENCE_OPENING.match(lines[i])
        if opening:
            marker = opening.group(1)
            for j in range(i + 1, len(lines)):
                closing = lines[j].strip()
                if len(closing) >= len(marker) and closing == marker[0] * len(closing):
                    i = j + 1
                    break
            else:
                kept.append(lines[i])
                i += 1
            continue
        kept.append(lines[i])
        i += 1
    return "".join(kept)


def parse_winner_rationale(reply: str, allowed: tuple[str, ...] = ("A", "B", "Equal")) -> dict:
    """`WINNER: A | B | Equal` then `RATIONALE: ...`, outside any fenced quote.

    Exactly one WINNER line must be present; a reply with two different verdicts is not a verdict.
    """
    body = strip_fenced_blocks(reply)
    winners = [m.group("value").strip() for m in _WINNER_LINE.finditer(body)]
    if not winners:
        raise ParseError("no 'WINNER:' line in the reply")
    normalised = {one_of(*allowed)(w) for w in winners}
    if len(normalised) > 1:
        raise ParseError(f"conflicting WINNER lines: {', '.join(winners)}")
    rationale_match = _RATIONALE_LINE.search(body)
    if not rationale_match or not rationale_match.group("value").strip():
        raise ParseError("no 'RATIONALE:' in the reply")
    rationale = " ".join(rationale_match.group("value").split())
    return {"winner": normalised.pop(), "rationale": rationale}


WINNER_SPEC = ReplySpec(
    name="ranker_verdict",
    parser=parse_winner_rationale,
    form="the two lines 'WINNER: A | B | Equal' (one of the three) and 'RATIONALE: ...', in that form",
)
