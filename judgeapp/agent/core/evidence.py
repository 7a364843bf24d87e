"""Checking a verdict's evidence against what the tools actually returned.

The seed asks every verdict to cite evidence: a file path and line, a command and its output, or a step
in the trace. A judge can write any of those without having looked, so the evidence is read for its
citations and each one is checked against the conversation's observations (tools.Observations):

- `path:line` (or `path:10-20`, `line 12 of path`) — that line of that file was shown by a tool;
- a path whose absence is the point (`out/accuracy.png is missing`) — a tool reported it missing, or
  listed the directory it would be in; a binary file — a tool read it;
- `step N` / `trace step N` — a tool showed that trace step;
- a command — a `run_file` call ran that file, or a `search` was made for the quoted text; text quoted
  from an output (or from any tool) must be in what the tool returned.

Evidence passes when it has at least one such citation and nothing it cites or quotes is unsupported.
The check is a reading of free text, so it is deliberately lenient with words that only look like paths
(a token is a path when the workspace has it, a tool named it, or it has a directory and an extension),
and strict with what is unmistakably a citation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .tools import Observations

_PATH = r"[A-Za-z0-9_.\-][A-Za-z0-9_./\-]*"
_LINES = r"(\d+)(?:\s*[-–]\s*(\d+))?"
_PATH_COLON_LINE = re.compile(rf"(?<![\w/.\-])({_PATH}):{_LINES}\b")
_PATH_THEN_LINE = re.compile(rf"(?<![\w/.\-])({_PATH})[`'\"]?[,:]?\s*\(?\s*lines?\s+{_LINES}\b", re.I)
_PATH_HASH_LINE = re.compile(rf"(?<![\w/.\-])({_PATH})#L(\d+)(?:-L?(\d+))?\b")
_LINE_OF_PATH = re.compile(rf"\blines?\s+{_LINES}\s+(?:of|in)\s+`?({_PATH})", re.I)
_TOKEN = re.compile(rf"(?<![\w/.\-]){_PATH}")
_TRACE_STEP = re.compile(r"\btrace\s+steps?\s*#?\s*(\d+)(?:\s*(?:[-–,]|and|to)\s*(\d+))?", re.I)
_STEP = re.compile(r"\bsteps?\s*#?\s*(\d+)(?:\s*(?:[-–,]|and|to)\s*(\d+))?", re.I)
_QUOTED = re.compile(r"`([^`\n]{3,300})`|\"([^\"\n]{3,300})\"|“([^”\n]{3,300})”")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")
_ELLIPSIS = re.compile(r"\.\.\.|…")


@dataclass
class EvidenceCheck:
    ok: bool
    citations: list[str] = field(default_factory=list)  # what was cited and found in the tool results
    problems: list[str] = field(default_factory=list)  # what was cited and not found

    def as_dict(self) -> dict:
        return {"ok": self.ok, "citations": self.citations, "problems": self.problems}

    def message(self) -> str:
        """What the judge is told when its evidence does not hold."""
        problems = "; ".join(self.problems) if self.problems else (
            "it cites no file path and line, command and output, or trace step that your tools returned"
        )
        return (
            f"Your evidence cannot be accepted: {problems}. Cite only what your tools returned — a file path and "
            "line (path:line), a command and its output, or a trace step — gathering more evidence first if you "
            "need it. Then answer again in the JSON form asked for."
        )


def _normalise(token: str) -> str:
    token = token.strip().strip("`'\"").rstrip(".,;:)")
    while token.startswith("./"):
        token = token[2:]
    return token.rstrip("/") or "."


def _norm_text(text: str) -> str:
    return " ".join(text.split()).lower()


def _span(first: str, last: str | None) -> range:
    start = int(first)
    end = int(last) if last else start
    if end < start or end - start > 10_000:
        end = start
    return range(start, end + 1)


class _Checker:
    def __init__(self, obs: Observations, workspace_files: set[str], has_trace: bool, allowed_quotes: list[str]):
        self.obs = obs
        self.files = workspace_files
        self.dirs = {f.rsplit("/", 1)[0] for f in workspace_files if "/" in f}
        self.has_trace = has_trace
        self.output_text = _norm_text("\n".join(obs.outputs))
        self.allowed = [_norm_text(q) for q in allowed_quotes]
        self.citations: list[str] = []
        self.problems: list[str] = []

    def known(self, path: str) -> bool:
        return path in self.obs.paths or path in self.obs.lines or path in self.obs.binary or self.obs.saw_absence_of(path)

    def looks_like_path(self, path: str) -> bool:
        return path in self.files or path in self.dirs or self.known(path) or (
            "/" in path and "://" not in path and bool(_EXTENSION.search(path))
        )

    def resolve_name(self, path: str) -> str:
        """A bare file name stands for the one observed path it names."""
        if self.known(path) or "/" in path:
            return path
        named = {p for p in (*self.obs.paths, *self.obs.lines) if p.rsplit("/", 1)[-1] == path}
        return named.pop() if len(named) == 1 else path

    def cite_lines(self, raw_path: str, first: str, last: str | None) -> None:
        path = self.resolve_name(_normalise(raw_path))
        if not self.looks_like_path(path):
            return
        wanted = _span(first, last)
        label = f"{path}:{first}" + (f"-{last}" if last else "")
        if path in self.obs.binary:
            self.citations.append(f"{path} (binary file read)")
        elif not self.known(path):
            self.problems.append(f"it cites {label}, but no tool call looked at {path}")
        elif path in self.obs.lines and all(n in self.obs.lines[path] for n in wanted):
            self.citations.append(label)
        elif self.obs.saw_absence_of(path) and path not in self.files:
            self.citations.append(f"{path} (reported missing)")
        else:
            seen = sorted(self.obs.lines.get(path, ()))
            shown = f" (lines shown: {_ranges(seen)})" if seen else ""
            self.problems.append(
                f"it cites {label}, but no tool showed {'those lines' if last else 'that line'} of {path}{shown}"
            )

    def cite_path(self, raw: str) -> None:
        path = self.resolve_name(_normalise(raw))
        if not self.looks_like_path(path) or path == ".":
            return
        if any(c.startswith(f"{path}:") or c.startswith(f"{path} (") for c in self.citations):
            return
        if path in self.obs.binary:
            self.citations.append(f"{path} (binary file read)")
        elif any(run["path"] == path for run in self.obs.runs):
            self.citations.append(f"{path} (run)")
        elif self.obs.saw_absence_of(path) and path not in self.files and path not in self.dirs:
            self.citations.append(f"{path} (reported missing)")
        elif path in self.obs.listed or (path in self.dirs and self.known(path)):
            self.citations.append(f"{path}/ (listed)")
        elif self.known(path) or _norm_text(path) in self.output_text:
            pass  # named and seen; a bare path of a text file is not a line citation by itself
        elif path in self.files or ("/" in path and _EXTENSION.search(path)):
            # Only what is unmistakably a file: a plain word that happens to name a directory is not.
            self.problems.append(f"it cites {path}, but no tool call looked at it")

    def cite_steps(self, first: str, last: str | None, explicit: bool) -> None:
        if not explicit and not self.has_trace:
            return
        for step in _span(first, last):
            if step in self.obs.steps:
                self.citations.append(f"trace step {step}")
            else:
                self.problems.append(f"it cites trace step {step}, which no tool showed")

    def cite_quote(self, quote: str) -> None:
        fragment = quote.strip()
        if not fragment or self.looks_like_path(_normalise(fragment)):
            return  # a quoted path: checked as a path
        searched = [s for s in self.obs.searches if s["query"].strip().lower() == fragment.lower()]
        if searched:
            self.citations.append(f"search {searched[0]['query']!r} ({searched[0]['matches']} matches)")
            return
        ran = [run for run in self.obs.runs if run["path"] in fragment.split()]
        if ran:
            self.citations.append(f"{ran[0]['path']} (run)")  # a quoted command line: `python train.py`
            return
        pieces = [p for p in (_norm_text(x) for x in _ELLIPSIS.split(fragment)) if len(p) >= 3]
        for piece in pieces:
            if piece in self.output_text or any(piece in allowed for allowed in self.allowed):
                continue
            self.problems.append(f"it quotes {fragment[:80]!r}, which no tool returned")
            return
        if pieces and any(run["output"] and _norm_text(pieces[0]) in _norm_text(run["output"]) for run in self.obs.runs):
            self.citations.append(
                f"output of {next(r['command'] for r in self.obs.runs if _norm_text(pieces[0]) in _norm_text(r['output']))}"
            )


def _ranges(numbers: list[int]) -> str:
    if not numbers:
        return ""
    parts, start, prev = [], numbers[0], numbers[0]
    for n in numbers[1:]:
        if n != prev + 1:
            parts.append(f"{start}-{prev}" if prev != start else str(start))
            start = n
        prev = n
    parts.append(f"{start}-{prev}" if prev != start else str(start))
    return ", ".join(parts[:6]) + (" …" if len(parts) > 6 else "")


def check_evidence(
    evidence: str,
    observations: Observations,
    *,
    workspace_files: set[str] | list[str] = (),
    has_trace: bool = False,
    allowed_quotes: list[str] = (),
) -> EvidenceCheck:
    """Does `evidence` cite what the tools returned? `allowed_quotes`: texts the judge may quote without a
    tool (the task and the requirement)."""
    checker = _Checker(observations, set(workspace_files), has_trace, list(allowed_quotes))
    text = evidence
    for match in _PATH_COLON_LINE.finditer(text):
        checker.cite_lines(match.group(1), match.group(2), match.group(3))
    for match in _PATH_THEN_LINE.finditer(text):
        checker.cite_lines(match.group(1), match.group(2), match.group(3))
    for match in _PATH_HASH_LINE.finditer(text):
        checker.cite_lines(match.group(1), match.group(2), match.group(3))
    for match in _LINE_OF_PATH.finditer(text):
        checker.cite_lines(match.group(3), match.group(1), match.group(2))
    explicit_spans = []
    for match in _TRACE_STEP.finditer(text):
        explicit_spans.append(match.span())
        checker.cite_steps(match.group(1), match.group(2), explicit=True)
    for match in _STEP.finditer(text):
        if not any(start <= match.start() < end for start, end in explicit_spans):
            checker.cite_steps(match.group(1), match.group(2), explicit=False)
    for match in _QUOTED.finditer(text):
        checker.cite_quote(next(g for g in match.groups() if g is not None))
    # Bare paths last: the ones already cited with a line are skipped.
    stripped = _PATH_HASH_LINE.sub(lambda m: m.group(1), _PATH_COLON_LINE.sub(lambda m: m.group(1), text))
    for match in _TOKEN.finditer(stripped):
        checker.cite_path(match.group(0))
    # A command cited by name ("python train.py") is a run of that file.
    for run in observations.runs:
        if run["command"] in text and not any(c.startswith(f"{run['path']} (run)") for c in checker.citations):
            checker.citations.append(f"{run['path']} (run)")
    problems = list(dict.fromkeys(checker.problems))
    citations = list(dict.fromkeys(checker.citations))
    return EvidenceCheck(ok=bool(citations) and not problems, citations=citations, problems=problems)
