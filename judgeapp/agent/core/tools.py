"""The judge's read-only tools over one workspace and its trace, as offered through tool calling.

Every tool answers with text the judge reads; a call that cannot be answered answers `error: …` (and
still counts against the judge's budget). Alongside, the toolbox keeps what each call actually showed —
the lines of each file, the paths listed or found missing, the trace steps, the commands run and their
output — so that the evidence of a verdict can be checked against it (evidence.py).
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from judgeapp.judging.regexes import PatternRefused, linear_regex

from .inputs import Trace
from .sandbox import Sandbox, SandboxError
from .workspace import NOT_EXPANDED, ToolError, Workspace

MAX_LINES_PER_READ = 200
MAX_CHARS_PER_READ = 20_000
MAX_LINE_CHARS = 500
MAX_LIST_ENTRIES = 300
MAX_SEARCH_HITS = 50
MAX_STEP_CHARS = 12_000
MAX_RUN_ARGS = 20
_SEARCH_LINE_CHARS = 1_000
# How run_file names a limit the program ran into.
_LIMIT_NAMES = {
    "time": "the time limit ({timeout_seconds:g} s)",
    "CPU time": "the CPU-time limit",
    "file size": "the file-size limit ({file_mb} MB a file)",
    "disk": "the disk cap ({disk_mb} MB of writes in the copy, and as much in /tmp)",
    "memory": "the memory limit ({memory_mb} MB)",
    "processes": "the process limit ({max_processes})",
}


def _function(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
        },
    }


LIST_FILES = _function(
    "list_files",
    "List the files and directories of the agent's workspace (sizes in bytes). Paths are relative to the workspace root.",
    {
        "path": {"type": "string", "description": "Directory to list, relative to the workspace root; '.' for the root."},
        "recursive": {"type": "boolean", "description": "Also list subdirectories (default true)."},
    },
    [],
)
READ_FILE = _function(
    "read_file",
    f"Read a text file of the workspace with line numbers, at most {MAX_LINES_PER_READ} lines per call.",
    {
        "path": {"type": "string", "description": "File path relative to the workspace root, e.g. 'src/train.py'."},
        "start_line": {"type": "integer", "description": "First line to show (from 1; default 1)."},
        "end_line": {"type": "integer", "description": "Last line to show (default: start_line + 199)."},
    },
    ["path"],
)
SEARCH = _function(
    "search",
    "Search the workspace files and/or the trace for a text (case-insensitive). Returns 'path:line: text' "
    "for files and 'trace step N: …' for the trace.",
    {
        "query": {"type": "string", "description": "The text to look for."},
        "where": {"type": "string", "enum": ["all", "workspace", "trace"], "description": "Where to search (default all)."},
        "path": {"type": "string", "description": "Only search under this workspace directory or file."},
        "regex": {
            "type": "boolean",
            "description": "Treat the query as a regular expression, RE2 syntax: no backreferences or lookaround "
                           "(default false).",
        },
    },
    ["query"],
)
READ_TRACE_STEP = _function(
    "read_trace_step",
    "Read one step of the agent's trace in full (its thought, action and the environment's response).",
    {"step": {"type": "integer", "description": "The step number, as search results and the trace show it."}},
    ["step"],
)
RUN_FILE = _function(
    "run_file",
    "Run a workspace file (.py with Python, .sh with sh, or an executable) in a sandbox: on a throw-away copy "
    "of the workspace (its working directory), with no network, no other file of the machine, an empty "
    "environment, and time, memory, process and disk limits. Returns the exit code and the output. Files it "
    "writes are discarded.",
    {
        "path": {"type": "string", "description": "File to run, relative to the workspace root."},
        "args": {"type": "array", "items": {"type": "string"}, "description": "Command-line arguments."},
    },
    ["path"],
)


@dataclass
class Observations:
    """What the tools showed during one conversation: the ground evidence is checked against."""

    lines: dict[str, set[int]] = field(default_factory=dict)  # text lines shown, per file
    binary: set[str] = field(default_factory=set)  # files read and found binary
    missing: set[str] = field(default_factory=set)  # paths a tool reported absent
    listed: dict[str, bool] = field(default_factory=dict)  # directory -> listed recursively
    paths: set[str] = field(default_factory=set)  # every path a tool named or was asked about
    steps: set[int] = field(default_factory=set)  # trace steps shown
    runs: list[dict] = field(default_factory=list)  # {path, command, exit_code, output}
    searches: list[dict] = field(default_factory=list)  # {query, where, matches}
    outputs: list[str] = field(default_factory=list)  # every tool answer, verbatim

    def saw_absence_of(self, path: str) -> bool:
        """A tool reported `path` missing, or listed a directory it would be in."""
        if path in self.missing:
            return True
        parent = path.rsplit("/", 1)[0] if "/" in path else "."
        if parent in self.listed:
            return True
        for directory, recursive in self.listed.items():
            if recursive and (directory == "." or path.startswith(directory + "/")):
                return True
        return False


@dataclass
class ToolRecord:
    """One tool call as the transcript keeps it."""

    number: int
    call_id: str
    name: str
    arguments: dict
    output: str
    ok: bool
    command: str = ""

    def as_dict(self) -> dict:
        return {
            "n": self.number,
            "id": self.call_id,
            "name": self.name,
            "arguments": self.arguments,
            "ok": self.ok,
            "output": self.output,
            **({"command": self.command} if self.command else {}),
        }


def _describe_binary(head: bytes, size: int) -> str:
    if head.startswith(b"\x89PNG\r\n\x1a\n") and len(head) >= 24:
        width, height = struct.unpack(">II", head[16:24])
        return f"PNG image, {width}x{height}"
    for magic, label in (
        (b"\xff\xd8\xff", "JPEG image"), (b"GIF8", "GIF image"), (b"%PDF", "PDF document"), (b"PK\x03\x04", "zip archive"),
        (b"\x80\x04", "Python pickle"), (b"\x80\x05", "Python pickle"), (b"\x93NUMPY", "NumPy array"), (b"\x89HDF", "HDF5 file"),
        (b"SQLite format 3", "SQLite database"), (b"\x7fELF", "ELF executable"),
    ):
        if head.startswith(magic):
            return label
    return "binary data"


class ToolBox:
    """The tools over one workspace (and trace); one toolbox per conversation, since it keeps observations."""

    def __init__(self, workspace: Workspace, trace: Trace | None = None, sandbox: Sandbox | None = None):
        self.workspace = workspace
        self.trace = trace
        self.sandbox = sandbox if sandbox is not None and sandbox.status.available else None
        # Why run_file is not offered, for a judge that calls it all the same.
        self.sandbox_unavailable = sandbox.status.reason if sandbox is not None and self.sandbox is None else ""
        self.observations = Observations()
        self.records: list[ToolRecord] = []

    @property
    def schemas(self) -> list[dict]:
        tools = [LIST_FILES, READ_FILE, SEARCH]
        if self.trace is not None:
            tools.append(READ_TRACE_STEP)
        if self.sandbox is not None:
            tools.append(RUN_FILE)
        return tools

    @property
    def names(self) -> list[str]:
        return [t["function"]["name"] for t in self.schemas]

    def call(self, name: str, raw_arguments: str | dict, call_id: str = "") -> ToolRecord:
        number = len(self.records) + 1
        command = ""
        try:
            arguments = raw_arguments if isinstance(raw_arguments, dict) else json.loads(raw_arguments or "{}")
        except json.JSONDecodeError:
            arguments = {"_raw": str(raw_arguments)[:500]}
            output, ok = "error: the arguments are not valid JSON", False
        else:
            if not isinstance(arguments, dict):
                arguments, output, ok = {"_raw": arguments}, "error: the arguments must be a JSON object", False
            elif name == "run_file" and self.sandbox_unavailable:
                output, ok = (
                    f"error: run_file is not available: the sandbox is unavailable ({self.sandbox_unavailable}); nothing was run",
                    False,
                )
            elif name not in self.names:
                output, ok = f"error: no tool named {name!r}; the tools are {', '.join(self.names)}", False
            else:
                try:
                    output, command = getattr(self, f"_{name}")(**arguments)
                    ok = True
                except TypeError as exc:
                    output, ok = f"error: bad arguments for {name}: {_type_error(exc)}", False
                except ToolError as exc:
                    output, ok = f"error: {exc}", False
        self.observations.outputs.append(output)
        record = ToolRecord(number, call_id, name, arguments, output, ok, command)
        self.records.append(record)
        return record

    # --- the tools --------------------------------------------------------------------------------------

    def _list_files(self, path: str = ".", recursive: bool = True) -> tuple[str, str]:
        rel, absolute = self._existing(path)
        obs = self.observations
        if absolute.is_file():
            obs.paths.add(rel)
            return f"{rel}  ({absolute.stat().st_size:,} bytes)", ""
        obs.listed[rel] = obs.listed.get(rel, False) or bool(recursive)
        obs.paths.add(rel)
        entries: list[str] = []
        total = 0
        for entry_rel, entry in self._walk(absolute, rel, bool(recursive)):
            total += 1
            if len(entries) >= MAX_LIST_ENTRIES:
                continue
            obs.paths.add(entry_rel)
            if entry.is_symlink():
                entries.append(f"{entry_rel} -> {os.readlink(entry)}")
            elif entry.is_dir():
                note = "  (not expanded; list it to see inside)" if recursive and entry.name in NOT_EXPANDED else ""
                entries.append(f"{entry_rel}/{note}")
            else:
                entries.append(f"{entry_rel}  ({entry.stat().st_size:,} bytes)")
        where = "the workspace root" if rel == "." else f"{rel}/"
        header = f"{total} entries under {where}{' (recursive)' if recursive else ''}"
        if total > len(entries):
            header += f"; the first {len(entries)} shown (list a subdirectory to see more)"
        return header + ("\n" + "\n".join(entries) if entries else "\n(empty)"), ""

    def _walk(self, absolute: Path, rel: str, recursive: bool):
        for entry in sorted(absolute.iterdir(), key=lambda p: p.name):
            entry_rel = entry.name if rel == "." else f"{rel}/{entry.name}"
            yield entry_rel, entry
            if recursive and entry.is_dir() and not entry.is_symlink() and entry.name not in NOT_EXPANDED:
                yield from self._walk(entry, entry_rel, recursive)

    def _read_file(self, path: str, start_line: int = 1, end_line: int | None = None) -> tuple[str, str]:
        rel, absolute = self._existing(path)
        if absolute.is_dir():
            raise ToolError(f"{rel} is a directory; use list_files")
        obs = self.observations
        obs.paths.add(rel)
        size = absolute.stat().st_size
        with open(absolute, "rb") as f:
            head = f.read(8192)
        if b"\x00" in head or (head and not _looks_like_text(head)):
            obs.binary.add(rel)
            return f"{rel}: binary file, {size:,} bytes ({_describe_binary(head, size)}); it has no text lines to show", ""
        if not isinstance(start_line, int) or isinstance(start_line, bool) or start_line < 1:
            raise ToolError("start_line must be an integer from 1")
        if end_line is None:
            end_line = start_line + MAX_LINES_PER_READ - 1
        if not isinstance(end_line, int) or isinstance(end_line, bool) or end_line < start_line:
            raise ToolError("end_line must be an integer not below start_line")
        end_line = min(end_line, start_line + MAX_LINES_PER_READ - 1)
        shown: list[str] = []
        chars = 0
        last = start_line - 1
        total = 0
        with open(absolute, encoding="utf-8", errors="replace", newline=None) as f:
            for number, line in enumerate(f, start=1):
                total = number
                if number < start_line or number > end_line:
                    continue
                text = line.rstrip("\n")
                if len(text) > MAX_LINE_CHARS:
                    text = text[:MAX_LINE_CHARS] + " …[line continues]"
                if chars + len(text) > MAX_CHARS_PER_READ and shown:
                    break
                shown.append(f"{number:>6}| {text}")
                chars += len(text)
                last = number
        if total == 0:
            return f"{rel}: empty file (0 lines)", ""
        if start_line > total:
            raise ToolError(f"{rel} has {total} lines; start_line {start_line} is past the end")
        obs.lines.setdefault(rel, set()).update(range(start_line, last + 1))
        more = f"; call again with start_line={last + 1} for more" if last < total else ""
        return f"{rel} (lines {start_line}-{last} of {total}{more})\n" + "\n".join(shown), ""

    def _search(self, query: str, where: str = "all", path: str = ".", regex: bool = False) -> tuple[str, str]:
        if not isinstance(query, str) or not query.strip():
            raise ToolError("the query is empty")
        if where not in ("all", "workspace", "trace"):
            raise ToolError("where must be 'all', 'workspace' or 'trace'")
        try:
            # RE2: a judge's pattern cannot make a search backtrack for ever (a thread cannot stop one).
            pattern = linear_regex(query if regex else re.escape(query), ignore_case=True, line_by_line=True)
        except PatternRefused as exc:
            raise ToolError(f"the regular expression is refused: {exc}") from None
        obs = self.observations
        hits: list[str] = []
        count = 0
        searched = []
        if where in ("all", "workspace"):
            rel, absolute = self._existing(path)
            obs.paths.add(rel)
            searched.append("the workspace" if rel == "." else rel)
            files = self.workspace.files()
            scope = files if rel == "." else [f for f in files if f == rel or f.startswith(rel + "/")]
            for file_rel in scope:
                if any(part in NOT_EXPANDED for part in file_rel.split("/")[:-1]):
                    continue
                try:
                    _rel, file_abs = self.workspace.resolve(file_rel)
                except ToolError:
                    continue
                with open(file_abs, "rb") as f:
                    head = f.read(8192)
                if b"\x00" in head:
                    continue
                with open(file_abs, encoding="utf-8", errors="replace") as f:
                    lines = [line[:_SEARCH_LINE_CHARS] for line in f.read().split("\n")]
                text = "\n".join(lines)
                # One call per file, and per matching line only where the file matches: RE2's calls cost
                # more than re's, and most files hold no hit. No match spans a line (line_by_line).
                if not pattern.search(text):
                    continue
                starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
                last = -1
                for match in pattern.finditer(text):
                    index = bisect.bisect_right(starts, match.start()) - 1
                    if index == last or (index == len(lines) - 1 and not lines[index] and match.start() == len(text)):
                        continue
                    last = index
                    count += 1
                    if len(hits) < MAX_SEARCH_HITS:
                        hits.append(f"{file_rel}:{index + 1}: {lines[index].strip()[:300]}")
                        obs.paths.add(file_rel)
                        obs.lines.setdefault(file_rel, set()).add(index + 1)
        if where in ("all", "trace"):
            if self.trace is None:
                if where == "trace":
                    raise ToolError("no trace was given for this run")
            else:
                searched.append("the trace")
                for step in self.trace.steps:
                    flat = step.flat
                    match = pattern.search(flat)
                    if match:
                        count += 1
                        if len(hits) < MAX_SEARCH_HITS:
                            start = max(0, match.start() - 100)
                            snippet = flat[start: match.end() + 100]
                            hits.append(
                                f"trace step {step.id}: "
                                f"{'…' if start else ''}{snippet}{'…' if match.end() + 100 < len(flat) else ''}"
                            )
                            obs.steps.add(step.id)
        obs.searches.append({"query": query, "where": where, "matches": count})
        header = f"{count} match{'es' if count != 1 else ''} for {query!r} in {' and '.join(searched)}"
        if count > len(hits):
            header += f"; the first {len(hits)} shown"
        return header + ("\n" + "\n".join(hits) if hits else ""), ""

    def _read_trace_step(self, step: int) -> tuple[str, str]:
        if self.trace is None:
            raise ToolError("no trace was given for this run")
        if isinstance(step, str) and step.strip().lstrip("-").isdigit():
            step = int(step)
        if not isinstance(step, int) or isinstance(step, bool):
            raise ToolError("step must be an integer")
        found = self.trace.get(step)
        if found is None:
            ids = [s.id for s in self.trace.steps]
            raise ToolError(f"no trace step {step}; the steps are {ids[0]} to {ids[-1]}")
        self.observations.steps.add(step)
        text = found.text
        if len(text) > MAX_STEP_CHARS:
            text = text[:MAX_STEP_CHARS] + f"\n[… {len(text) - MAX_STEP_CHARS:,} more characters left out]"
        position = self.trace.steps.index(found) + 1
        return f"trace step {step} ({position} of {len(self.trace.steps)}):\n{text}", ""

    def _run_file(self, path: str, args: list | None = None) -> tuple[str, str]:
        rel, absolute = self._existing(path)
        if absolute.is_dir():
            raise ToolError(f"{rel} is a directory; give a file to run")
        args = args or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args) or len(args) > MAX_RUN_ARGS:
            raise ToolError(f"args must be a list of at most {MAX_RUN_ARGS} strings")
        if any(len(a) > 500 or "\x00" in a for a in args):
            raise ToolError("an argument is too long or has a NUL byte")
        self.observations.paths.add(rel)
        try:
            result = self.sandbox.run(self.workspace.root, rel, args)
        except SandboxError as exc:
            raise ToolError(str(exc)) from None
        limits = self.sandbox.limits
        status = (
            f"killed after {limits.timeout_seconds:g} s (time limit)" if result.timed_out
            else f"exit code {result.exit_code}"
        )
        body = result.output if result.output.strip() else "(no output)"
        reached = [_LIMIT_NAMES.get(name, name).format(**limits.as_dict()) for name in result.limits_hit]
        text = (
            f"$ {result.command}\n{status} ({self.sandbox.status.mode} sandbox: no network, no host file or socket, "
            "an empty environment; only a throw-away copy of the workspace)\n"
            + (f"limits reached: {'; '.join(reached)}\n" if reached else "")
            + f"--- output ({result.output_bytes:,} bytes{', cut to its head and tail' if result.truncated else ''}) ---\n{body}"
        )
        self.observations.runs.append(
            {"path": rel, "command": result.command, "exit_code": result.exit_code, "timed_out": result.timed_out,
             "seconds": result.seconds, "output": result.output, "limits_hit": result.limits_hit}
        )
        return text, result.command

    # --- helpers ----------------------------------------------------------------------------------------

    def _existing(self, path: str) -> tuple[str, Path]:
        rel, absolute = self.workspace.resolve(path if path is not None else ".")
        if not os.path.lexists(absolute):
            self.observations.missing.add(rel)
            self.observations.paths.add(rel)
            raise ToolError(f"no such file or directory in the workspace: {rel}")
        return rel, absolute


def _looks_like_text(head: bytes) -> bool:
    try:
        head.decode("utf-8")
        return True
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the end of the sample is still text.
        return exc.start >= len(head) - 4


def _type_error(exc: TypeError) -> str:
    message = str(exc)
    return message.split(") ", 1)[-1] if ") " in message else message
