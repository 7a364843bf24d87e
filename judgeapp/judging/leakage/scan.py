"""The scan: what a text must not hold (names, model names, paths, labels, transcripts, tool calls, version
words) and the flags that say where."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

from judgeapp.judging.leakage.names import KnownName, NameMatcher, usable_name
from judgeapp.judging.leakage.normalize import Normalized, compact, compact_text, fold_text, name_key
from judgeapp.judging.model_names import MODEL_NAME, PROVIDER_NAME, default_finder
from judgeapp.judging.regexes import linear_regex


class Kind:
    KNOWN_NAME = "known_name"
    PROVIDER = "provider_name"
    MODEL_NAME = "model_name"
    SKILL_PATH = "skill_path"
    FILE_PATH = "file_path"
    LABEL_KEY = "label_key"
    TRANSCRIPT = "transcript"
    TOOL_CALL = "tool_call"
    RAW_OUTPUT = "raw_output"

    LABELS = {
        KNOWN_NAME: "configuration or version name",
        PROVIDER: "provider or model family",
        MODEL_NAME: "model name",
        SKILL_PATH: "skill path",
        FILE_PATH: "file path",
        LABEL_KEY: "label key",
        TRANSCRIPT: "raw transcript",
        TOOL_CALL: "tool-call dump",
        RAW_OUTPUT: "raw model output",
    }


@dataclass(frozen=True)
class LeakageFlag:
    input: str  # "version A (outputs/a)", "eval prompt", "expectations", "version labels", "output"
    location: str  # "run-2/notes.md line 4", "file name run-2/SKILL.md", "line 3", "expectation 2"
    kind: str
    detail: str  # what it reveals
    snippet: str  # the offending text, in its line
    rule: str = ""  # the rule that matched: "known name, whole token", "provider name", "transcript: python repr"…

    def as_dict(self) -> dict:
        return asdict(self) | {"kind_label": Kind.LABELS.get(self.kind, self.kind)}


def format_flag(flag: LeakageFlag | dict) -> str:
    """One line for a terminal or a list."""
    f = flag.as_dict() if isinstance(flag, LeakageFlag) else flag
    rule = f" (rule: {f['rule']})" if f.get("rule") else ""
    return f"LEAKAGE [{Kind.LABELS.get(f['kind'], f['kind'])}] {f['input']}, {f['location']}: {f['detail']}{rule}: {f['snippet']}"


SNIPPET_CHARS = 160


# Provider, model-family, model and assistant names: the list and its rules are in
# judgeapp/judging/data/model_names.toml, read by judgeapp/judging/model_names.py.
_MODEL_NAME_KINDS = {PROVIDER_NAME: Kind.PROVIDER, MODEL_NAME: Kind.MODEL_NAME}
# A path segment does not end in the sentence's full stop or comma.
_SEGMENT = r"[\w.-]*[\w-]"
_PATH_CHARS = r"[^\s'\"`<>()\[\]{},;]*[^\s'\"`<>()\[\]{},;.:]"


@dataclass(frozen=True)
class _Found:
    """A match of a _NotAfterWord pattern: what the scanner reads of a match (span and text)."""

    start: int
    end: int
    text: str

    def span(self) -> tuple[int, int]:
        return self.start, self.end

    def group(self, index: int = 0) -> str:
        return self.text


class _NotAfterWord:
    """An RE2 pattern for text that must not follow a letter, a digit, `_` or `-`. RE2 has no look-behind, so the
    character before is matched too and left out of what `finditer` and `search` give."""

    def __init__(self, pattern: str, **flags):
        self.regex = linear_regex(rf"(?:^|[^\w\-])({pattern})", **flags)

    def finditer(self, text: str):
        for match in self.regex.finditer(text):
            yield _Found(match.start(1), match.end(1), match[1])

    def search(self, text: str) -> _Found | None:
        return next(self.finditer(text), None)


# On RE2: a run of `skill/skill/skill/…` made the backtracking engine try every way to split it (minutes for 200 KB).
_SKILL_PATH = _NotAfterWord(rf"(?:[\w.~-]+/)*skills/{_SEGMENT}(?:/{_SEGMENT})*/?|(?:[\w.~-]+/)*SKILL\.md\b", ignore_case=True)
# Each alternative starts with a literal, so that the regex engine jumps from one candidate to the next
# (a leading look-behind made it try every position: 30 times slower on text full of slashes).
_FILE_PATH = re.compile(
    rf"/(?<![\w.:/-]/)(?:home|Users|root|tmp|var|opt|mnt|srv|workspaces?|work|private|data)/{_PATH_CHARS}"
    rf"|~(?<![\w/]~)/[\w.-]+/{_PATH_CHARS}"
    rf"|file://{_PATH_CHARS}"
    rf"|iteration(?<![\w-]iteration)-\d+/{_PATH_CHARS}"
)
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:\\(?:[^\\\s]+\\)+[^\\\s]*")
_LABEL_WORD = re.compile(
    r"(?<![\w-])(?:(?:with|without|old|new|no)[_-]skills?|skill[_-](?:name|path|version|id)"
    r"|config(?:uration)?[_-](?:name|id|label)|(?:version|variant)[_-]label)(?![\w-])",
    re.I,
)
# The line patterns run on RE2: `^[ \t]*-?[ \t]*…` on a line of spaces made the backtracking engine try every way to
# share them between the two runs (20 seconds for 10 KB of spaces).
_LABEL_LINE = linear_regex(
    r"^[ \t]*[-*]?[ \t]*[\"']?(?P<key>config|configuration|config_name|configuration_name|variant|skill|skill_name|skill_path"
    r"|system_name|model_name|model_id|judge|judge_name|version_label|run_config)[\"']?[ \t]*[:=][ \t]*\S",
    ignore_case=True, multiline=True,
)
_SPEAKER = linear_regex(
    r"^[ \t]*(?:>[ \t]*)?\**[ \t]*(?P<role>user|human|assistant|ai|system|bot|claude|chatgpt|gpt|model|tool)[ \t]*\**[ \t]*:"
    r"|^[ \t]*#{1,6}[ \t]*\**(?P<heading>user|human|assistant)\**[ \t]*$",
    ignore_case=True, multiline=True,
)
_ASSISTANT_ROLES = {"assistant", "ai", "bot", "claude", "chatgpt", "gpt", "model"}
_USER_ROLES = {"user", "human"}
_Q = "[\"'`]"  # JSON's double quotes, a Python repr's single quotes
_ROLE_VALUES = r"(?:user|assistant|system|tool|developer|human|model|ai|bot|gpt|function)"
_TRANSCRIPT_CHECKS = (
    (
        re.compile(rf"{_Q}role{_Q}\s*:\s*{_Q}{_ROLE_VALUES}{_Q}", re.I), "chat messages with roles", "transcript: role field",
        ("role",)
    ),
    (re.compile(rf"\brole\s*=\s*{_Q}{_ROLE_VALUES}{_Q}", re.I), "chat message objects with roles (a Python repr)",
     "transcript: role attribute", ("role",)),
    (re.compile(rf"{_Q}(?:speaker|author|sender|from|who)\s*{_Q}\s*:\s*{_Q}{_ROLE_VALUES}{_Q}", re.I),
     "chat turns with speakers", "transcript: speaker field", ("speaker", "author", "sender", "from", "who")),
    (linear_regex(rf"^[ \t]*-?[ \t]*(?:role|speaker)[ \t]*:[ \t]*{_ROLE_VALUES}[ \t]*$", ignore_case=True, multiline=True),
     "chat turns with roles (YAML)", "transcript: role line", ("role", "speaker")),
    (re.compile(
        r"<\|im_start\|>|<\|im_end\|>|<\|im_sep\|>|\[/?INST\]|<\|start_header_id\|>|<\|eot_id\|>|<\|begin_of_text\|>"
        r"|<start_of_turn>|<end_of_turn>|<\|(?:user|assistant|system|endoftext)\|>|</?(?:assistant|human)>"
    ), "chat-template tokens", "transcript: chat-template tokens",
     ("<|", "inst]", "<start_of_turn>", "<end_of_turn>", "<assistant", "</assistant", "<human", "</human")),
    # LangChain: message dicts (`{"type": "human", "data": {…}}`, lower case as LangChain writes them, so that a game's
    # `"type": "AI"` player is not one), message objects and their reprs (`HumanMessage(content=…)`, `AIMessageChunk(…)`),
    # serialised ids (`"AIMessage"`) and prompt templates built from messages (`from_messages([("human", …)`).
    (linear_regex(rf"{_Q}type{_Q}\s*:\s*{_Q}(?:human|ai|HumanMessageChunk|AIMessageChunk){_Q}"),
     "chat messages with types (LangChain)", "transcript: message type field", ("type",)),
    (linear_regex(
        r"\b(?:Human|AI|System|Tool|Function|Chat|Remove)Message(?:Chunk)?\(\s*(?:content\s*=|[\"'\[])"
        rf"|{_Q}(?:Human|AI|System|Tool|Function)Message(?:Chunk)?{_Q}"
        rf"|\bfrom_messages\(\s*\[\s*\(\s*{_Q}(?:system|human|ai|user|assistant|placeholder){_Q}"
    ), "chat message objects (LangChain)", "transcript: message objects", ("message",)),
    # LlamaIndex: `ChatMessage(role=MessageRole.USER, …)`, `<MessageRole.ASSISTANT: 'assistant'>`.
    (linear_regex(r"\bMessageRole\.(?:USER|ASSISTANT|SYSTEM|TOOL|FUNCTION|CHATBOT|MODEL|DEVELOPER)\b"),
     "chat message roles (LlamaIndex)", "transcript: message role", ("messagerole.",)),
)
_TOOL_CHECKS = (
    (re.compile(
        rf"{_Q}(?:tool_calls|tool_call_id|tool_use_id|function_call)\s*{_Q}\s*:"
        rf"|{_Q}type{_Q}\s*:\s*{_Q}(?:tool_use|tool_result|server_tool_use|web_search_tool_result|mcp_tool_use|mcp_tool_result"
        r"|function_call_output|function_call|custom_tool_call_output|custom_tool_call|computer_call_output|computer_call"
        rf"|web_search_call|file_search_call|code_interpreter_call|mcp_call|mcp_list_tools|function)\s*{_Q}"
        rf"|{_Q}name{_Q}\s*:\s*{_Q}[\w.-]+{_Q}\s*,\s*{_Q}(?:arguments|input|parameters){_Q}\s*:"
        r"|\b(?:tool_calls|function_call)\s*=\s*[\[{(A-Z]",
        re.I,
    ), "a tool-call record", "tool call: structured",
     ("tool_call", "tool_use", "tool_result", "function_call", "type", "name")),
    (linear_regex(
        r"</?(?:function_calls|invoke|tool_call|tool_use|tool_result|parameter name)\b"
        r"|^[ \t]*(?:⏺|●|⎿)?[ \t]*(?:Bash|Read|Write|Edit|MultiEdit|Glob|Grep|WebFetch|WebSearch|Task|TodoWrite|NotebookEdit)\("
        r"|^[ \t]*(?:Tool call|Tool result|Calling tool|Tool use|Function call)[ \t]*[:(]",
        ignore_case=True, multiline=True,
    ), "an agent's tool log", "tool call: agent log",
     ("</", "<function", "<invoke", "<tool", "<parameter", "(", "tool", "function")),
    # A tool call told in prose, as an agent narrates its own steps: "I called the `search_docs` tool",
    # "invoking the function get_weather", "then I ran read_file(...)". The tool's name must look like code
    # (backticks, snake_case, camelCase, a call) and the narrator is the agent ("I", "we"), so that a
    # runbook's "use the pg_dump tool" is not one.
    (re.compile(
        r"\b(?i:I|I've|I have|we|we've|we have)\s+(?i:then\s+|first\s+|next\s+|just\s+|also\s+)?"
        r"(?i:call(?:ed)?|invoked?|ran|run|executed?|used?|triggered)"
        r"\s+(?i:the\s+|a\s+|my\s+)?(?:`[\w.:-]+`|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[a-z]+[A-Z]\w*)\s+(?i:tool|function)\b"
        r"|\b(?i:call(?:ed|ing)|invok(?:ed|ing))\s+(?i:the\s+)?(?i:tool|function)\s+"
        r"(?:`[^`\n]+`|\"[\w.-]+\"|'[\w.-]+'|[a-z]\w*_\w+|\w+\()"
        r"|\b(?i:I|we)\s+(?i:then\s+|first\s+|next\s+|just\s+|also\s+)?(?i:called|invoked|ran|executed)\s+"
        r"(?i:the\s+)?`?[A-Za-z_]\w*\([^)\n]*\)"
    ), "a tool call told in prose", "tool call: in prose", ("tool", "function", "(")),
    # The same with the narrator left out, as an agent's step log reads: "Then called get_weather()", "Next, invoked
    # `read_file`", "First ran `search_docs`", "I'm calling get_weather() now". The verb opens a line or a clause or
    # follows a narrator's word (not "a function called `rotate`", "the helper is called get_secret()", "the on-call
    # ran `rotate.sh`"), and the tool looks like code: a call, or in backticks a snake_case, dotted or camelCase name,
    # or any name followed by "tool" or "function".
    (linear_regex(
        r"(?:(?:^[ \t>*-]*|[.;:!?,(][ \t]*|\b(?i:I|we|I've|we've|I have|we have|I had|we had|then|first|next|also|just"
        r"|finally|again|and)[ \t]+)(?i:called|invoked|ran|executed|triggered)"
        r"|\b(?i:I'm|I’m|I am|we're|we’re|we are|now)[ \t]+(?i:calling|invoking|running|executing))"
        r"[ \t]+(?i:the[ \t]+)?"
        r"(?:`[A-Za-z_]\w*(?:[.:]\w+)+`|`[A-Za-z]*_\w*`|`[a-z]+[A-Z]\w*`|`[\w.:\-]+`[ \t]+(?i:tool|function)\b"
        r"|`?[A-Za-z_][\w.]*\([^)\n]{0,200}\))",
        multiline=True,
    ), "a tool call told in prose", "tool call: in prose", ("called", "invoked", "ran", "executed", "triggered", "calling",
                                                             "invoking", "running", "executing")),
)
# `version 2` where a version is named `v2`: only where the text names its writer ("this is version 2", "I am
# version 2", "generated by version 2", a signature "— Version 2", "version 2 here"), not "version 2 of the API"
# or "version 2.1" (the scanner checks the number and the word after).
_VERSION_WORD = linear_regex(
    r"(?:\b(?:this is|i am|i'm|i’m|it is|it's|it’s|here is|here's|here’s)"
    r"|\b(?:written|generated|produced|drafted|created|answered|authored|sent|signed) by|\bsigned[,:]?|^[ \t]*(?:[—–]|--))"
    r"[ \t]+(?:the[ \t]+)?(?P<word>version[ \t_.\-]*(?P<number>\d+)(?P<decimals>(?:\.\d+)*))(?P<of>[ \t]+(?:of|for|in|on)\b)?"
    r"|\b(?P<word2>version[ \t_.\-]*(?P<number2>\d+)(?P<decimals2>(?:\.\d+)*))[ \t,]+(?:here|speaking|signing off|reporting)\b",
    ignore_case=True, multiline=True,
)
_VERSION_WORD_GROUPS = tuple(_VERSION_WORD.groupindex[g] for g in ("number", "decimals", "of", "number2", "decimals2"))
_VERSION_NAME = re.compile(r"v(\d+)")
_REACT = re.compile(r"^[ \t]*(?P<step>Thought|Action|Action Input|Observation)[ \t]*:", re.M)
_RAW_OUTPUT = re.compile(
    rf"{_Q}(?:finish_reason|stop_reason|prompt_tokens|completion_tokens|input_tokens|output_tokens|system_fingerprint){_Q}\s*:"
    r"|\b(?:finish_reason|stop_reason|prompt_tokens|completion_tokens)\s*=\s*['\"\d]"
    rf"|{_Q}object{_Q}\s*:\s*{_Q}chat\.completion"
    r"|\bchatcmpl-[A-Za-z0-9]{6,}|\bmsg_[A-Za-z0-9]{12,}\b|\bChatCompletion(?:Message)?\("
)
TRANSCRIPT_FILE = re.compile(r"(?:^|/)[^/]*(?:transcript|chat[-_]?log|conversation)[^/]*$|(?:^|/)messages\.jsonl?$", re.I)
# (regex, kind, describe, key, rule, needles): a text must contain one of the needles (lower case) for
# the regex to run, a cheap test that spares most texts most regexes.
_CHECKS = (
    (
        _SKILL_PATH, Kind.SKILL_PATH, lambda m: f"gives the skill path {m.group(0)!r}", lambda m: m.group(0), "skill path",
        ("skill",)
    ),
    (_FILE_PATH, Kind.FILE_PATH, lambda m: f"gives the file path {m.group(0)!r}", lambda m: m.group(0), "file path", ("/",)),
    (_WINDOWS_PATH, Kind.FILE_PATH, lambda m: f"gives the file path {m.group(0)!r}", lambda m: m.group(0), "file path", (":\\",)),
    (_LABEL_WORD, Kind.LABEL_KEY, lambda m: f"uses the label key {m.group(0)!r}", lambda m: m.group(0).lower(), "label key",
     ("skill", "config", "label")),
    (_LABEL_LINE, Kind.LABEL_KEY, lambda m: f"declares {m.group('key')!r}, a configuration key", lambda m: m.group("key").lower(),
     "configuration key line", ("config", "variant", "skill", "_name", "model_id", "judge", "label")),
    (_RAW_OUTPUT, Kind.RAW_OUTPUT, lambda m: "holds a raw model API response", lambda m: "raw", "raw API response",
     ("finish_reason", "stop_reason", "_tokens", "chat.completion", "chatcmpl-", "msg_", "chatcompletion(", "fingerprint")),
)


def _snippet(line: str, start: int, end: int) -> str:
    line = line.rstrip("\n")
    if len(line) <= SNIPPET_CHARS:
        return line.strip()
    room = max(0, (SNIPPET_CHARS - (end - start)) // 2)
    left = max(0, start - room)
    right = min(len(line), end + room)
    return ("…" if left else "") + line[left:right].strip() + ("…" if right < len(line) else "")


class Collector:
    """Flags, one per (input, place, kind, what): the first line is kept and the other lines counted."""

    def __init__(self):
        self._flags: dict[tuple, tuple[LeakageFlag, set]] = {}
        self._places: dict[tuple[str, str], int] = {}
        self._order: dict[tuple, tuple[int, int]] = {}

    def add(self, *, input: str, place: str, line_no: int | None, kind: str, detail: str, snippet: str | Callable[[], str],
            key: str, rule: str) -> None:
        """`snippet` may be a function that makes it: it is called for a flag's first line only (a long line with
        the same name thousands of times is cut once, not once a match)."""
        slot = (input, place, kind, key)
        if slot in self._flags:
            self._flags[slot][1].add(line_no)
            return
        if callable(snippet):
            snippet = snippet()
        # Flags are listed by input and file in reading order, then by line.
        self._order[slot] = (self._places.setdefault((input, place), len(self._places)), line_no or 0)
        if line_no is None:
            location = place
        else:
            location = f"{place} line {line_no}" if place else f"line {line_no}"
        self._flags[slot] = (LeakageFlag(input, location, kind, detail, snippet, rule), {line_no})

    def flags(self) -> list[LeakageFlag]:
        out = []
        for slot in sorted(self._flags, key=self._order.__getitem__):
            flag, lines = self._flags[slot]
            more = len(lines) - 1
            if more:
                flag = LeakageFlag(flag.input, flag.location, flag.kind,
                                   f"{flag.detail} (and {more} more line{'s' if more > 1 else ''})", flag.snippet, flag.rule)
            out.append(flag)
        return out


class Scanner:
    """Scans texts and file paths for everything above, with the known names of one comparison (or one
    calibration sample)."""

    def __init__(self, names: Iterable[KnownName] = ()):
        names = list(names)
        self.names = NameMatcher(names)
        self.model_names = default_finder()
        # Versions named `v2` are also looked for as `version 2` (see _VERSION_WORD).
        self.version_numbers: dict[str, KnownName] = {}
        for name in names:
            numbered = _VERSION_NAME.fullmatch(compact(name.text).replace(" ", ""))
            if numbered and usable_name(name.text):
                self.version_numbers.setdefault(str(int(numbered.group(1))), name)

    def scan_text(self, collector: Collector, text: str, *, input: str, place: str) -> None:
        starts = [0] + [m.end() for m in re.finditer("\n", text)]
        # A one-line text with a place of its own ("expectation 2") needs no line number.
        numbered = not (place and len(text.rstrip("\n").splitlines()) <= 1)
        folded = fold_text(text)

        def add(start: int, end: int, view: Normalized, **flag) -> None:
            original_start = view.at(start)
            index = bisect_right(starts, original_start) - 1

            def snippet() -> str:
                original_end = max(original_start + 1, view.at(max(start, end - 1)) + 1)
                line_end = text.find("\n", starts[index])
                line = text[starts[index] : line_end if line_end >= 0 else len(text)]
                return _snippet(line, original_start - starts[index], min(len(line), original_end - starts[index]))

            collector.add(input=input, place=place, line_no=index + 1 if numbered else None, snippet=snippet, **flag)

        squashed = compact_text(folded)
        for start, end, known, rule in self.names.finditer(squashed):
            add(start, end, squashed, kind=Kind.KNOWN_NAME, detail=f"names the {known.what} {known.text!r}",
                key=name_key(known.text), rule=f"{known.rule}, {rule}")
        body = folded.text
        lower = body.lower()
        if self.version_numbers and "version" in lower:
            for match in _VERSION_WORD.finditer(body):
                # Groups by number: RE2's matches read a group by its name slowly.
                number, decimals, of, number2, decimals2 = (match[group] for group in _VERSION_WORD_GROUPS)
                known = self.version_numbers.get(str(int(number or number2)))
                if known is None or decimals or decimals2 or of:
                    continue  # another version, `version 2.1`, `version 2 of the API`
                add(*match.span(), folded, kind=Kind.KNOWN_NAME, detail=f"names the {known.what} {known.text!r}",
                    key=name_key(known.text), rule=f"{known.rule}, version word")
        for regex, kind, describe, key, rule, needles in _CHECKS:
            if not any(needle in lower for needle in needles):
                continue
            for match in regex.finditer(body):
                add(*match.span(), folded, kind=kind, detail=describe(match), key=key(match), rule=rule)
        for hit in self.model_names.finditer(body):
            written = body[hit.start : hit.end]
            if hit.kind == MODEL_NAME:
                add(hit.start, hit.end, folded, kind=Kind.MODEL_NAME, detail=f"names the model {written!r}", key=written.lower(),
                    rule=hit.rule)
            else:
                add(hit.start, hit.end, folded, kind=Kind.PROVIDER, detail=f"names the provider or model family {written!r}",
                    key=hit.entry.key, rule=hit.rule)
        for regex, what, rule, needles in _TRANSCRIPT_CHECKS:
            if not any(needle in lower for needle in needles):
                continue
            for match in regex.finditer(body):
                add(*match.span(), folded, kind=Kind.TRANSCRIPT, detail=f"holds {what} (a transcript)", key=rule, rule=rule)
        for regex, what, rule, needles in _TOOL_CHECKS:
            if not any(needle in lower for needle in needles):
                continue
            for match in regex.finditer(body):
                add(*match.span(), folded, kind=Kind.TOOL_CALL, detail=f"holds {what}", key=rule, rule=rule)
        react = list(_REACT.finditer(body)) if "action" in lower else []
        steps = {m.group("step") for m in react}
        if "Action" in steps and ("Observation" in steps or "Action Input" in steps):
            add(*react[0].span(), folded, kind=Kind.TOOL_CALL, detail="holds an agent's Thought/Action/Observation steps",
                key="react", rule="tool call: ReAct steps")
        speakers = [(m, (m.group("role") or m.group("heading")).lower()) for m in _SPEAKER.finditer(body)]
        roles = {role for _, role in speakers}
        # Chat-log structure: turns by a user and by an assistant. One of them alone ("System: Linux") is not.
        if roles & _USER_ROLES and roles & _ASSISTANT_ROLES:
            shown = ", ".join(sorted(r.capitalize() for r in roles))
            add(*speakers[0][0].span(), folded, kind=Kind.TRANSCRIPT,
                detail=f"has chat-log structure: {len(speakers)} speaker turns ({shown})", key="speakers",
                rule="transcript: speaker turns")

    def scan_path(self, collector: Collector, path: str, *, input: str, place: str) -> None:
        """A file's path is shown to the judge too: it must not name anything either."""
        where = f"file name {place}"
        squashed = compact_text(fold_text(path))
        for _start, _end, known, rule in self.names.finditer(squashed):
            collector.add(input=input, place=where, line_no=None, kind=Kind.KNOWN_NAME,
                          detail=f"names the {known.what} {known.text!r}",
                          snippet=path, key=name_key(known.text), rule=f"{known.rule}, {rule}")
        folded = fold_text(path).text
        for hit in self.model_names.finditer(folded):
            kind = _MODEL_NAME_KINDS[hit.kind]
            detail = "names a model" if kind == Kind.MODEL_NAME else "names a provider or model family"
            collector.add(input=input, place=where, line_no=None, kind=kind, detail=detail, snippet=path, key=kind, rule=hit.rule)
        for regex, kind, detail, rule in (
            (_SKILL_PATH, Kind.SKILL_PATH, "is a skill path", "skill path"),
            (_LABEL_WORD, Kind.LABEL_KEY, "uses a label key", "label key"),
            (TRANSCRIPT_FILE, Kind.TRANSCRIPT, "is named as a transcript or chat log", "transcript: file name"),
        ):
            if regex.search(folded):
                collector.add(input=input, place=where, line_no=None, kind=kind, detail=detail, snippet=path, key=kind, rule=rule)


def scan_texts(texts: Iterable[tuple[str, str]], *, names: Iterable[KnownName] = ()) -> list[LeakageFlag]:
    """Flags in a few texts, each given with the place a flag names ("output", "reply 1")."""
    scanner = Scanner(names)
    collector = Collector()
    for place, text in texts:
        if text:
            scanner.scan_text(collector, text, input=place, place="")
    return collector.flags()
