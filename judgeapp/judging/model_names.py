"""Model, model-family and assistant names in a text: the list in judgeapp/judging/data/model_names.toml and where
a text holds one (judgeapp/judging/leakage/ flags them). Plain Python, no Django.

RE2 (linear in the text, whatever it holds) finds the candidates: each name as a whole word, also with a
separator between every letter (`C-l-a-u-d-e`, `G P T - 4 o`), with a version or a suffix after it
(`gpt-4o-mini`, `Gemini 2.5 Flash`, `o3-mini`) or a version before it (`3.7 Sonnet`). Plain string work on a few
characters around each candidate then decides what it is, by the entry's fields: a model name (with a version
that fits), a bare name (in the case it must have, unless the word before or after makes it something else:
`Claude Monet`, `a Gemini`, `the copilot`), or, for names that are ordinary words (`Sonnet`, `o3`, `Phi`),
nothing unless the text names it as a model (`I am Sonnet`, `the o3 model`).
"""

from __future__ import annotations

import tomllib
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from judgeapp.judging.regexes import linear_regex

NAMES_FILE = "data/model_names.toml"
PROVIDER_NAME = "provider_name"
MODEL_NAME = "model_name"

# Between the letters of a name spelt out (`C-l-a-u-d-e`, `c.l.a.u.d.e`, `G*e*m*i*n*i`): one to three of these.
_LETTER_SEPARATORS = r"[\s\-_./\\*|~+]"
# Between a name and its version: `gpt-4o`, `Gemini 2.5`, `claude_3`, `GPT‑4` (a non-breaking hyphen).
_VERSION_SEPARATORS = r"[ \t\-_]"
# A version: a digit, or a letter and a digit (`4o`, `3.5-sonnet`, `r1`, `k2`), and at most 40 more characters, so that
# a match cannot swallow a text.
_DEFAULT_VERSIONS = r"(?:\d|[a-z]\d)(?:[\w.\-]{0,40}\w)?"
MIN_SPACED_LENGTH = 3  # `G P T`; `o 1` is too common
# The view the patterns read: `_` is a word character to RE2's `\b`, so it becomes a space (`claude_outputs/` holds a
# whole word); the separators and apostrophes outside ASCII become their ASCII kin (`C·l·a·u·d·e`, `I’m`).
_ASCII_VIEW = str.maketrans({"_": " ", "\u00b7": ".", "\u2022": "*", "\u2019": "'", "\u2212": "-",
                             **{chr(c): "-" for c in range(0x2010, 0x2016)}})
_WORD_WINDOW = 40  # how far before and after a name its neighbouring words are looked for


@dataclass(frozen=True)
class ModelName:
    """One entry of the names file (its header says what each field means)."""

    name: str
    kind: str = PROVIDER_NAME
    case: str = "any"
    bare: bool = True
    versions: str = ""
    suffixes: frozenset[str] = frozenset()
    not_before: frozenset[str] = frozenset()
    not_after: frozenset[str] = frozenset()
    key: str = ""  # the name squeezed (`openai`), set from the name

    def __post_init__(self):
        object.__setattr__(self, "key", squeeze(self.name))


@dataclass(frozen=True)
class NameHit:
    start: int
    end: int
    kind: str  # PROVIDER_NAME or MODEL_NAME
    rule: str  # "provider name", "model name", "model name, letters spaced", "model name, named as a model"…
    entry: ModelName


def squeeze(text: str) -> str:
    """Letters and digits only, in lower case: `C-l-a-u-d-e` and `Claude` are both `claude`."""
    return "".join(c for c in text if c.isalnum()).lower()


