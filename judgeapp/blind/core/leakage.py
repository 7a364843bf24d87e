"""Leakage detection for the blind comparator, run on every input before any judging.

The seed: "Do not accept configuration names, skill paths, label keys, raw outputs, or raw transcripts.
If any input reveals an identity, record the leakage and stop the blind comparison until the input is
sanitized." Every input is scanned: each version's files (their contents and their paths), the eval
prompt, the expectations, and the labels themselves.

Two kinds of check:
- known names: the configured systems and judges (names and models) and the mapping's own real names,
  matched as whole words, case-insensitively, with `-`, `_`, `.` and spaces interchangeable
  (`support-bot-v2` also catches `support_bot_v2` and `Support Bot v2`);
- structure: skill paths (`skills/foo/SKILL.md`), absolute and workspace paths, label keys
  (`with_skill`, `config_name: …`), well-known model names (`gpt-4o`, `llama-3.1-8b`), chat-log structure
  (speaker turns, `"role": "assistant"`, chat-template tokens), tool-call dumps and raw API responses.

A flag says which input, where (file and line), what it reveals, and the offending text. Plain Python.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from judgeapp.blind.core.inputs import LABEL, VersionContent


class Kind:
    KNOWN_NAME = "known_name"
    MODEL_NAME = "model_name"
    SKILL_PATH = "skill_path"
    FILE_PATH = "file_path"
    LABEL_KEY = "label_key"
    TRANSCRIPT = "transcript"
    TOOL_CALL = "tool_call"
    RAW_OUTPUT = "raw_output"

    LABELS = {
        KNOWN_NAME: "configuration or version name",
        MODEL_NAME: "model name",
        SKILL_PATH: "skill path",
        FILE_PATH: "file path",
        LABEL_KEY: "label key",
        TRANSCRIPT: "raw transcript",
        TOOL_CALL: "tool-call dump",
        RAW_OUTPUT: "raw model output",
    }


@dataclass(frozen=True)
class KnownName:
    """A name that identifies a configuration: `what` says where it comes from ("configured system")."""

    text: str
    what: str


@dataclass(frozen=True)
class LeakageFlag:
    input: str  # "version A (outputs/a)", "eval prompt", "expectations", "version labels"
    location: str  # "run-2/notes.md line 4", "file name run-2/SKILL.md", "line 3", "expectation 2"
    kind: str
    detail: str  # what it reveals
    snippet: str  # the offending text, in its line

    def as_dict(self) -> dict:
        return asdict(self) | {"kind_label": Kind.LABELS.get(self.kind, self.kind)}


# Names too generic to mean an identity: matching them would stop every comparison.
GENERIC_NAMES = {
    "default", "baseline", "judge", "judges", "system", "systems", "model", "models", "test", "tests", "demo",
    "main", "output", "outputs", "result", "results", "run", "runs", "version", "versions", "data", "final",
    "draft", "new", "old", "current", "latest", "candidate", "control", "treatment", "temp", "tmp", "inbox",
    "blind", "blinded", "sanitized", "eval", "evals", "files", "work", "workspace", "home", "users",
}
MIN_NAME_LENGTH = 4
SNIPPET_CHARS = 160

# A model-name tail (`-3.5-sonnet`, `2.5-7b`) never ends in the sentence's full stop.
_TAIL = r"(?:[\w.-]*\w)?"
_MODEL = re.compile(
    r"(?<![\w-])(?:"
    rf"gpt-?(?:3\.5|4(?:\.\d)?|4o|5){_TAIL}|chatgpt|o[134]-(?:mini|preview|pro)"
    rf"|claude[ \t-](?:\d{_TAIL}|instant|opus|sonnet|haiku){_TAIL}|claude-\w{_TAIL}"
    rf"|llama[ \t-]?\d{_TAIL}|qwen[ \t-]?\d?{_TAIL}|mistral[ \t-](?:\d+(?:\.\d+)?b|small|medium|large|nemo|tiny){_TAIL}"
    rf"|mixtral{_TAIL}|gemini[ \t-](?:\d|pro|flash|ultra|nano){_TAIL}|gemma[ \t-]?\d{_TAIL}|deepseek{_TAIL}"
    rf"|phi-\d{_TAIL}|command-r{_TAIL}"
    r")(?![\w-])",
    re.I,
)
# A path segment does not end in the sentence's full stop or comma.
_SEGMENT = r"[\w.-]*[\w-]"
_PATH_CHARS = r"[^\s'\"`<>()\[\]{},;]*[^\s'\"`<>()\[\]{},;.:]"
_SKILL_PATH = re.compile(
    rf"(?<![\w-])(?:[\w.~-]+/)*skills/{_SEGMENT}(?:/{_SEGMENT})*/?|(?<![\w-])(?:[\w.~-]+/)*SKILL\.md\b", re.I
)
_FILE_PATH = re.compile(
    rf"(?<![\w.:/-])/(?:home|Users|root|tmp|var|opt|mnt|srv|workspaces?|work|private|data)/{_PATH_CHARS}"
    rf"|(?<![\w/])~/[\w.-]+/{_PATH_CHARS}"
    r"|\b[A-Za-z]:\\(?:[^\\\s]+\\)+[^\\\s]*"
    rf"|\bfile://{_PATH_CHARS}"
    rf"|(?<![\w-])iteration-\d+/{_PATH_CHARS}"
)
_LABEL_WORD = re.compile(
    r"(?<![\w-])(?:(?:with|without|old|new|no)[_-]skills?|skill[_-](?:name|path|version|id)"
    r"|config(?:uration)?[_-](?:name|id|label)|(?:version|variant)[_-]label)(?![\w-])",
    re.I,
)
_LABEL_LINE = re.compile(
    r"^[ \t]*[-*]?[ \t]*[\"']?(?P<key>config|configuration|config_name|configuration_name|variant|skill|skill_name|skill_path"
    r"|system_name|model_name|model_id|judge|judge_name|version_label|run_config)[\"']?[ \t]*[:=][ \t]*\S",
    re.I | re.M,
)
_SPEAKER = re.compile(
    r"^[ \t]*(?:>[ \t]*)?\**[ \t]*(?P<role>user|human|assistant|ai|system|bot|claude|chatgpt|gpt|model|tool)[ \t]*\**[ \t]*:"
    r"|^[ \t]*#{1,6}[ \t]*\**(?P<heading>user|human|assistant)\**[ \t]*$",
    re.I | re.M,
)
_ASSISTANT_ROLES = {"assistant", "ai", "bot", "claude", "chatgpt", "gpt", "model"}
_USER_ROLES = {"user", "human"}
_JSON_ROLE = re.compile(r"\"role\"\s*:\s*\"(?:user|assistant|system|tool|developer|human)\"", re.I)
_CHAT_TOKENS = re.compile(
    r"<\|im_start\|>|<\|im_end\|>|\[/?INST\]|<\|start_header_id\|>|<\|eot_id\|>|<start_of_turn>|<\|user\|>|<\|assistant\|>"
)
_TOOL_CALL = re.compile(
    r"\"(?:tool_calls|tool_call_id|tool_use_id|function_call)\"\s*:"
    r"|\"type\"\s*:\s*\"(?:tool_use|tool_result|function_call)\""
    r"|</?(?:function_calls|invoke|tool_call|tool_use|tool_result|parameter name)\b"
    r"|^[ \t]*(?:⏺|●|⎿)?[ \t]*(?:Bash|Read|Write|Edit|MultiEdit|Glob|Grep|WebFetch|WebSearch|Task|TodoWrite|NotebookEdit)\("
    r"|^[ \t]*(?:Tool call|Tool result|Calling tool|Tool use|Function call)[ \t]*[:(]",
    re.I | re.M,
)
_RAW_OUTPUT = re.compile(
    r"\"(?:finish_reason|stop_reason|prompt_tokens|completion_tokens|input_tokens|output_tokens)\"\s*:"
    r"|\"object\"\s*:\s*\"chat\.completion"
    r"|\bchatcmpl-[A-Za-z0-9]{6,}"
)
_TRANSCRIPT_FILE = re.compile(r"(?:^|/)[^/]*(?:transcript|chat[-_]?log|conversation)[^/]*$|(?:^|/)messages\.jsonl?$", re.I)


def _name_pattern(name: str) -> str:
    tokens = [t for t in re.split(r"[-_\s.]+", name.strip()) if t]
    return r"(?<![A-Za-z0-9])" + r"[-_ \t.]?".join(re.escape(t) for t in tokens) + r"(?![A-Za-z0-9])"


def usable_name(name: str) -> bool:
    clean = name.strip()
    return len(clean) >= MIN_NAME_LENGTH and clean.lower() not in GENERIC_NAMES and not clean.isdigit()


def mapping_names(real_name: str) -> list[str]:
    """The names a version's real name contributes: itself, and its last meaningful path component
    (`iteration-1/with_skill/outputs` gives `with_skill`)."""
    parts = [p for p in re.split(r"[\\/]+", real_name.strip()) if p and p not in (".", "..")]
    names = [real_name.strip()] if "/" not in real_name and "\\" not in real_name else []
    for part in reversed(parts[-2:]):
        if usable_name(part):
            names.append(part)
            break
    return [n for n in dict.fromkeys(names) if usable_name(n)]


class NameMatcher:
    """Finds every known name in a text and says which one matched. A name's regex runs only on texts
    that contain all its words (a plain substring test), which keeps a long list of names cheap."""

    def __init__(self, names: Iterable[KnownName]):
        unique: dict[str, KnownName] = {}
        for name in names:
            if usable_name(name.text):
                unique.setdefault(name.text.strip().lower(), name)
        # Longest first, so that `support-bot-v2` is reported rather than `support-bot` inside it.
        self.names = sorted(unique.values(), key=lambda n: -len(n.text))
        self.tokens = [[t.lower() for t in re.split(r"[-_\s.]+", n.text.strip()) if t] for n in self.names]
        self.regexes = [re.compile(_name_pattern(n.text), re.I) for n in self.names]

    def finditer(self, text: str):
        lower = text.lower()
        taken: list[tuple[int, int]] = []
        for name, tokens, regex in zip(self.names, self.tokens, self.regexes):
            if not all(token in lower for token in tokens):
                continue
            for match in regex.finditer(text):
                if any(start <= match.start() < end for start, end in taken):
                    continue  # inside a longer name already reported
                taken.append(match.span())
                yield match, name


def _snippet(line: str, start: int, end: int) -> str:
    line = line.rstrip("\n")
    if len(line) <= SNIPPET_CHARS:
        return line.strip()
    room = max(0, (SNIPPET_CHARS - (end - start)) // 2)
    left = max(0, start - room)
    right = min(len(line), end + room)
    return ("…" if left else "") + line[left:right].strip() + ("…" if right < len(line) else "")


class _Collector:
    """Flags, one per (input, place, kind, what): the first line is kept and the other lines counted."""

    def __init__(self):
        self._flags: dict[tuple, tuple[LeakageFlag, set]] = {}
        self._places: dict[tuple[str, str], int] = {}
        self._order: dict[tuple, tuple[int, int]] = {}

    def add(self, *, input: str, place: str, line_no: int | None, kind: str, detail: str, snippet: str, key: str) -> None:
        slot = (input, place, kind, key)
        if slot in self._flags:
            self._flags[slot][1].add(line_no)
            return
        # Flags are listed by input and file in reading order, then by line.
        self._order[slot] = (self._places.setdefault((input, place), len(self._places)), line_no or 0)
        if line_no is None:
            location = place
        else:
            location = f"{place} line {line_no}" if place else f"line {line_no}"
        self._flags[slot] = (LeakageFlag(input, location, kind, detail, snippet), {line_no})

    def flags(self) -> list[LeakageFlag]:
        out = []
        for slot in sorted(self._flags, key=self._order.__getitem__):
            flag, lines = self._flags[slot]
            more = len(lines) - 1
            if more:
                flag = LeakageFlag(flag.input, flag.location, flag.kind, f"{flag.detail} (and {more} more line{'s' if more > 1 else ''})", flag.snippet)
            out.append(flag)
        return out


# Each check with the words one of which a text must contain for the check to find anything: a cheap
# substring test spares most texts the regex.
_CHECKS = (
    (_MODEL, Kind.MODEL_NAME, lambda m: f"names the model {m.group(0)!r}", lambda m: m.group(0).lower(),
     ("gpt", "o1-", "o3-", "o4-", "claude", "llama", "qwen", "mistral", "mixtral", "gemini", "gemma", "deepseek", "phi-", "command-r")),
    (_SKILL_PATH, Kind.SKILL_PATH, lambda m: f"gives the skill path {m.group(0)!r}", lambda m: m.group(0), ("skill",)),
    (_FILE_PATH, Kind.FILE_PATH, lambda m: f"gives the file path {m.group(0)!r}", lambda m: m.group(0), ("/", ":\\")),
    (_LABEL_WORD, Kind.LABEL_KEY, lambda m: f"uses the label key {m.group(0)!r}", lambda m: m.group(0).lower(),
     ("skill", "config", "label")),
    (_LABEL_LINE, Kind.LABEL_KEY, lambda m: f"declares {m.group('key')!r}, a configuration key", lambda m: m.group("key").lower(),
     ("config", "variant", "skill", "_name", "model_id", "judge", "label")),
    (_TOOL_CALL, Kind.TOOL_CALL, lambda m: "holds a tool-call dump", lambda m: "tool",
     ("tool", "function", "invoke", "parameter", "(")),
    (_RAW_OUTPUT, Kind.RAW_OUTPUT, lambda m: "holds a raw model API response", lambda m: "raw",
     ("reason", "tokens", "chat.completion", "chatcmpl-")),
    (_JSON_ROLE, Kind.TRANSCRIPT, lambda m: "holds chat messages with roles (a transcript)", lambda m: "roles", ('"role"',)),
    (_CHAT_TOKENS, Kind.TRANSCRIPT, lambda m: "holds chat-template tokens (a transcript)", lambda m: "tokens", ("<|", "inst]", "<start_of_turn>")),
)


def _scan_lines(collector: _Collector, text: str, *, input: str, place: str, names: NameMatcher) -> None:
    """Every check over the whole text at once (a regex pass is far faster than a Python loop over
    lines); each match is then placed on its line."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    # A one-line text with a place of its own ("expectation 2") needs no line number.
    numbered = not (place and len(text.rstrip("\n").splitlines()) <= 1)

    def located(match: re.Match) -> tuple[int | None, str]:
        index = bisect_right(starts, match.start()) - 1
        end = text.find("\n", starts[index])
        line = text[starts[index] : end if end >= 0 else len(text)]
        snippet = _snippet(line, match.start() - starts[index], min(len(line), match.end() - starts[index]))
        return (index + 1 if numbered else None), snippet

    for match, known in names.finditer(text):
        line_no, snippet = located(match)
        collector.add(input=input, place=place, line_no=line_no, kind=Kind.KNOWN_NAME,
                      detail=f"names the {known.what} {known.text!r}", snippet=snippet, key=known.text.lower())
    lower = text.lower()
    for regex, kind, describe, key, needles in _CHECKS:
        if not any(needle in lower for needle in needles):
            continue
        for match in regex.finditer(text):
            line_no, snippet = located(match)
            collector.add(input=input, place=place, line_no=line_no, kind=kind, detail=describe(match),
                          snippet=snippet, key=key(match))
    speakers = [(m, (m.group("role") or m.group("heading")).lower()) for m in _SPEAKER.finditer(text)]
    roles = {role for _, role in speakers}
    # Chat-log structure: turns by a user and by an assistant. One of them alone ("System: Linux") is not.
    if roles & _USER_ROLES and roles & _ASSISTANT_ROLES:
        line_no, snippet = located(speakers[0][0])
        shown = ", ".join(sorted(r.capitalize() for r in roles))
        collector.add(input=input, place=place, line_no=line_no, kind=Kind.TRANSCRIPT,
                      detail=f"has chat-log structure: {len(speakers)} speaker turns ({shown})", snippet=snippet, key="speakers")


