"""Names: the names a version is known by (its real name, its path's parts, its mapping), and the matcher that
finds them in a normalised text, spelt apart, squeezed together or reversed."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import permutations

from judgeapp.judging.leakage.normalize import Normalized, compact


@dataclass(frozen=True)
class KnownName:
    """A name that identifies a configuration: `what` says where it comes from ("configured system"),
    `rule` how it was derived ("version name", "parent directory", "partial name")."""

    text: str
    what: str
    rule: str = "known name"


# Names too generic to mean an identity: matching them would stop every comparison.
GENERIC_NAMES = {
    "default", "baseline", "judge", "judges", "system", "systems", "model", "models", "test", "tests", "demo",
    "main", "output", "outputs", "result", "results", "run", "runs", "version", "versions", "data", "final",
    "draft", "new", "old", "current", "latest", "candidate", "candidates", "control", "treatment", "temp", "tmp",
    "inbox", "blind", "blinded", "sanitized", "eval", "evals", "files", "file", "work", "workspace", "home",
    "users", "user", "out", "src", "root", "var", "opt", "usr", "srv", "mnt", "private", "dir", "docs", "the",
    "and", "for", "with", "without", "from", "into", "this", "that", "answer", "answers", "reply", "replies",
    "text", "texts", "notes", "report", "reports", "example", "examples", "sample", "samples", "copy",
}
MIN_NAME_LENGTH = 2  # `v2` is a name; a single letter (`a`, `b`) is not
MIN_SQUEEZED_LENGTH = 8  # a name matched with its separators dropped (`support-bot-\nv2` hyphenated apart)
MIN_REVERSED_LENGTH = 6
MIN_PARTIAL_LENGTH = 4
MIN_SPACED_LENGTH = 3  # `s t e p w i s e`; two letters spaced (`a b`) are too common, but `v 2` counts


def name_tokens(name: str) -> list[str]:
    return [t for t in compact(name).split(" ") if t]


def usable_name(name: str) -> bool:
    """A name worth searching: two characters or more, not a number, not only generic words or letters."""
    tokens = name_tokens(name)
    squeezed = "".join(tokens)
    if len(squeezed) < MIN_NAME_LENGTH or squeezed.isdigit():
        return False
    return not all(t in GENERIC_NAMES or len(t) < 2 or t.isdigit() for t in tokens)


def _partial_ok(token: str, excluded: set[str]) -> bool:
    if token in GENERIC_NAMES or token in excluded or token.isdigit():
        return False
    has_digit = any(c.isdigit() for c in token)
    return len(token) >= MIN_PARTIAL_LENGTH or (has_digit and len(token) >= 2)


def _path_parts(real_name: str) -> list[str]:
    parts = [p for p in re.split(r"[\\/]+", real_name.strip()) if p and p not in (".", "..")]
    if parts and re.fullmatch(r"[A-Za-z]:", parts[0]):
        parts = parts[1:]
    return parts


def version_names(real_names: Iterable[str], *, context: Iterable[str] = ()) -> list[KnownName]:
    """The names each version's real name contributes: the name as given, its trailing paths
    (`out/acme/stepwise` gives `acme/stepwise` and `stepwise`), its parent directories, and its
    distinctive words (partial names: `stepwise` of `runbook-stepwise`).

    A parent or a word that every version shares (`out`, `runbook`), or that the task itself uses (the
    `context`: the eval prompt, the expectations), names no version and is not searched."""
    real_names = [n for n in real_names if n and n.strip()]
    context_words = set(compact(" ".join(context)).split(" ")) if context else set()
    derived: dict[str, list[tuple[str, str]]] = {}
    for real_name in real_names:
        parts = _path_parts(real_name)
        entries = [(real_name.strip(), "version name")]
        tail = parts[-3:]
        for start in range(1, len(tail)):
            entries.append(("/".join(tail[start:]), "version directory" if start == len(tail) - 1 else "version path"))
        if len(parts) == 1:
            entries.append((parts[0], "version directory"))
        for parent in parts[-3:-1]:
            entries.append((parent, "parent directory"))
        for component in parts[-3:]:
            for token in name_tokens(component):
                entries.append((token, "partial name"))
        derived[real_name] = entries
    # What every version has in common identifies none of them.
    def keys(name: str) -> set[str]:
        return {compact(text) for text, _ in derived[name]}

    shared = set.intersection(*(keys(n) for n in real_names)) if len(real_names) > 1 else set()
    names: list[KnownName] = []
    for real_name, entries in derived.items():
        for text, rule in entries:
            key = compact(text)
            if rule == "partial name":
                if not _partial_ok(key, shared | context_words):
                    continue
            elif rule != "version name" and (key in shared or not usable_name(text)):
                continue
            elif rule == "version name" and not usable_name(text):
                continue
            what = {"parent directory": "parent directory of a version", "partial name": "part of a version's name"}.get(
                rule, "version name (the mapping)")
            names.append(KnownName(text, what, rule))
    return names


@dataclass
class _NameRule:
    name: KnownName
    rule: str
    regex: re.Pattern | None = None  # on the compact text
    squeezed: str = ""  # on the compact text without its spaces
    spaced: str = ""  # on the compact text, as it is
    needles: tuple[str, ...] = ()  # words the text must hold for the regex to run


class NameMatcher:
    """Every known name in a text, and which one matched, by four rules:

    - whole token: the name's words in order, any separators between them, not inside a longer word;
    - squeezed: for names of 8 letters or more, the name with its separators dropped, found in the text
      with its separators dropped (`sup-\\nport bot v2`), starting and ending on a word's edge;
    - reordered: the words of a name of two or three words in another order (`stepwise acme`);
    - reversed: a name of 6 letters or more spelt backwards (`2v-tob-troppus`);
    - letters spaced: a separator between every letter (`s-t-e-p-w-i-s-e`, `A.C.M.E.`, and for `v2`: `v 2`, `V_2`,
      `v.2`, `V-2`), for names of 3 characters or more, or of 2 with a digit.
    """

    def __init__(self, names: Iterable[KnownName]):
        unique: dict[str, KnownName] = {}
        for name in names:
            key = " ".join(name_tokens(name.text))
            if key and (usable_name(name.text) or name.rule == "partial name"):
                unique.setdefault(key, name)
        # Longest first, so that `support-bot-v2` is reported rather than `support-bot` inside it.
        self.rules: list[_NameRule] = []
        for key, name in sorted(unique.items(), key=lambda kv: -len(kv[0])):
            tokens = key.split(" ")
            squeezed = key.replace(" ", "")
            self.rules.append(_NameRule(name, "whole token", regex=_token_regex(tokens), needles=tuple(tokens)))
            if len(squeezed) >= MIN_SQUEEZED_LENGTH and len(tokens) > 1:
                self.rules.append(_NameRule(name, "separators dropped", squeezed=squeezed))
            if 2 <= len(tokens) <= 3 and all(len(t) >= 3 and t not in GENERIC_NAMES for t in tokens):
                orders = [list(p) for p in permutations(tokens) if list(p) != tokens]
                self.rules.append(_NameRule(name, "words reordered",
                                            regex=re.compile("|".join(_token_regex(o).pattern for o in orders)),
                                            needles=tuple(tokens)))
            if len(squeezed) >= MIN_REVERSED_LENGTH and squeezed[::-1] != squeezed:
                self.rules.append(_NameRule(name, "spelt backwards", squeezed=squeezed[::-1]))
            if len(squeezed) >= MIN_SPACED_LENGTH or (len(squeezed) >= 2 and any(c.isdigit() for c in squeezed)):
                self.rules.append(_NameRule(name, "letters spaced", spaced=" ".join(squeezed)))

    def finditer(self, compact_view: Normalized):
        """(start, end, KnownName, rule) in the compact text, longest names first, no overlaps."""
        text = compact_view.text
        squeezed_text = text.replace(" ", "")
        squeezed_origin = None
        # The characters already inside a reported name: a mask, so that checking a match costs its length, not the
        # number of names found before it (a long text full of one name would make that quadratic).
        taken = bytearray(len(text))
        for rule in self.rules:
            spans: list[tuple[int, int]] = []
            if rule.regex is not None:
                # A cheap substring test first: most texts hold none of a name's words.
                if all(token in text for token in rule.needles):
                    spans = [m.span() for m in rule.regex.finditer(text)]
            elif rule.squeezed and rule.squeezed in squeezed_text:
                if squeezed_origin is None:
                    squeezed_origin = [i for i, c in enumerate(text) if c != " "]
                start = squeezed_text.find(rule.squeezed)
                while start >= 0:
                    first, last = squeezed_origin[start], squeezed_origin[start + len(rule.squeezed) - 1]
                    before = text[first - 1] if first > 0 else " "
                    after = text[last + 1] if last + 1 < len(text) else " "
                    if not before.isalnum() and not after.isalnum():
                        spans.append((first, last + 1))
                    start = squeezed_text.find(rule.squeezed, start + 1)
            elif rule.spaced:
                start = text.find(rule.spaced)
                while start >= 0:
                    end = start + len(rule.spaced)
                    if (start == 0 or not text[start - 1].isalnum()) and (end == len(text) or not text[end].isalnum()):
                        spans.append((start, end))
                    start = text.find(rule.spaced, end)
            for start, end in spans:
                if 1 in taken[start:end]:
                    continue  # inside a longer name already reported
                taken[start:end] = b"\x01" * (end - start)
                yield start, end, rule.name, rule.rule


def _token_regex(tokens: list[str]) -> re.Pattern:
    return re.compile(r"(?<![^\W_])" + " ?".join(re.escape(t) for t in tokens) + r"(?![^\W_])")