def _as_entry(raw: dict) -> ModelName:
    unknown = set(raw) - {"name", "kind", "case", "bare", "versions", "suffixes", "not_before", "not_after"}
    if unknown or raw.get("kind", PROVIDER_NAME) not in (PROVIDER_NAME, MODEL_NAME) or raw.get("case", "any") not in (
        "any", "capitalised", "exact", "lower"
    ):
        raise ValueError(f"{NAMES_FILE}: bad entry {raw!r}")
    return ModelName(
        name=raw["name"], kind=raw.get("kind", PROVIDER_NAME), case=raw.get("case", "any"), bare=raw.get("bare", True),
        versions=raw.get("versions", ""),
        suffixes=frozenset(s.lower() for s in raw.get("suffixes", ())),
        not_before=frozenset(w.lower() for w in raw.get("not_before", ())),
        not_after=frozenset(w.lower() for w in raw.get("not_after", ())),
    )


class ModelNameFinder:
    """Every model, family or assistant name in a text, by the entries given (the names file by default).

    A few RE2 passes, each small (one big pattern costs RE2 several times more for every match): names with a
    version that fits the entry or a suffix (model names: `gpt-4o-mini`, `Mistral Large`); names after a version
    (`3.7 Sonnet`); names spelt with a separator between every letter and a version (`G P T - 4 o`); bare names,
    for entries whose bare name is a leak, in the case the entry asks for, plain or spelt out; and the names that
    are only leaks where the text names them as a model (`I am Sonnet`, `OpenAI's o3`, `the o3 model`). A hit
    inside a model name is dropped. The constraints are in the patterns, so that a text full of a harmless word
    (`o3 o3 o3…`, `Sonnet 18`) yields nothing to look at; what is left to plain string work is the word before or
    after a bare name (`Claude Monet`, `a Gemini`) and a spelt-out version.
    """

    def __init__(self, entries: list[ModelName], *, context_before: list[str], context_after: list[str]):
        self.entries = {entry.key: entry for entry in entries}
        self._longest_key = max((len(key) for key in self.entries), default=0)
        self._versions = {entry.key: linear_regex(entry.versions or _DEFAULT_VERSIONS, ignore_case=True) for entry in entries}
        by_length = sorted(entries, key=lambda e: -len(e.name))
        any_case = "|".join(_bare_pattern(e.name) for e in by_length)
        spaced_any = "|".join(_spaced_pattern(e.name) for e in by_length if len(e.key) >= MIN_SPACED_LENGTH)
        models = "|".join(f"{_bare_pattern(e.name)}{_VERSION_SEPARATORS}{{0,2}}(?:{_version_pattern(e)})" for e in by_length)
        bare_entries = [e for e in by_length if e.bare]
        bare = "|".join(
            [_bare_pattern(e.name, e.case) for e in bare_entries]
            + [_spaced_pattern(e.name, e.case) for e in bare_entries if len(e.key) >= MIN_SPACED_LENGTH]
        )
        contextual = "|".join(_bare_pattern(e.name, e.case) for e in by_length if not e.bare) or "[^\\x00-\\x{10FFFF}]"
        self._models = linear_regex(rf"\b(?:{models})\b", ignore_case=True)
        self._after_version = linear_regex(rf"\b\d\.\d{_VERSION_SEPARATORS}(?:{any_case})\b", ignore_case=True)
        self._spaced_models = linear_regex(
            rf"\b(?:{spaced_any})(?:{_LETTER_SEPARATORS}{{1,3}}[a-z0-9]){{1,12}}\b", ignore_case=True
        )
        self._bare = linear_regex(rf"\b(?:{bare})\b", ignore_case=True)
        before = "|".join(_phrase(w) for w in context_before)
        after = "|".join(_phrase(w) for w in context_after)
        self._named = linear_regex(
            rf"\b(?:(?:{before})[ \t]+({contextual})|({contextual})[ \t]+(?:{after}))\b", ignore_case=True,
        )

    def finditer(self, text: str) -> list[NameHit]:
        """The names in `text`, in order."""
        scan = text.translate(_ASCII_VIEW)
        # RE2 runs on bytes of the same length as the text (every other character a `?`): names are ASCII, and the
        # match positions need no translating back (translating them costs more than the match).
        data = scan.encode("ascii", "replace")
        models = [hit for match in self._models.finditer(data) if (hit := self._model_hit(scan, *match.span())) is not None]
        models += [hit for match in self._after_version.finditer(data) if (hit := self._after_version_hit(scan, *match.span()))]
        models += [
            hit for match in self._spaced_models.finditer(data) if (hit := self._model_hit(scan, *match.span(), spaced=True))
        ]
        hits = _Spans()
        for hit in sorted(models, key=lambda hit: hit.start):
            hits.add(hit)
        for match in self._bare.finditer(data):
            start, end = match.span()
            if not hits.overlaps(start, end) and (hit := self._bare_hit(scan, start, end)) is not None:
                hits.add(hit)
        for match in self._named.finditer(data):
            start, end = match.span(1)
            if start < 0:
                start, end = match.span(2)
            if not hits.overlaps(start, end):
                entry = self.entries[squeeze(scan[start:end])]
                hits.add(NameHit(start, end, entry.kind, f"{_kind_word(entry.kind)} name, named as a model", entry))
        return hits.in_order()

    def _split(self, written: str) -> tuple[ModelName | None, int]:
        """The entry whose name `written` starts with, and where the name ends in it (`G P T - 4 o`: gpt, 5)."""
        letters = squeeze(written)
        for length in range(min(len(letters), self._longest_key), 0, -1):
            entry = self.entries.get(letters[:length])
            if entry is not None:
                seen = 0
                for index, char in enumerate(written):
                    seen += char.isalnum()
                    if seen == length:
                        return entry, index + 1
        return None, 0

    def _model_hit(self, scan: str, start: int, end: int, *, spaced: bool = False) -> NameHit | None:
        """A name and its version or suffix (the pattern has checked they fit, but for a name spelt out)."""
        written = scan[start:end]
        entry, name_end = self._split(written)
        if entry is None:
            return None
        if spaced:
            token = squeeze(written[name_end:])
            fits = token in entry.suffixes or (
                (token[0].isdigit() or (len(token) > 1 and token[1].isdigit())) and self._versions[entry.key].fullmatch(token)
            )
            if not fits:
                return None  # a bare name spelt out, for the bare pass
        return NameHit(start, end, MODEL_NAME, "model name, letters spaced" if spaced else "model name", entry)

    def _after_version_hit(self, scan: str, start: int, end: int) -> NameHit | None:
        """`3.7 Sonnet`: a model name if the version fits the name."""
        entry = self.entries[squeeze(scan[start + 4 : end])]
        return (
            NameHit(start, end, MODEL_NAME, "model name", entry) if self._versions[entry.key].fullmatch(scan[start : start + 3])
            else None
        )

    def _bare_hit(self, text: str, start: int, end: int) -> NameHit | None:
        """The name alone: flagged in the case it must have, unless a neighbouring word makes it another thing."""
        written = text[start:end]
        entry = self.entries.get(written.lower()) or self.entries[squeeze(written)]
        letters = written if written.isalnum() else "".join(c for c in written if c.isalnum())
        if entry.case == "capitalised" and not letters[:1].isupper():
            return None
        if entry.case == "exact" and letters != "".join(c for c in entry.name if c.isalnum()):
            return None
        if entry.case == "lower" and letters != letters.lower():
            return None
        if entry.not_before and _word_after(text, end) in entry.not_before:
            return None
        if entry.not_after and _word_before(text, start) in entry.not_after:
            return None
        spaced = len(letters) >= MIN_SPACED_LENGTH and len(written) - len(letters) >= len(letters) - 1
        return NameHit(start, end, entry.kind, f"{_kind_word(entry.kind)} name{', letters spaced' if spaced else ''}", entry)