def _scan_path(collector: _Collector, path: str, *, input: str, place: str, names: NameMatcher) -> None:
    """A file's path is shown to the judge too: it must not name anything either."""
    where = f"file name {place}"
    for match, known in names.finditer(path):
        collector.add(input=input, place=where, line_no=None, kind=Kind.KNOWN_NAME,
                      detail=f"names the {known.what} {known.text!r}", snippet=path, key=known.text.lower())
    for regex, kind, detail in (
        (_SKILL_PATH, Kind.SKILL_PATH, "is a skill path"),
        (_MODEL, Kind.MODEL_NAME, "names a model"),
        (_LABEL_WORD, Kind.LABEL_KEY, "uses a label key"),
        (_TRANSCRIPT_FILE, Kind.TRANSCRIPT, "is named as a transcript or chat log"),
    ):
        if regex.search(path):
            collector.add(input=input, place=where, line_no=None, kind=kind, detail=detail, snippet=path, key=kind)


def scan_labels(labels: Iterable[str]) -> list[LeakageFlag]:
    """Labels must be blinded letters; `with_skill` or a directory name is a label key."""
    return [
        LeakageFlag("version labels", f"label {label!r}", Kind.LABEL_KEY,
                    f"{label!r} is not a blinded label (use A, B, C…)", label)
        for label in labels
        if not LABEL.match(label)
    ]


