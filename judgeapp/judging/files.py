"""Reading the files of CONTRACT §2: test sets (JSONL or CSV), outputs (JSONL), rubrics (TOML or JSON).

Every problem is an InputError whose message is one line naming the file, the line and what is wrong, so
that the CLI can print it and exit 2 and the browser can show it beside the form. Nothing here touches
the database: a file is parsed whole and checked before anything is stored.

Every file is hostile until read: JSON and TOML are refused past MAX_NESTING levels (`[` × 200,000 is one
line, not a RecursionError) and for numbers too long to convert; CSV is read strictly (an unterminated
quote is refused with the line it opens on, a row with too few or too many fields is refused, a header
column named twice is refused); every value that becomes a database field is checked against its
column's length first (`text_check`).
"""

import csv
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import PurePath

from judgeapp.judging.errors import InputError
from judgeapp.judging.text import escapes_no_text, printable, strings_check, text_refuse

# JSON arrays and objects (or TOML tables and arrays) deeper than this are refused: no file the app reads
# needs more than a few levels, and the parsers recurse.
MAX_NESTING = 32
# Database column lengths of the values read here (judgeapp/models/content.py). A case id also builds the
# judgment keys `<case id>/<criterion>` and `<case id>/<juror>` (300 characters), hence 150.
MAX_CASE_ID = 150
MAX_RUBRIC_NAME = 200
MAX_CRITERION_NAME = 100
MAX_TESTSET_NAME = 200
# A case's `tags` (slices of a test set: "long input", "german", "refund"): a few short labels, since every
# figure is computed once per tag and shown on the pages.
MAX_TAGS = 20
MAX_TAG_LENGTH = 50
# A CSV cell holds a case's tags as one text, separated by this character.
CSV_TAG_SEPARATOR = ";"
# The Pointwise seed: "a rubric with a 1-5 scale per criterion and an example of each score".
SCALE = (1, 5)


def _depth(value) -> int:
    """How deeply arrays and objects nest in a parsed document (iterative: the document may be deep)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children = current.values()
        elif isinstance(current, list):
            children = current
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _nesting_check(doc, where: str):
    if _depth(doc) > MAX_NESTING:
        raise InputError(f"{where}: nested more than {MAX_NESTING} levels deep")
    return doc


def json_load(text: str, where: str):
    """JSON, or one line saying what is wrong: invalid, nested too deep, a number too long."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        line = "" if " line " in where else f"line {exc.lineno}: "
        raise InputError(f"{where}: not valid JSON ({line}{exc.msg})") from None
    except RecursionError:
        raise InputError(f"{where}: nested more than {MAX_NESTING} levels deep") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise InputError(f"{where}: not valid JSON ({str(exc).split(':')[0]})") from None
    _nesting_check(doc, where)
    if escapes_no_text(text):  # `\u0000` and `\ud800` are valid JSON escapes, and no text a database can keep
        strings_check(doc, where, None if " line " in where else text)
    return doc


