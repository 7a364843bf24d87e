"""Normalisation: a text as a person reads it (entities and percent-encoding decoded, compatibility forms,
accents and homoglyphs folded, separators as spaces), with every character mapped back to the original."""

from __future__ import annotations

import html
import json
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

# `&#105;`, `&#x69;`, `&amp;`. Numeric entities with or without their `;` (a browser shows `&#67laude` as
# "Claude"); named ones only when closed by `;` (a bare `&not` inside "R&notice" is prose).
_ENCODED = re.compile(r"&(?:#\d{1,7};?|#[xX][0-9A-Fa-f]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};)|(?:%[0-9A-Fa-f]{2})+")
# `*`, `|`, `·` and `•` as well: `s*t*e*p*w*i*s*e`, a name spelt with a separator between every letter.
_SEPARATORS = "-_/.\\*|\u00b7\u2022\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
# Every separator and white-space character becomes a space (same length: no shift); runs of spaces then
# collapse to one, the only step that moves text.
_TO_SPACE = {
    ord(c): " "
    for c in _SEPARATORS + "\t\n\r\f\v\u00a0\u2028\u2029\u3000\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u202f\u205f\x1c\x1d\x1e\x1f\x85"
}
_SPACE_RUN = re.compile(" {2,}")


@lru_cache(maxsize=1)
def _homoglyphs() -> dict[str, str]:
    """Non-ASCII character -> the ASCII letter or digit it imitates (Unicode confusables.txt, as packaged
    by confusable-homoglyphs). Letters win over digits (`О` is an O before it is a 0)."""
    data = json.loads(resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text(encoding="utf-8"))
    table: dict[str, str] = {}
    ascii_letters = [c for c in data if len(c) == 1 and c.isascii() and c.isalpha()]
    ascii_digits = [c for c in data if len(c) == 1 and c.isascii() and c.isdigit()]
    for target in ascii_letters + ascii_digits:
        for glyph in data[target]:
            char = glyph["c"]
            if len(char) == 1 and not char.isascii():
                table.setdefault(char, target)
    return table


@lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    """One non-ASCII character as a reader sees it: compatibility form, no accent, no format character,
    homoglyphs as the Latin letter they imitate."""
    if unicodedata.category(char) == "Cf":
        return ""  # zero-width space, joiners, soft hyphen, bidi controls
    homoglyph = _homoglyphs().get(char)
    if homoglyph:
        return homoglyph
    out = []
    for part in unicodedata.normalize("NFKD", char):
        if unicodedata.category(part) in ("Mn", "Me", "Cf"):
            continue  # accents and other combining marks
        out.append(_homoglyphs().get(part, part))
    return "".join(out)


@dataclass(frozen=True)
class Normalized:
    """A normalised text and the way back to the original: `origin`, for each character, the index of the
    original character it came from (None: the same indexes), or `segments`, (new start, old start) pairs of
    stretches that were copied unchanged (cheap for long texts where only white space shrank); `parent`, the
    text this one was made from."""

    text: str
    origin: list[int] | None = None
    segments: tuple[list[int], list[int]] | None = None
    parent: Normalized | None = None

    def at(self, index: int) -> int:
        if self.segments is not None:
            new_starts, old_starts = self.segments
            k = max(0, bisect_right(new_starts, index) - 1)
            index = old_starts[k] + (index - new_starts[k]) if new_starts else index
        elif self.origin is not None:
            index = self.origin[min(index, len(self.origin) - 1)] if self.origin else 0
        return self.parent.at(index) if self.parent is not None else index


def _compose(outer: list[int] | None, inner: list[int] | None) -> list[int] | None:
    if inner is None:
        return outer
    if outer is None:
        return inner
    return [outer[i] for i in inner]


def _decode_once(text: str) -> Normalized:
    if "&" not in text and "%" not in text:
        return Normalized(text)
    pieces: list[str] = []
    origin: list[int] = []
    last = 0
    changed = False
    for match in _ENCODED.finditer(text):
        raw = match.group(0)
        if raw.startswith("&"):
            decoded = html.unescape(raw)
        else:
            try:
                decoded = bytes.fromhex(raw.replace("%", "")).decode("utf-8")
            except UnicodeDecodeError:
                decoded = raw
        if decoded == raw:
            continue
        changed = True
        pieces.append(text[last : match.start()])
        origin.extend(range(last, match.start()))
        pieces.append(decoded)
        origin.extend([match.start()] * len(decoded))
        last = match.end()
    if not changed:
        return Normalized(text)
    pieces.append(text[last:])
    origin.extend(range(last, len(text)))
    return Normalized("".join(pieces), origin)


def _fold(text: str) -> Normalized:
    if text.isascii():
        return Normalized(text)
    pieces: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if char.isascii():
            pieces.append(char)
            origin.append(index)
            continue
        folded = _fold_char(char)
        pieces.append(folded)
        origin.extend([index] * len(folded))
    return Normalized("".join(pieces), origin)


def fold_text(text: str) -> Normalized:
    """Decoded and folded, case and punctuation kept: what the structural checks read."""
    first = _decode_once(text)
    second = _decode_once(first.text)
    folded = _fold(second.text)
    return Normalized(folded.text, _compose(_compose(first.origin, second.origin), folded.origin))


def compact_text(folded: Normalized) -> Normalized:
    """Lower case, every run of separators and white space one space: what names are matched in."""
    text = folded.text.lower()
    if len(text) != len(folded.text):  # a few characters lower to two; keep the map exact
        text = "".join(c.lower() if len(c.lower()) == 1 else c for c in folded.text)
    text = text.translate(_TO_SPACE)
    pieces: list[str] = []
    new_starts: list[int] = [0]
    old_starts: list[int] = [0]
    last = 0
    size = 0
    for match in _SPACE_RUN.finditer(text):
        pieces.append(text[last : match.start()])
        size += match.start() - last
        # The run becomes one space that maps to the run's start; the text after it maps on from its end.
        new_starts.append(size)
        old_starts.append(match.start())
        pieces.append(" ")
        size += 1
        new_starts.append(size)
        old_starts.append(match.end())
        last = match.end()
    pieces.append(text[last:])
    return Normalized("".join(pieces), segments=(new_starts, old_starts), parent=folded)


def compact(text: str) -> str:
    return compact_text(fold_text(text)).text.strip()


@lru_cache(maxsize=1024)
def name_key(name: str) -> str:
    """A known name's key for its flag: worked out once, not once a match."""
    return compact(name)