def scan_inputs(
    *,
    versions: list[tuple[str, VersionContent]],
    eval_prompt: str,
    expectations: list[str],
    known: Iterable[KnownName] = (),
    labels: Iterable[str] = (),
) -> list[LeakageFlag]:
    """Every leakage flag in every input. `versions` pairs each version's input name (how a flag names it)
    with its content. An empty list means the inputs are blind."""
    names = NameMatcher(known)
    collector = _Collector()
    for input_name, content in versions:
        for run in content.runs:
            prefix = f"{run.real_name}/" if run.real_name else ""
            for f in run.files:
                place = f"{prefix}{f.path}"
                _scan_path(collector, f.path, input=input_name, place=place, names=names)
                if f.text is not None:
                    _scan_lines(collector, f.text, input=input_name, place=place, names=names)
    _scan_lines(collector, eval_prompt, input="eval prompt", place="", names=names)
    for i, expectation in enumerate(expectations, start=1):
        _scan_lines(collector, expectation, input="expectations", place=f"expectation {i}", names=names)
    return scan_labels(labels) + collector.flags()


def format_flag(flag: LeakageFlag) -> str:
    """One line for a terminal."""
    return f"LEAKAGE [{Kind.LABELS.get(flag.kind, flag.kind)}] {flag.input}, {flag.location}: {flag.detail}: {flag.snippet}"