class _Spans:
    """Hits that do not overlap, kept in order of their start."""

    def __init__(self):
        self._starts: list[int] = []
        self._hits: list[NameHit] = []

    def overlaps(self, start: int, end: int) -> bool:
        index = bisect_right(self._starts, start)
        return (index > 0 and self._hits[index - 1].end > start) or (index < len(self._hits) and self._hits[index].start < end)

    def add(self, hit: NameHit) -> None:
        if self.overlaps(hit.start, hit.end):
            return
        index = bisect_right(self._starts, hit.start)
        if index == len(self._starts):  # the usual case: in order
            self._starts.append(hit.start)
            self._hits.append(hit)
        else:
            self._starts.insert(index, hit.start)
            self._hits.insert(index, hit)

    def in_order(self) -> list[NameHit]:
        return self._hits


def _kind_word(kind: str) -> str:
    return "provider" if kind == PROVIDER_NAME else "model"


def _version_pattern(entry: ModelName) -> str:
    """What may follow the name to make it a model name: its versions (whole: `Sonnet 18` is not `Sonnet 1`)
    or one of its suffixes (`Mistral Large`, `o4-mini`, `gpt-oss-120b`)."""
    alternatives = [f"(?:{entry.versions})" if entry.versions else _DEFAULT_VERSIONS]
    if entry.suffixes:
        words = "|".join(_literal(s) for s in sorted(entry.suffixes, key=len, reverse=True))
        alternatives.append(rf"(?:{words})(?:[\-.][\w.\-]{{0,40}}\w)?")
    return "|".join(alternatives)