def toml_load(text: str, where: str) -> dict:
    """TOML, or one line saying what is wrong: invalid, nested too deep, a number too long."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where}: not valid TOML ({exc})") from None
    except RecursionError:
        raise InputError(f"{where}: nested more than {MAX_NESTING} levels deep") from None
    except ValueError as exc:
        raise InputError(f"{where}: not valid TOML ({str(exc).split(':')[0]})") from None
    _nesting_check(doc, where)
    if escapes_no_text(text):  # TOML's `\u0000` escape
        strings_check(doc, where, text)
    return doc


def text_check(value, where: str, what: str, *, max_length: int) -> str:
    """A text that goes into a database column of `max_length` characters, refused (not cut) when longer."""
    if len(value) > max_length:
        raise InputError(f"{where}: {what} is {len(value):,} characters long, over the limit of {max_length:,}")
    return value


def decode_text(data: bytes, name: str, *, max_bytes: int | None = None) -> str:
    """UTF-8 text of a file, refusing empty, binary and over-long files, and a file name that is no text."""
    text_refuse(name, f"the file name '{printable(name)}'")
    if max_bytes is not None and len(data) > max_bytes:
        raise InputError(f"{name}: {len(data):,} bytes is over the limit of {max_bytes:,} (ARTIFACT_MAX_BYTES)")
    if not data.strip():
        raise InputError(f"{name}: the file is empty")
    nul = data.find(b"\x00")
    if nul >= 0:  # anywhere: a NUL byte deep in a file is not text either
        line = data.count(b"\n", 0, nul) + 1
        raise InputError(f"{name} line {line}: looks like a binary file (it has NUL bytes); expected text")
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


def _check_rows(rows, name: str, *, needs_input: bool = True, limit: int | None = None):
    """The cases of `rows` ((line, {column: value}) pairs), checked one at a time as they are read: one
    CaseRow at a time is made (a test set is stored without a list of its cases), and a test set past
    `limit` cases is refused at the first case over it, before the rest is read."""
    seen: dict[str, int] = {}
    for line_no, row in rows:
        where = f"{name} line {line_no}"
        if limit is not None and len(seen) >= limit:
            raise InputError(f"test set {name} has more than {limit:,} cases (MAX_TESTSET_CASES)")
        if "id" not in row or row["id"] in (None, ""):
            raise InputError(f"{where}: missing column 'id'")
        if isinstance(row["id"], (dict, list, bool)):
            raise InputError(f"{where}: 'id' must be a text or a number")
        case_id = str(row["id"]).strip()
        if not case_id:
            raise InputError(f"{where}: missing column 'id'")
        text_check(case_id, where, "the id", max_length=MAX_CASE_ID)
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
        extra = {k: v for k, v in row.items() if k not in ("id", "input", "output", "tags")}
        tags = tags_parse(row.get("tags"), where)
        if tags:
            extra["tags"] = tags
        yield CaseRow(case_id, row.get("input") or "", output if output not in ("",) else None, extra)
    if not seen:
        raise InputError(f"{name}: no cases")


def tags_parse(value, where: str) -> list[str]:
    """A case's tags: a JSON list of short texts, or (a CSV cell) one text of tags separated by ";". Blank
    and repeated tags are dropped, the rest kept in the order given; anything else is one line naming it."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = value.split(CSV_TAG_SEPARATOR)
    if not isinstance(value, list):
        raise InputError(f"{where}: 'tags' must be a list of texts")
    if len(value) > MAX_TAGS:
        raise InputError(f"{where}: {len(value)} tags, over the limit of {MAX_TAGS}")
    tags: list[str] = []
    for position, tag in enumerate(value, start=1):
        if not isinstance(tag, str):
            raise InputError(f"{where}: tag {position} must be a text, got {json.dumps(tag)[:40]}")
        tag = " ".join(tag.split())
        text_check(tag, where, f"tag {position}", max_length=MAX_TAG_LENGTH)
        if tag and tag not in tags:
            tags.append(tag)
    return tags


# A line with its ending (\n, \r\n or \r), or the last line without one.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def text_lines(text: str):
    """The lines of a text one at a time, each with its ending, as a file opened with newline="" gives them
    (what the csv module reads). Not io.StringIO: it copies the text at four bytes a character (130 MB for
    a 32 MB test set), and not splitlines: a list of every line."""
    return (match.group() for match in _LINE.finditer(text))


def _jsonl_rows(text: str, name: str):
    """(line, object) for every non-blank line, read one line at a time."""
    for line_no, line in enumerate(text_lines(text), start=1):
        if not line.strip():
            continue
        row = json_load(line, f"{name} line {line_no}")
        if not isinstance(row, dict):
            raise InputError(f"{name} line {line_no}: expected a JSON object")
        yield line_no, row


def _csv_rows(text: str, name: str):
    """CSV rows as {column: value} with the line each row starts on, read strictly: a quoted field that is
    never closed, a stray quote, a row with too few or too many fields, a header column named twice or
    not at all are refused, never merged into the next row or dropped."""
    return ((line_no, dict(zip(header, values))) for header, line_no, values in csv_records(text, name))


