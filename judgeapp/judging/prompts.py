"""The seed prompts, verbatim, and how they are filled in.

The texts live in `judgeapp/prompts/*.md`, copied word for word from the seeds; their content hash is the
prompt's version. Placeholders are `{{name}}`, filled in one pass, so a value that itself contains
`{{...}}` (a customer pasting a template) is never expanded a second time.

A value is written by someone who may want the release to pass, so it cannot close or open the prompt's tags:
`render` escapes every value with `judged_text` — the tags the prompts are made of (`</assistant_reply>`
becomes `&lt;/assistant_reply&gt;`) and, in an attribute, the quote — and the judge sees one opening and one
closing tag per slot. Text the app builds around judged parts (a blind run's `<file path="…">` blocks) escapes
those parts itself and is passed as `PromptMarkup`, which `render` inserts as it is.
"""

import difflib
import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from judgeapp.judging.regexes import linear_regex

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_ATTRIBUTE_PLACEHOLDER = re.compile(r'="\{\{(\w+)\}\}"')
_CLOSING_TAG = re.compile(r"</\s*([A-Za-z_][\w-]*)\s*>")

# The tags of the shipped prompts and of the markup the blind comparator writes inside them
# (tests/judging/test_prompts.py checks this list against the prompt files). A prompt of its own (a calibration
# candidate's) adds the tags it closes.
PROMPT_TAGS = frozenset({
    "rubric", "customer_message", "assistant_reply", "reply_1", "reply_2",  # pointwise, pairwise, juror
    "task", "requirement",  # agent
    "expectations", "version_output", "file", "expectation", "criterion",  # blind
})

# Our own entities, escaped when a text already holds them, so that escaping is exactly reversible.
_ENTITY = linear_regex(r"&(lt|gt|quot|amp);")
_ORIGINAL = {"lt": "<", "gt": ">", "quot": '"', "amp": "&"}


class PromptError(ValueError):
    pass


class PromptMarkup(str):
    """Text for a prompt whose judged parts are escaped already (`judged_text`): `render` inserts it as it is."""


@functools.lru_cache(maxsize=32)
def _tag_pattern(tags: frozenset[str]):
    # `<`, maybe `/`, then one of the tags as a whole word, in any case and spacing (`< /Assistant_Reply >`
    # reads as a closing tag to a model), up to the `>` that ends it. RE2: the text is hostile.
    names = "|".join(re.escape(tag) for tag in sorted(tags))
    return linear_regex(rf"<(\s*/?\s*(?:{names})\b[^<>]*)(>?)", ignore_case=True)


def judged_text(text: str, *, attribute: bool = False, tags: frozenset[str] = PROMPT_TAGS) -> PromptMarkup:
    """`text` as a prompt shows it: every tag of `tags` in it written with `&lt;` and `&gt;`, so it can neither
    close the slot it sits in nor open another; in an attribute value (`attribute`), `"` as `&quot;` too. A
    `&lt;`, `&gt;`, `&quot;` or `&amp;` the text already held gets its `&` as `&amp;`, so that
    `judged_text_original` gives the text back exactly. Everything else — code with `a < b`, HTML of other
    tags — reads as it was written."""
    escaped = _ENTITY.sub(lambda m: f"&amp;{m.group(1)};", text)
    escaped = _tag_pattern(tags).sub(lambda m: f"&lt;{m.group(1)}{'&gt;' if m.group(2) else ''}", escaped)
    if attribute:
        escaped = escaped.replace('"', "&quot;")
    return PromptMarkup(escaped)


def judged_text_original(text: str) -> str:
    """The text `judged_text` escaped, as it was written."""
    return _ENTITY.sub(lambda m: _ORIGINAL[m.group(1)], text)


@dataclass(frozen=True)
class Prompt:
    name: str
    text: str

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def version(self) -> str:
        return self.content_hash[:12]

    @property
    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.text))

    @property
    def tags(self) -> frozenset[str]:
        """The tags this prompt's text closes, with the app's own (PROMPT_TAGS)."""
        return PROMPT_TAGS | {name.lower() for name in _CLOSING_TAG.findall(self.text)}

    def render(self, **values: str) -> str:
        """The prompt with every placeholder filled in, each value escaped with `judged_text` (in an attribute
        value, its quotes too) unless it is PromptMarkup."""
        missing = self.placeholders - values.keys()
        if missing:
            raise PromptError(f"prompt {self.name!r} needs {', '.join(sorted(missing))}")
        tags = self.tags
        in_attribute = set(_ATTRIBUTE_PLACEHOLDER.findall(self.text))

        def fill(match: re.Match) -> str:
            name = match.group(1)
            value = values[name]
            if isinstance(value, PromptMarkup):
                return value
            return judged_text(str(value), attribute=name in in_attribute, tags=tags)

        return _PLACEHOLDER.sub(fill, self.text)


