"""Reading the files of CONTRACT §2: test sets (JSONL or CSV), outputs (JSONL), rubrics (TOML or JSON).

Every problem is an InputError whose message is one line naming the file, the line and what is wrong, so
that the CLI can print it and exit 2 and the browser can show it beside the form. Nothing here touches
the database: a file is parsed whole and checked before anything is stored.
"""

import csv
import io
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import PurePath

from judgeapp.judging.errors import InputError


def decode_text(data: bytes, name: str, *, max_bytes: int | None = None) -> str:
    """UTF-8 text of a file, refusing empty, binary and over-long files."""
    if max_bytes is not None and len(data) > max_bytes:
        raise InputError(f"{name}: {len(data):,} bytes is over the limit of {max_bytes:,} (ARTIFACT_MAX_BYTES)")
    if not data.strip():
        raise InputError(f"{name}: the file is empty")
    if b"\x00" in data[:8192]:
        raise InputError(f"{name}: looks like a binary file (it has NUL bytes); expected text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text (byte {exc.start})") from None


@dataclass
class CaseRow:
    case_id: str
    input: str
    output: str | None = None
    extra: dict = field(default_factory=dict)


def _check_rows(rows: list[tuple[int, dict]], name: str, *, needs_input: bool = True) -> list[CaseRow]:
    seen: dict[str, int] = {}
    cases: list[CaseRow] = []
    for line_no, row in rows:
        where = f"{name} line {line_no}"
        if "id" not in row or row["id"] in (None, ""):
            raise InputError(f"{where}: missing column 'id'")
        case_id = str(row["id"]).strip()
        if case_id in seen:
            raise InputError(f"{name}: duplicate id {case_id!r} on lines {seen[case_id]} and {line_no}")
        seen[case_id] = line_no
        if needs_input:
            if "input" not in row or row["input"] is None:
                raise InputError(f"{where}: missing column 'input'")
            if not isinstance(row["input"], str) or not row["input"].strip():
                raise InputError(f"{where}: 'input' must be a non-empty text")
        output = row.get("output")
        if output is not None and not isinstance(output, str):
            raise InputError(f"{where}: 'output' must be a text")
        extra = {k: v for k, v in row.items() if k not in ("id", "input", "output")}
        cases.append(CaseRow(case_id, row.get("input") or "", output if output not in ("",) else None, extra))
    if not cases:
        raise InputError(f"{name}: no cases")
    return cases


def _jsonl_rows(text: str, name: str) -> list[tuple[int, dict]]:
    rows = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{name} line {line_no}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise InputError(f"{name} line {line_no}: expected a JSON object")
        rows.append((line_no, row))
    return rows


def _csv_rows(text: str, name: str) -> list[tuple[int, dict]]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise InputError(f"{name}: no header row")
    rows = []
    for row in reader:
        if None in row:
            raise InputError(f"{name} line {reader.line_num}: more fields than the header has")
        rows.append((reader.line_num, {k.strip(): v for k, v in row.items()}))
    return rows


def parse_testset(data: bytes, name: str) -> list[CaseRow]:
    """A test set: JSONL `{"id", "input", "output"?}` or CSV with the same columns."""
    text = decode_text(data, name)
    if PurePath(name).suffix.lower() == ".csv":
        return _check_rows(_csv_rows(text, name), name)
    return _check_rows(_jsonl_rows(text, name), name)


def parse_outputs(data: bytes, name: str) -> dict[str, str]:
    """One version's outputs: JSONL `{"id", "output"}` -> {id: output}."""
    text = decode_text(data, name)
    outputs: dict[str, str] = {}
    for line_no, row in _jsonl_rows(text, name):
        if "id" not in row:
            raise InputError(f"{name} line {line_no}: missing 'id'")
        if not isinstance(row.get("output"), str):
            raise InputError(f"{name} line {line_no}: missing 'output' (a text)")
        case_id = str(row["id"])
        if case_id in outputs:
            raise InputError(f"{name}: duplicate id {case_id!r} (line {line_no})")
        outputs[case_id] = row["output"]
    if not outputs:
        raise InputError(f"{name}: no outputs")
    return outputs