def csv_records(text: str, name: str):
    """(header, line, values) for every non-blank row of a CSV text; see _csv_rows."""
    reader = csv.reader(text_lines(text), strict=True)
    header = None
    while True:
        start = reader.line_num + 1  # the row about to be read starts on the line after the last one read
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError(f"{name} line {start}: {_csv_problem(exc)}") from None
        if not values or (len(values) == 1 and not values[0].strip()):
            continue  # a blank line
        if header is None:
            header = [h.strip() for h in values]
            for position, column in enumerate(header, start=1):
                if not column:
                    raise InputError(f"{name} line {start}: header column {position} has no name")
                if header.index(column) != position - 1:
                    raise InputError(f"{name} line {start}: header column {column!r} appears twice")
            continue
        if len(values) != len(header):
            more = "more" if len(values) > len(header) else "fewer"
            raise InputError(f"{name} line {start}: {len(values)} fields, {more} than the header's {len(header)}")
        yield header, start, values
    if header is None:
        raise InputError(f"{name}: no header row")


def _csv_problem(exc: csv.Error) -> str:
    message = str(exc)
    if "unexpected end of data" in message or "EOF" in message:
        return "a quoted field is never closed (an unterminated quote); close it or double the quote inside it"
    if "expected after" in message:
        return 'a quote inside a quoted field must be doubled ("")'
    if "field larger than field limit" in message:
        return f"a field is longer than {csv.field_size_limit():,} characters"
    if "NUL" in message:
        return "the line holds a NUL byte"
    return f"not valid CSV ({message})"


def testset_rows(data: bytes, name: str, *, max_cases: int | None = None):
    """A test set's cases one at a time, each checked as it is read: JSONL `{"id", "input", "output"?}` or
    CSV with the same columns; past `max_cases` cases (MAX_TESTSET_CASES, judging/content.py) the first
    case over it is refused, and nothing after it is read."""
    text_check(PurePath(name).stem, name, "the file name (the test set's name)", max_length=MAX_TESTSET_NAME)
    text = decode_text(data, name)
    rows = _csv_rows(text, name) if PurePath(name).suffix.lower() == ".csv" else _jsonl_rows(text, name)
    return _check_rows(rows, name, limit=max_cases)


def parse_outputs(data: bytes, name: str) -> dict[str, str]:
    """One version's outputs: JSONL `{"id", "output"}` -> {id: output}."""
    text = decode_text(data, name)
    outputs: dict[str, str] = {}
    for line_no, row in _jsonl_rows(text, name):
        if "id" not in row:
            raise InputError(f"{name} line {line_no}: missing 'id'")
        if not isinstance(row.get("output"), str):
            raise InputError(f"{name} line {line_no}: missing 'output' (a text)")
        if isinstance(row["id"], (dict, list, bool)) or row["id"] is None:
            raise InputError(f"{name} line {line_no}: 'id' must be a text or a number")
        case_id = str(row["id"]).strip()
        text_check(case_id, f"{name} line {line_no}", "the id", max_length=MAX_CASE_ID)
        if case_id in outputs:
            raise InputError(f"{name}: duplicate id {case_id!r} (line {line_no})")
        outputs[case_id] = row["output"]
    if not outputs:
        raise InputError(f"{name}: no outputs")
    return outputs


def ids_shown(ids: list[str], first: int) -> str:
    """The first ids of a list for a one-line message: "a, b, c and 7 more"."""
    return ", ".join(ids[:first]) + (f" and {len(ids) - first} more" if len(ids) > first else "")


def unknown_ids_refuse(given, known: set[str], name: str, version: str = "") -> None:
    """Refuse an outputs file with replies for ids the test set does not have (CONTRACT §2): one line with
    the first ten of them and their count. `version`: pairwise's ` (version A)`."""
    unknown = [case_id for case_id in given if case_id not in known]
    if unknown:
        raise InputError(
            f"{name}: {len(unknown)} output(s) for id(s) not in the test set: {ids_shown(unknown, 10)}{version}; "
            "remove them or judge them with the test set they belong to"
        )


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


