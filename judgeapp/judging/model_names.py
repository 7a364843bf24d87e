"""Model, model-family and assistant names in a text: the list in judgeapp/judging/data/model_names.toml and where
a text holds one (judgeapp/judging/leakage.py flags them). Plain Python, no Django.

One RE2 pattern (linear in the text, whatever it holds) finds every candidate: each name as a whole word,
also with a separator between every letter (`C-l-a-u-d-e`, `G P T - 4 o`), with a version or a suffix after
it (`gpt-4o-mini`, `Gemini 2.5 Flash`, `o3-mini`) or a version before it (`3.7 Sonnet`). Then plain string
work on a few characters around each candidate decides what it is, by the entry's fields: a model name
(with a version that fits), a bare name (in the case it must have, unless the word before or after makes it
something else: `Claude Monet`, `a Gemini`, `the copilot`), or, for names that are ordinary words
(`Sonnet`, `o3`, `Phi`), nothing unless the text names it as a model (`I am Sonnet`, `the o3 model`).
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
_LETTER_SEPARATORS = r"[\s\-_./\\·•*|~+\x{2010}-\x{2015}\x{2212}]"
# Between a name and its version: `gpt-4o`, `Gemini 2.5`, `claude_3`, `GPT‑4` (a non-breaking hyphen).
_VERSION_SEPARATORS = r"[ \t\-_\x{2010}-\x{2015}]"
# A version: a digit, or a letter and a digit (`4o`, `3.5-sonnet`, `r1`, `k2`), and at most 40 more characters, so that
# a match cannot swallow a text.
_DEFAULT_VERSIONS = r"(?:\d|[a-z]\d)(?:[\w.\-]{0,40}\w)?"
MIN_SPACED_LENGTH = 3  # `G P T`; `o 1` is too common
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

    Two RE2 passes. The first finds names: with a version that fits the entry, or a suffix (a model name); after a
    version (`3.7 Sonnet`); spelt with a separator between every letter; or alone, for entries whose bare name
    is a leak, in the case the entry asks for. The second finds the names that are only leaks where the text names
    them as a model (`I am Sonnet`, `OpenAI's o3`, `the o3 model`). The constraints are in the patterns, so that a
    text full of a harmless word (`o3 o3 o3…`, `Sonnet 18`) yields no candidate to look at; what is left to plain
    string work is the word before or after a bare name (`Claude Monet`, `a Gemini`) and a spelt-out version.
    """

    def __init__(self, entries: list[ModelName], *, context_before: list[str], context_after: list[str]):
        self.entries = {entry.key: entry for entry in entries}
        self._longest_key = max((len(key) for key in self.entries), default=0)
        self._versions = {entry.key: linear_regex(entry.versions or _DEFAULT_VERSIONS, ignore_case=True) for entry in entries}
        by_length = sorted(entries, key=lambda e: -len(e.name))
        bare_entries = [e for e in by_length if e.bare]
        context_entries = [e for e in by_length if not e.bare]
        any_case = "|".join(_bare_pattern(e.name) for e in by_length)
        spaced_any = "|".join(_spaced_pattern(e.name) for e in by_length if len(e.key) >= MIN_SPACED_LENGTH)
        models = "|".join(
            f"(?:{_bare_pattern(e.name)}){_VERSION_SEPARATORS}{{0,2}}(?:{_version_pattern(e)})" for e in by_length
        )
        bare = "|".join(
            [_bare_pattern(e.name, e.case) for e in bare_entries]
            + [_spaced_pattern(e.name, e.case) for e in bare_entries if len(e.key) >= MIN_SPACED_LENGTH]
        )
        self.names = linear_regex(
            r"\b(?:"
            rf"(?P<pre>\d\.\d){_VERSION_SEPARATORS}(?P<pname>{any_case})\b"
            rf"|(?P<model>{models})\b"
            rf"|(?P<smodel>{spaced_any})(?P<stail>(?:{_LETTER_SEPARATORS}{{1,3}}[a-z0-9]){{1,12}})\b"
            rf"|(?P<bare>{bare})\b"
            r")",
            ignore_case=True,
        )
        contextual = "|".join(_bare_pattern(e.name, e.case) for e in context_entries) or "[^\\x00-\\x{10FFFF}]"
        before = "|".join(_phrase(w) for w in context_before)
        after = "|".join(_phrase(w) for w in context_after)
        self.named = linear_regex(
            rf"\b(?:(?:{before})[ \t]+(?P<cname>{contextual})|(?P<cname2>{contextual})[ \t]+(?:{after}))\b",
            ignore_case=True,
        )
        # RE2's match objects take group numbers only for start, end and span (and reading a group by its name costs
        # more than the match: numbers keep a text full of names fast).
        groups = self.names.groupindex
        self._pre, self._pname, self._model, self._smodel, self._stail, self._bare = (
            groups["pre"], groups["pname"], groups["model"], groups["smodel"], groups["stail"], groups["bare"])
        self._cname, self._cname2 = self.named.groupindex["cname"], self.named.groupindex["cname2"]

    def finditer(self, text: str) -> list[NameHit]:
        """The names in `text`, in order."""
        # `_` is a word character to RE2's `\b`; a name beside one (`claude_outputs/`) is still a whole word.
        scan = text.replace("_", " ")
        hits = [hit for match in self.names.finditer(scan) if (hit := self._name_hit(scan, match)) is not None]
        starts = [hit.start for hit in hits]
        named = []
        for match in self.named.finditer(scan):
            start, end = match.span(self._cname)
            if start < 0:
                start, end = match.span(self._cname2)
            before = bisect_right(starts, start) - 1
            if before >= 0 and hits[before].end > start:
                continue  # `OpenAI's o3-mini`: already the model name `o3-mini`
            entry = self.entries[squeeze(scan[start:end])]
            named.append(NameHit(start, end, entry.kind, f"{_kind_word(entry.kind)} name, named as a model", entry))
        return sorted(hits + named, key=lambda hit: hit.start) if named else hits

    def _name_hit(self, scan: str, match) -> NameHit | None:
        start, end = match.span(self._model)
        if start >= 0:  # a name with its version or suffix: the pattern has checked they fit
            written = squeeze(scan[start:end])
            for length in range(min(len(written), self._longest_key), 0, -1):
                entry = self.entries.get(written[:length])
                if entry is not None:
                    return NameHit(start, end, MODEL_NAME, "model name", entry)
            return None
        start, end = match.span(self._pre)
        if start >= 0:  # `3.7 Sonnet`
            name_start, name_end = match.span(self._pname)
            entry = self.entries[squeeze(scan[name_start:name_end])]
            if self._versions[entry.key].fullmatch(scan[start:end]):
                return NameHit(start, name_end, MODEL_NAME, "model name", entry)
            return self._bare_hit(scan, entry, name_start, name_end, "") if entry.bare else None
        start, end = match.span(self._smodel)
        if start >= 0:  # `G P T - 4 o`, `C l a u d e`
            entry = self.entries[squeeze(scan[start:end])]
            tail_start, tail_end = match.span(self._stail)
            token = squeeze(scan[tail_start:tail_end])
            if token in entry.suffixes or (
                (token[0].isdigit() or (len(token) > 1 and token[1].isdigit())) and self._versions[entry.key].fullmatch(token)
            ):
                return NameHit(start, tail_end, MODEL_NAME, "model name, letters spaced", entry)
            return self._bare_hit(scan, entry, start, end, ", letters spaced") if entry.bare else None
        start, end = match.span(self._bare)
        written = scan[start:end]
        entry = self.entries.get(written.lower()) or self.entries[squeeze(written)]
        spaced = len(entry.key) >= MIN_SPACED_LENGTH and sum(not c.isalnum() for c in written) >= len(entry.key) - 1
        return self._bare_hit(scan, entry, start, end, ", letters spaced" if spaced else "")

    def _bare_hit(self, text: str, entry: ModelName, start: int, end: int, how: str) -> NameHit | None:
        """The name alone: flagged in the case it must have, unless a neighbouring word makes it another thing."""
        if entry.case != "any":
            letters = "".join(c for c in text[start:end] if c.isalnum())
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
        return NameHit(start, end, entry.kind, f"{_kind_word(entry.kind)} name{how}", entry)


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
    """Context words as a pattern: any white space between them, either apostrophe (`I’m`)."""
    return "".join("[ \\t]+" if c == " " else "['’]" if c in "'’" else _literal(c) for c in words.lower())


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