@dataclass
class CriterionSpec:
    name: str
    description: str
    scale: dict[str, str]
    examples: dict[str, str]

    @property
    def bounds(self) -> tuple[int, int]:
        points = sorted(int(k) for k in self.scale)
        return points[0], points[-1]


@dataclass
class RubricSpec:
    name: str
    criteria: list[CriterionSpec]
    warnings: list[str] = field(default_factory=list)


def _score_map(value, where: str, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not value:
        raise InputError(f"{where}: '{what}' must be a table of score = text")
    out = {}
    for key, text in value.items():
        try:
            point = int(str(key))
        except ValueError:
            raise InputError(f"{where}: '{what}' key {key!r} is not an integer score") from None
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: '{what}' for score {point} must be a non-empty text")
        out[str(point)] = text.strip()
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def parse_rubric(data: bytes, name: str) -> RubricSpec:
    """A rubric: TOML or JSON with `name` and `[[criteria]]` (name, description, scale, examples)."""
    text = decode_text(data, name)
    if PurePath(name).suffix.lower() == ".json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{name}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    else:
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{name}: not valid TOML ({exc})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{name}: expected a table with 'name' and 'criteria'")
    rubric_name = doc.get("name")
    if not isinstance(rubric_name, str) or not rubric_name.strip():
        raise InputError(f"{name}: missing 'name'")
    criteria_doc = doc.get("criteria")
    if not isinstance(criteria_doc, list) or not criteria_doc:
        raise InputError(f"{name}: missing 'criteria' (at least one [[criteria]] table)")
    criteria: list[CriterionSpec] = []
    warnings: list[str] = []
    seen = set()
    for i, c in enumerate(criteria_doc, start=1):
        where = f"{name} criterion {i}"
        if not isinstance(c, dict):
            raise InputError(f"{where}: expected a table")
        cname = c.get("name")
        if not isinstance(cname, str) or not cname.strip():
            raise InputError(f"{where}: missing 'name'")
        cname = cname.strip()
        where = f"{name} criterion {cname!r}"
        if cname in seen:
            raise InputError(f"{name}: criterion {cname!r} appears twice")
        seen.add(cname)
        description = c.get("description")
        if not isinstance(description, str) or not description.strip():
            raise InputError(f"{where}: missing 'description'")
        if "scale" not in c:
            raise InputError(f"{where}: missing 'scale' (the meaning of each score 1-5)")
        scale = _score_map(c["scale"], where, "scale")
        points = [int(k) for k in scale]
        if points != list(range(points[0], points[-1] + 1)) or len(points) < 2:
            raise InputError(f"{where}: 'scale' must define every score of a range such as 1-5, got {points}")
        examples = _score_map(c["examples"], where, "examples") if "examples" in c else {}
        unknown = set(examples) - set(scale)
        if unknown:
            raise InputError(f"{where}: examples for scores not on the scale: {', '.join(sorted(unknown))}")
        if set(examples) != set(scale):
            warnings.append(f"criterion {cname!r} has no example for every score (the seed asks for one each)")
        criteria.append(CriterionSpec(cname, description.strip(), scale, examples))
    return RubricSpec(rubric_name.strip(), criteria, warnings)


def render_criterion(criterion: CriterionSpec) -> str:
    """One criterion as the judge reads it inside <rubric>: what it asks, each score, an example of each."""
    lines = [f"Criterion: {criterion.name}", criterion.description, "", "Scale:"]
    lines += [f"{point} = {meaning}" for point, meaning in criterion.scale.items()]
    if criterion.examples:
        lines += ["", "Examples:"]
        lines += [f"Score {point}: {example}" for point, example in criterion.examples.items()]
    return "\n".join(lines)


def render_rubric(criteria: list[CriterionSpec]) -> str:
    """A whole rubric (pairwise and jury judge against all its criteria at once)."""
    return "\n\n".join(render_criterion(c) for c in criteria)