_SCORE_KEY = re.compile(r"[0-9]{1,6}")


def _score_map(value, where: str, what: str) -> dict[str, str]:
    """A table of score = text, keyed by the integer scores. A key written two ways (`5` and `05`) is
    refused: the two texts would silently become one."""
    if not isinstance(value, dict) or not value:
        raise InputError(f"{where}: '{what}' must be a table of score = text")
    out: dict[str, str] = {}
    written: dict[str, str] = {}
    for key, text in value.items():
        key_text = str(key).strip()
        if not _SCORE_KEY.fullmatch(key_text):
            raise InputError(f"{where}: '{what}' key {key!r} is not an integer score (use {SCALE[0]} to {SCALE[1]})")
        point = str(int(key_text))
        if point in written:
            raise InputError(f"{where}: '{what}' gives score {point} twice (keys {written[point]!r} and {key!r})")
        written[point] = key
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: '{what}' for score {point} must be a non-empty text")
        _filled_check(text, where, f"'{what}' for score {point}")
        out[point] = text.strip()
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


# What the rubric helper writes where a person's words must go: a rubric holding one is refused.
FILL_IN = "FILL IN"


def _filled_check(text: str, where: str, what: str) -> None:
    if FILL_IN in text:
        raise InputError(f"{where}: {what} still says {FILL_IN!r}; write your own words there before the rubric is used")


_SKELETON_SCALE = {
    1: "what a reply that scores 1 (the worst) does or misses",
    2: "what a reply that scores 2 does or misses",
    3: "what a reply that scores 3 (acceptable) does or misses",
    4: "what a reply that scores 4 does or misses",
    5: "what a reply that scores 5 (the best) does",
}
MAX_SKELETON_CRITERION = 500
_SKELETON_STOP_WORDS = {
    "is", "are", "the", "a", "an", "of", "to", "does", "do", "it", "its", "and", "or", "in", "on", "for", "with", "reply",
}


def _toml_string(value: str) -> str:
    # A JSON string is a TOML basic string, but for DEL, which TOML wants escaped.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def rubric_skeleton(criterion: str) -> str:
    """A rubric in the TOML format `parse_rubric` reads, drafted from one sentence: the sentence as the
    criterion's description, the 1-5 scale and an example per score, each a FILL_IN line to replace (the
    rubric is refused until none is left)."""
    sentence = " ".join((criterion or "").split())
    if not sentence:
        raise InputError("give the criterion in one sentence, e.g. \"Is the summary faithful to the source?\"")
    if len(sentence) > MAX_SKELETON_CRITERION:
        raise InputError(
            f"the criterion is {len(sentence):,} characters; one sentence of at most {MAX_SKELETON_CRITERION} is expected"
        )
    text_refuse(sentence, "the criterion")
    words = [w for w in re.findall(r"[a-z0-9]+", sentence.lower()) if w not in _SKELETON_STOP_WORDS]
    name = "-".join(words[:3]) or "criterion"
    lines = [
        f"# A rubric drafted from one criterion. Replace every {FILL_IN} with your own words: the rubric is refused",
        "# while one is left. Each score needs what it means (scale) and an example reply that earns it (examples).",
        f"name = {_toml_string(name)}",
        "",
        "[[criteria]]",
        f"name = {_toml_string(name)}",
        f"description = {_toml_string(sentence)}",
        "",
        "[criteria.scale]",
        *(f'{point} = "{FILL_IN}: {meaning}"' for point, meaning in _SKELETON_SCALE.items()),
        "",
        "[criteria.examples]",
        *(f'{point} = "{FILL_IN}: an example reply that scores {point}"' for point in _SKELETON_SCALE),
    ]
    return "\n".join(lines) + "\n"


