"""The agent judge's inputs besides the workspace: the task, the numbered requirements, the trace.

Each reader takes the file's bytes and name and returns clean values, or raises InputError with one line
naming the file, the line and what is wrong (the CLI prints it and exits 2; the browser shows it by the
form). DevAI's task files (the Agent-as-a-Judge benchmark) are read as they are: their `query` is the
task and their `requirements[].criteria` the checklist, and their trajectories (a JSON array of steps)
are a trace.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import PurePath

from judgeapp.judging.errors import InputError
from judgeapp.judging.files import decode_text, json_load

MAX_REQUIREMENTS = 200
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,49}$")
_NUMBERED = re.compile(r"^\s*(?:[-*+]\s+)?(?:\[[ xX]?\]\s+)?(?:R|REQ-?)?(\d{1,4})[.):]\s+(\S.*)$", re.I)
EXAMPLE = "'1. saves the plot to out/accuracy.png'"


@dataclass(frozen=True)
class Requirement:
    id: str
    text: str

    def as_dict(self) -> dict:
        return {"id": self.id, "text": self.text}


def _json(text: str, name: str):
    return json_load(text, name)  # nesting and number limits: judgeapp/judging/files.py


def parse_task(data: bytes, name: str) -> str:
    """The task statement: a text or Markdown file, or a JSON object with `query` (DevAI) or `task`."""
    text = decode_text(data, name)
    if PurePath(name).suffix.lower() == ".json":
        doc = _json(text, name)
        value = doc.get("query") or doc.get("task") if isinstance(doc, dict) else None
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{name}: a JSON task needs a 'query' or 'task' text")
        return value.strip()
    return text.strip()


def _requirement(raw_id, text, where: str) -> Requirement:
    rid = str(raw_id).strip()
    if not _ID.match(rid):
        raise InputError(f"{where}: requirement id {rid!r}: use letters, digits, '.', '_' and '-' (at most 50)")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: requirement {rid} has no text")
    return Requirement(rid, " ".join(text.split()))


def _from_json_items(items, name: str) -> list[Requirement]:
    if not isinstance(items, list):
        raise InputError(f"{name}: expected a list of requirements")
    found = []
    for position, item in enumerate(items, start=1):
        where = f"{name} item {position}"
        if isinstance(item, str):
            found.append(_requirement(position, item, where))
        elif isinstance(item, dict):
            rid = item.get("id", item.get("requirement_id", position))
            found.append(_requirement(rid, item.get("text", item.get("criteria")), where))
        else:
            raise InputError(f"{where}: expected a text or an object with 'id' and 'text'")
    return found


def _from_numbered_lines(text: str, name: str) -> list[Requirement]:
    found: list[list] = []  # [id, text, line]
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if line.lstrip().startswith("#"):
            continue  # a Markdown heading
        match = _NUMBERED.match(line)
        if match:
            found.append([match.group(1), match.group(2).strip(), line_no])
        elif found:
            found[-1][1] += " " + line.strip()  # a requirement continued on the next line
        else:
            raise InputError(f"{name} line {line_no}: expected a numbered requirement such as {EXAMPLE}")
    return [_requirement(rid, body, f"{name} line {line_no}") for rid, body, line_no in found]


def parse_requirements(data: bytes, name: str) -> list[Requirement]:
    """A numbered checklist: lines `1. …` (text or Markdown), a JSON list (texts, or objects with `id` and
    `text`), JSONL of such objects, or a DevAI task file (`requirements[].criteria`)."""
    text = decode_text(data, name)
    suffix = PurePath(name).suffix.lower()
    if suffix == ".json":
        doc = _json(text, name)
        if isinstance(doc, dict):
            if "requirements" not in doc:
                raise InputError(f"{name}: a JSON object needs a 'requirements' list")
            doc = doc["requirements"]
        requirements = _from_json_items(doc, name)
    elif suffix == ".jsonl":
        rows = []
        for line_no, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                row = _json(line, f"{name} line {line_no}")
                if not isinstance(row, dict):
                    raise InputError(f"{name} line {line_no}: expected an object with 'id' and 'text'")
                rows.append(row)
        requirements = _from_json_items(rows, name)
    else:
        requirements = _from_numbered_lines(text, name)
    if not requirements:
        raise InputError(f"{name}: no requirements; write a numbered checklist such as {EXAMPLE}")
    if len(requirements) > MAX_REQUIREMENTS:
        raise InputError(f"{name}: {len(requirements)} requirements, more than {MAX_REQUIREMENTS}")
    seen: dict[str, int] = {}
    for position, requirement in enumerate(requirements, start=1):
        if requirement.id in seen:
            raise InputError(f"{name}: requirement {requirement.id} appears twice (items {seen[requirement.id]} and {position})")
        seen[requirement.id] = position
    return requirements


# --- The trace ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceStep:
    id: int  # the step's own "step" number when every step has one, else its position from 1
    data: object

    @property
    def text(self) -> str:
        return json.dumps(self.data, ensure_ascii=False, indent=2)

    @property
    def flat(self) -> str:
        return json.dumps(self.data, ensure_ascii=False)


@dataclass(frozen=True)
class Trace:
    steps: tuple[TraceStep, ...]

    def get(self, step_id: int) -> TraceStep | None:
        for step in self.steps:
            if step.id == step_id:
                return step
        return None

    def to_jsonl(self) -> str:
        return "".join(step.flat + "\n" for step in self.steps)


def parse_trace(data: bytes, name: str, *, max_bytes: int | None = None) -> Trace:
    """A trace: JSONL, one step (an object) a line, or a JSON array of steps (DevAI trajectories)."""
    text = decode_text(data, name, max_bytes=max_bytes)
    stripped = text.lstrip()
    objects: list = []
    if stripped.startswith("["):
        doc = _json(text, name)
        if not isinstance(doc, list):
            raise InputError(f"{name}: a trace is a JSON array of steps, or JSONL")
        for position, item in enumerate(doc, start=1):
            if not isinstance(item, dict):
                raise InputError(f"{name} item {position}: a trace step must be a JSON object")
            objects.append(item)
    else:
        for line_no, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = json_load(line, f"{name} line {line_no}")
            except InputError as exc:
                raise InputError(f"{exc}; a trace is JSONL, one step a line") from None
            if not isinstance(item, dict):
                raise InputError(f"{name} line {line_no}: a trace step must be a JSON object")
            objects.append(item)
    if not objects:
        raise InputError(f"{name}: the trace has no steps")
    own = [o.get("step") for o in objects]
    if all(isinstance(s, int) and not isinstance(s, bool) for s in own) and len(set(own)) == len(own):
        ids = own
    else:
        ids = list(range(1, len(objects) + 1))
    return Trace(tuple(TraceStep(i, o) for i, o in zip(ids, objects)))
