"""Every JSON object in a text someone else wrote, found in time linear in the text.

A judge's reply (and a judged text) may be megabytes long, nest thousands of levels deep, or wrap the object it
means in prose full of stray braces and quotes. `scan_json_objects` finds every substring that is a JSON
object — a `{` … `}` that `json.loads` reads as a dict — without trying each `{` against the rest of the text:

- a value is read from a `{` with an explicit stack, no recursion; a value nested more than MAX_DEPTH levels
  ends the reading there (the objects still open around it are not read);
- an object nested inside one being read is recorded when the reading closes it, and its `{` is never read
  from again: read alone it would see the same characters and end at the same place, or fail where the
  outer reading failed;
- a `{` that an earlier reading saw inside a string is read from again, since it may open an object of its own
  (`{"note": "see {"score": 1}`). While two readings overlap, each sees every quote the other way round — what is
  inside a string for one is outside for the other, and a backslash outside a string ends a reading — so no
  character is read by more than two readings, besides the `{` a reading stopped at, which the next reading
  starts from: `JsonScan.chars_read` is at most three times the text's length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from json.decoder import JSONDecodeError, scanstring

MAX_DEPTH = 64

# Python's `re`, not RE2, because each token is matched at one position (`match(text, pos)`) and RE2's binding
# encodes the whole text again on every call, which would make a reading quadratic. None of these patterns
# can backtrack beyond the run of characters it is reading: no nested quantifier, and the alternatives
# begin with different characters.
_START = re.compile(r'\{[ \t\n\r]*["}]')  # a `{` that can begin an object: a key or `}` comes next
_TOKEN = re.compile(
    r'[ \t\n\r]*(?:([{}\[\],:])|(")|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)|(true|false|null))'
)
_PUNCT, _STRING, _NUMBER, _LITERAL = 1, 2, 3, 4
_LITERALS = {"true": True, "false": False, "null": None}

# What a reading expects next.
_KEY_OR_CLOSE, _KEY, _COLON, _VALUE, _VALUE_OR_CLOSE, _COMMA_OR_CLOSE = range(6)


@dataclass(frozen=True)
class FoundObject:
    start: int  # the `{`
    end: int  # just after the `}`
    value: dict


@dataclass(frozen=True)
class JsonScan:
    objects: list[FoundObject]  # in the order they end
    chars_read: int  # the characters all readings went through, together: at most 3 x the text's length


def json_objects(text: str) -> list[FoundObject]:
    """Every JSON object in `text`, nested ones included, in the order they end."""
    return scan_json_objects(text).objects


def scan_json_objects(text: str) -> JsonScan:
    found: list[FoundObject] = []
    opened: set[int] = set()  # every `{` a reading opened as an object: its outcome is known
    chars_read = 0
    for start in _START.finditer(text):
        position = start.start()
        if position not in opened:
            chars_read += _read(text, position, found, opened) - position
    found.sort(key=lambda o: o.end)
    return JsonScan(found, chars_read)


def _read(text: str, start: int, found: list, opened: set) -> int:
    """Read one JSON value from the `{` at `start` (where `_START` matched), recording every object it closes;
    return how far it read."""
    match_token = _TOKEN.match
    reading = _Reading(start, found, opened)
    position = start + 1
    while True:
        match = match_token(text, position)
        if match is None:
            return position
        position = match.end()
        kind = match.lastindex
        if kind == _STRING:
            try:
                value, position = scanstring(text, position, True)
            except JSONDecodeError as exc:
                # An unterminated string was searched to the end of the text; another error stops where it is.
                return len(text) if exc.msg.startswith("Unterminated") else max(position, exc.pos + 1)
            going = reading.string(value)
        elif kind == _PUNCT:
            going = reading.punctuation(match.group(1), position)
        else:
            going = reading.scalar(kind, match.group(kind))
        if not going:
            return position


class _Reading:
    """The containers one reading has open and what it expects next. Each step takes one token and says
    whether the reading goes on: it stops at a token that cannot come next, past MAX_DEPTH, or when the
    container it began with closes."""

    __slots__ = ("found", "opened", "outer", "container", "is_object", "key", "opened_at", "state")

    def __init__(self, start: int, found: list, opened: set) -> None:
        self.found, self.opened = found, opened
        self.outer: list[tuple] = []  # the containers open around the current one: (value, is_object, key, opened at)
        # The current container, opened by the `{` at `start`.
        self.container: dict | list = {}
        self.is_object, self.key, self.opened_at = True, None, start
        opened.add(start)
        self.state = _KEY_OR_CLOSE

    def string(self, value: str) -> bool:
        if self.state <= _KEY:  # _KEY_OR_CLOSE or _KEY
            self.key = value
            self.state = _COLON
            return True
        if self.state != _VALUE and self.state != _VALUE_OR_CLOSE:
            return False
        return self._complete(value)

    def scalar(self, kind: int, token: str) -> bool:
        if self.state != _VALUE and self.state != _VALUE_OR_CLOSE:
            return False
        if kind == _LITERAL:
            value = _LITERALS[token]
        elif "." in token or "e" in token or "E" in token:
            value = float(token)
        else:
            try:
                value = int(token)
            except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
                return False
        return self._complete(value)

    def punctuation(self, char: str, position: int) -> bool:
        """`position` is just after the character."""
        state = self.state
        if char == ",":
            if state != _COMMA_OR_CLOSE:
                return False
            self.state = _KEY if self.is_object else _VALUE
            return True
        if char == ":":
            if state != _COLON:
                return False
            self.state = _VALUE
            return True
        if char == "{" or char == "[":
            if (state != _VALUE and state != _VALUE_OR_CLOSE) or len(self.outer) >= MAX_DEPTH - 1:
                return False
            self.outer.append((self.container, self.is_object, self.key, self.opened_at))
            self.opened_at = position - 1
            if char == "{":
                self.opened.add(self.opened_at)
                self.container, self.is_object, self.key, self.state = {}, True, None, _KEY_OR_CLOSE
            else:
                self.container, self.is_object, self.key, self.state = [], False, None, _VALUE_OR_CLOSE
            return True
        return self._close(char == "}", position)

    def _close(self, by_brace: bool, position: int) -> bool:
        """`}` or `]`: closes the current container when it is of that kind and may close here."""
        is_object = self.is_object
        if is_object != by_brace or not (
            self.state == _COMMA_OR_CLOSE or self.state == (_KEY_OR_CLOSE if is_object else _VALUE_OR_CLOSE)
        ):
            return False
        value = self.container
        if is_object:
            self.found.append(FoundObject(self.opened_at, position, value))
        if not self.outer:
            return False  # the value the reading began with is whole
        self.container, self.is_object, self.key, self.opened_at = self.outer.pop()
        return self._complete(value)

    def _complete(self, value: object) -> bool:
        """A value is complete: it belongs to the current container."""
        if self.is_object:
            self.container[self.key] = value
        else:
            self.container.append(value)
        self.state = _COMMA_OR_CLOSE
        return True