def parse_rubric(data: bytes, name: str) -> RubricSpec:
    """A rubric: TOML or JSON with `name` and `[[criteria]]` (name, description, scale, examples)."""
    rubric_name, criteria_doc = rubric_document(data, name)
    criteria: list[CriterionSpec] = []
    warnings: list[str] = []
    seen = set()
    for i, c in enumerate(criteria_doc, start=1):
        criterion = criterion_parse(c, i, name)
        if criterion.name in seen:
            raise InputError(f"{name}: criterion {criterion.name!r} appears twice")
        seen.add(criterion.name)
        warning = criterion_warning(criterion)
        if warning:
            warnings.append(warning)
        criteria.append(criterion)
    return RubricSpec(rubric_name, criteria, warnings)


def rubric_document(data: bytes, name: str) -> tuple[str, list]:
    """A rubric file's `name` and its `criteria` list, each criterion not yet checked (`criterion_parse`)."""
    text = decode_text(data, name)
    doc = json_load(text, name) if PurePath(name).suffix.lower() == ".json" else toml_load(text, name)
    if not isinstance(doc, dict):
        raise InputError(f"{name}: expected a table with 'name' and 'criteria'")
    rubric_name = doc.get("name")
    if not isinstance(rubric_name, str) or not rubric_name.strip():
        raise InputError(f"{name}: missing 'name'")
    text_check(rubric_name.strip(), name, "the rubric's 'name'", max_length=MAX_RUBRIC_NAME)
    criteria_doc = doc.get("criteria")
    if not isinstance(criteria_doc, list) or not criteria_doc:
        raise InputError(f"{name}: missing 'criteria' (at least one [[criteria]] table)")
    return rubric_name.strip(), criteria_doc


def criterion_parse(c, i: int, name: str) -> CriterionSpec:
    """The `i`-th criterion (from 1) of the rubric file `name`, checked: InputError names what is wrong."""
    where = f"{name} criterion {i}"
    if not isinstance(c, dict):
        raise InputError(f"{where}: expected a table")
    cname = c.get("name")
    if not isinstance(cname, str) or not cname.strip():
        raise InputError(f"{where}: missing 'name'")
    cname = cname.strip()
    text_check(cname, where, "the criterion's 'name'", max_length=MAX_CRITERION_NAME)
    where = f"{name} criterion {cname!r}"
    description = c.get("description")
    if not isinstance(description, str) or not description.strip():
        raise InputError(f"{where}: missing 'description'")
    _filled_check(description, where, "'description'")
    if "scale" not in c:
        raise InputError(
            f"{where}: missing 'scale' (the meaning of each score 1-5); the rubric helper drafts one from the "
            "criterion for you to fill in (the form's \"Draft a rubric\" button, or manage.py rubric-skeleton)"
        )
    scale = _score_map(c["scale"], where, "scale")
    points = [int(k) for k in scale]
    expected = list(range(SCALE[0], SCALE[1] + 1))
    if points != expected:
        raise InputError(
            f"{where}: 'scale' must define exactly the scores {SCALE[0]} to {SCALE[1]} (the Pointwise "
            f"1-5 scale), got {_describe_points(points)}"
        )
    examples = _score_map(c["examples"], where, "examples") if "examples" in c else {}
    unknown = set(examples) - set(scale)
    if unknown:
        raise InputError(f"{where}: examples for scores not on the scale: {', '.join(sorted(unknown))}")
    return CriterionSpec(cname, description.strip(), scale, examples)


def criterion_warning(criterion: CriterionSpec) -> str:
    """What a valid criterion still lacks (an example for every score), or ""."""
    if set(criterion.examples) != set(criterion.scale):
        return f"criterion {criterion.name!r} has no example for every score (one example for each score is expected)"
    return ""


def _describe_points(points: list[int]) -> str:
    if len(points) > 12:
        return f"{len(points):,} scores from {points[0]} to {points[-1]}"
    return ", ".join(str(p) for p in points)


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
