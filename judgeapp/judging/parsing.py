"""Reply parsing shared by every mode.

Judges answer in one of two forms: the ranker's `WINNER:` / `RATIONALE:` lines, or a JSON object, which
models wrap in code fences or put after a sentence of their own. The verdict is the judge's own:

- with structured output (the server was sent the verdict's schema) the whole reply must be the object;
- without it, the verdict is the last complete JSON object in the reply that has every field the prompt asks
  for (a fenced block at the end is such an object); a judge that quotes the judged text first and answers
  after it is read by its answer;
- a verdict object that appears verbatim in the judged text (`echoed`) is not the judge's: a ParseError,
  `echoed judged content`.

Then every field is validated strictly: a score must be a JSON integer on the rubric's scale (not "4", not
4.5), a winner one of the allowed values. Anything else is a ParseError, which the judge client answers
with one retry and then records.
"""

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from judgeapp.judging.jsonscan import json_objects
from judgeapp.judging.prompts import judged_text_original
from judgeapp.judging.regexes import linear_regex

ECHOED = "echoed judged content"


class ParseError(ValueError):
    """The reply does not have the required form. The message says what was wrong, in one line."""


def verdict_object(reply: str, *, fields: Sequence[str] = (), judged: Sequence[str] = (), whole: bool = False) -> dict:
    """The judge's verdict object in a reply; ParseError when there is none, or when it is echoed.

    `whole`: the judge was asked for structured output, so the reply must be the object and nothing else
    (whitespace around it aside). Otherwise the verdict is the last complete JSON object that has every one
    of `fields` (nested objects count; of an object and one inside it, the outer one ends last). `judged`:
    the texts the judge was asked to judge, as they were before the prompt escaped them.
    """
    stripped = reply.strip()
    if not stripped:
        raise ParseError("empty reply")
    objects = json_objects(reply)
    if whole:
        start = len(reply) - len(reply.lstrip())
        verdict = next((o for o in objects if o.start == start and o.end == start + len(stripped)), None)
        if verdict is None:
            raise ParseError(
                "the reply must be the JSON object alone (structured output), with no text around it"
                if objects else "the reply is not a JSON object (structured output)"
            )
    else:
        if not objects:
            raise ParseError("no JSON object in the reply")
        fitting = [o for o in objects if all(name in o.value for name in fields)]
        verdict = fitting[-1] if fitting else objects[-1]
    if judged and echoed(reply[verdict.start:verdict.end], verdict.value, judged):
        raise ParseError(ECHOED)
    return verdict.value


def _squeezed(text: str) -> str:
    return "".join(text.split())


def echoed(raw: str, value: dict, judged: Sequence[str]) -> bool:
    """Whether a verdict object appears verbatim in a judged text.

    Verbatim: with every whitespace character removed from both, a judged text contains the object as the
    judge wrote it, as it read in the prompt (the judge copying `&lt;` where the text had `<`), or as compact
    JSON; or a JSON object in a judged text is equal to it (the same keys and values, in any order, spacing
    or escaping).
    """
    forms = {_squeezed(raw), _squeezed(judged_text_original(raw)), _squeezed(json.dumps(value, ensure_ascii=False))}
    for text in judged:
        haystack = _squeezed(text)
        if any(form in haystack for form in forms):
            return True
        if any(found.value == value for found in json_objects(text)):
            return True
    return False


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

    def parse(self, reply: str, *, judged: Sequence[str] = (), whole: bool = False) -> dict:
        """The validated fields of the judge's verdict (`verdict_object`). A parser of another form (the
        ranker's lines) reads the reply alone: its own rule keeps quoted text out of the verdict."""
        if self.parser is not None:
            return self.parser(reply)
        obj = verdict_object(reply, fields=list(self.fields), judged=judged, whole=whole)
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