def load_prompt(name: str) -> Prompt:
    path = PROMPTS_DIR / f"{name}.md"
    if not path.exists():
        raise PromptError(f"no prompt named {name!r} in {PROMPTS_DIR}")
    return Prompt(name=name, text=path.read_text(encoding="utf-8"))


def user_message(text: str) -> list[dict]:
    """The prompt as the single user message every judge call sends."""
    return [{"role": "user", "content": text}]


# --- A team's own prompts (the prompt library) ----------------------------------------------------------

# The modes whose prompt a team may replace, and the built-in prompt file each one starts from: a prompt of
# the library must use exactly the slots of its mode's built-in prompt (the run fills those and no others).
LIBRARY_MODES = {"pointwise": "pointwise", "pairwise": "pairwise", "jury": "juror"}
# The field of the verdict each mode reads (judging/parsing.py's specs), which the reply format must ask for
# after "reasoning": a judge that writes its verdict first explains a decision it has already made.
VERDICT_FIELDS = {"pointwise": "score", "pairwise": "winner", "jury": "verdict"}
MAX_PROMPT_CHARS = 20_000
BUILTIN_NAME = "default"
# `{{ rubric }}`, `{{Rubric}}`, `{{input`: anything between double braces that is not a slot as the renderer
# reads it would reach the judge unfilled.
_BRACES = re.compile(r"\{\{[^{}]{0,60}\}\}|\{\{")


def library_prompt(mode: str) -> Prompt:
    """The built-in prompt of a mode of the library (the seed's, read-only)."""
    return load_prompt(LIBRARY_MODES[mode])


def prompt_text_problems(mode: str, text: str) -> list[str]:
    """What keeps `text` from being a prompt of `mode`, one plain line per problem (empty when it can be saved).

    The rules: the text is not empty, at most MAX_PROMPT_CHARS characters, with no NUL; every slot of the mode's
    built-in prompt appears exactly once, written exactly as there (`{{rubric}}`), and no other slot; and the
    reply format names "reasoning" before the verdict's field (`{"reasoning": "...", "score": 1-5}`), so the
    judge explains first and decides after.
    """
    if not text.strip():
        return ["the prompt text is empty"]
    problems = []
    if len(text) > MAX_PROMPT_CHARS:
        problems.append(f"the prompt text is {len(text):,} characters long; at most {MAX_PROMPT_CHARS:,} are allowed")
    if "\x00" in text:
        problems.append("the prompt text holds a NUL character, which is not text")
    builtin = library_prompt(mode).text
    slots = list(dict.fromkeys(_PLACEHOLDER.findall(builtin)))  # in the built-in prompt's order
    written = ", ".join("{{" + s + "}}" for s in slots)
    misspelled = set()
    for match in _BRACES.finditer(text):
        found = _PLACEHOLDER.fullmatch(match.group(0))
        if match.group(0) == "{{":
            problems.append(f"a {{{{ opens no slot (it has no closing }}}}): slots are {written}")
        elif found is None:
            misspelled.add(match.group(0)[2:-2].strip().lower())
            problems.append(f"{match.group(0)[:40]!s} is not a slot as written: slots are {written}, spelled exactly so")
        elif found.group(1) not in slots:
            problems.append(f"{match.group(0)} is not a slot of a {mode} prompt: use only {written}")
    counts = {slot: len(re.findall(r"\{\{" + slot + r"\}\}", text)) for slot in slots}
    for slot, count in counts.items():
        if count == 0 and slot not in misspelled:
            problems.append(f"the prompt text lacks {{{{{slot}}}}}: a {mode} prompt uses every one of {written}")
        elif count > 1:
            problems.append(f"{{{{{slot}}}}} appears {count} times; each slot appears once")
    verdict = VERDICT_FIELDS[mode]
    reasoning_at, verdict_at = text.find('"reasoning"'), text.find(f'"{verdict}"')
    example = " ".join(builtin[builtin.rfind("Respond in JSON"):].split())
    if reasoning_at < 0 or verdict_at < 0:
        missing = " and ".join(f'"{field}"' for field, at in (("reasoning", reasoning_at), (verdict, verdict_at)) if at < 0)
        problems.append(f"the reply format lacks {missing}: end the prompt with the JSON reply, e.g. {example}")
    elif verdict_at < reasoning_at:
        problems.append(f'the reply format asks for "{verdict}" before "reasoning": ask for the reasoning first, e.g. {example}')
    return problems


def prompt_diff(*, old: str, new: str) -> list[tuple[str, str]]:
    """The lines of a unified diff of two prompt texts, each with its kind (`add`, `remove`, `same`, `hunk`);
    the page escapes them like any text."""
    lines = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=3):
        if line.startswith(("---", "+++")):
            continue
        kind = (
            "hunk" if line.startswith("@@") else "add" if line.startswith("+") else "remove" if line.startswith("-")
            else "same"
        )
        lines.append((kind, line))
    return lines