def _case_letter(letter: str, case: str, first: bool) -> str:
    if case == "exact" or case == "lower" or (case == "capitalised" and first and letter.isalpha()):
        literal = letter.lower() if case == "lower" else letter.upper() if case == "capitalised" else letter
        return f"(?-i:{_literal(literal)})"
    return _literal(letter.lower())


def _bare_pattern(name: str, case: str = "any") -> str:
    """`Open AI` as written, run together, or with `-` or `_` for the space; in the case asked for."""
    parts = name.split(" ")
    rendered = []
    for index, part in enumerate(parts):
        rendered.append("".join(_case_letter(c, case, index == 0 and i == 0) for i, c in enumerate(part)))
    return r"[ \t_\-]?".join(rendered)


def _spaced_pattern(name: str, case: str = "any") -> str:
    """A separator between every letter: `c-l-a-u-d-e`, `G P T`; in the case asked for."""
    letters = [c for c in name if c.isalnum()]
    return f"{_LETTER_SEPARATORS}{{1,3}}".join(_case_letter(c, case, i == 0) for i, c in enumerate(letters))


def _literal(text: str) -> str:
    return "".join(c if c.isalnum() else "\\" + c for c in text)


def _phrase(words: str) -> str:
    """Context words as a pattern, any white space between them (the view has `’` as `'`)."""
    return "".join("[ \\t]+" if c == " " else _literal(c) for c in words.lower().replace("\u2019", "'"))


def _normal_word(word: str) -> str:
    return word.replace("\u2019", "'").lower()


def _word_before(text: str, start: int) -> str:
    """The word just before `start` (lower case); none across a sentence's punctuation."""
    window = text[max(0, start - _WORD_WINDOW) : start].split()
    if not window:
        return ""
    word = window[-1].strip("\"'`*_()[]")
    return _normal_word(word) if word and all(c.isalnum() or c in "'\u2019" for c in word) else ""


def _word_after(text: str, end: int) -> str:
    """The word after `end` (lower case), over spaces, hyphens and underscores but not a sentence's punctuation."""
    window = text[end : end + _WORD_WINDOW].lstrip(" \t\n-_\u2010\u2011")
    word = []
    for c in window:
        if not (c.isalpha() or c in "'\u2019"):
            break
        word.append(c)
    return _normal_word("".join(word))


@lru_cache(maxsize=1)
def default_finder() -> ModelNameFinder:
    """The finder for the names file (read once)."""
    data = tomllib.loads(resources.files("judgeapp.judging").joinpath(NAMES_FILE).read_text(encoding="utf-8"))
    context = data.get("context", {})
    return ModelNameFinder([_as_entry(raw) for raw in data["name"]], context_before=context.get("before", []),
                           context_after=context.get("after", []))
