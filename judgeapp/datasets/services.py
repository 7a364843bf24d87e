"""Datasets stored by name (issue #29): an upload previewed before anything is stored, then saved as a new
version of a name; a system version's outputs."""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from django.conf import settings
from django.db import transaction

from judgeapp.judging.content import testset_cases, testset_store
from judgeapp.judging.errors import InputError, refused_when_disk_full
from judgeapp.judging.files import MAX_TESTSET_NAME, CaseRow, testset_rows
from judgeapp.judging.text import text_refuse
from judgeapp.models import Rubric, TestSet

PREVIEW_ROWS = 10
PREVIEW_PROBLEMS = 200  # invalid lines listed on the page; the count says how many more
PENDING_SECONDS = 3600  # an upload previewed and never saved is removed after this
TOKEN = re.compile(r"[A-Za-z0-9_-]{32,64}")
SUFFIXES = (".jsonl", ".csv")


def _pending_dir() -> Path:
    return Path(settings.DATA_DIR) / "pending-uploads"


@dataclass
class Preview:
    token: str
    file_name: str
    valid: int = 0
    rows: list[CaseRow] = field(default_factory=list)
    problems: list[tuple[int | None, str]] = field(default_factory=list)  # (line number, reason)
    problem_count: int = 0

    @property
    def savable(self) -> bool:
        return self.valid > 0 and self.problem_count == 0


def _problem(preview: Preview | OutputsPreview | RubricPreview, line: int | str | None, reason: str) -> None:
    preview.problem_count += 1
    if len(preview.problems) < PREVIEW_PROBLEMS:
        preview.problems.append((line, reason))


def _reason(message: str, name: str, where: str = "line 1") -> str:
    """A parse error without the file's name and the place it names (the page says the place): a line parsed on
    its own is its "line 1", a criterion is named by its number or its name."""
    for prefix in (f"{name} {where}: ", f"{name}: "):
        if message.startswith(prefix):
            return message[len(prefix):]
    return message


def preview_of(data: bytes, name: str, token: str = "") -> Preview:
    """Every line of a test set file checked on its own: the first rows, every invalid line with its number
    and reason, the count of valid cases. Stores nothing. A CSV is read whole (its first problem is named)."""
    preview = Preview(token=token, file_name=name)
    if PurePath(name).suffix.lower() not in SUFFIXES:
        _problem(preview, None, "a test set is a .jsonl or .csv file")
        return preview
    if PurePath(name).suffix.lower() == ".csv":
        try:
            for row in testset_cases(data, name):
                preview.valid += 1
                if len(preview.rows) < PREVIEW_ROWS:
                    preview.rows.append(row)
        except InputError as exc:
            _problem(preview, None, str(exc))
        return preview
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        _problem(preview, None, "not UTF-8 text")
        return preview
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows = list(testset_rows(line.encode("utf-8"), name))
        except InputError as exc:
            _problem(preview, number, _reason(str(exc), name))
            continue
        for row in rows:
            if row.case_id in first_line:
                _problem(preview, number, f"duplicate id {row.case_id!r} (first on line {first_line[row.case_id]})")
                continue
            first_line[row.case_id] = number
            preview.valid += 1
            if len(preview.rows) < PREVIEW_ROWS:
                preview.rows.append(row)
        if preview.valid > settings.MAX_TESTSET_CASES:
            _problem(preview, number, f"over {settings.MAX_TESTSET_CASES:,} cases (MAX_TESTSET_CASES)")
            break
    if not preview.valid and not preview.problem_count:
        _problem(preview, None, "no cases")
    return preview


def _pending_expired(path: Path) -> bool:
    """Removes an upload previewed and left unsaved for over PENDING_SECONDS; whether it did."""
    try:
        if path.stat().st_mtime < time.time() - PENDING_SECONDS:
            path.unlink()
            return True
    except OSError:
        pass
    return False


def _pending_clean() -> None:
    """Uploads previewed and left unsaved for over an hour are removed."""
    folder = _pending_dir()
    if folder.is_dir():
        for path in folder.iterdir():
            _pending_expired(path)


@refused_when_disk_full
def testset_preview(*, data: bytes, name: str) -> Preview:
    """Keep the upload aside under a random token (DATA_DIR/pending-uploads, never in the database) and preview
    it: step one of two. Nothing is stored as a test set until `testset_save_named`."""
    return preview_of(data, name, _pending_keep(data, name))


def name_check(name: str, what: str = "test set", limit: int = MAX_TESTSET_NAME) -> str:
    name = (name or "").strip()
    if not name:
        raise InputError(f"give the {what} a name")
    text_refuse(name, "the name")
    if len(name) > limit or "/" in name or "\\" in name or any(c in name for c in "\r\n\t"):
        raise InputError(f"the name must be one line of at most {limit} characters, without / or \\")
    return name


def _pending_read(token: str) -> tuple[Path, bytes]:
    """The upload a preview kept under `token` (its path and bytes); InputError when it is unknown or gone."""
    if not TOKEN.fullmatch(token or ""):
        raise InputError("that upload is not known here: upload the file again")
    path = _pending_dir() / token
    if not path.is_file() or _pending_expired(path):
        raise InputError("that upload has expired or was already saved: upload the file again")
    return path, path.read_bytes()


def _version_stored(model, name: str, store, created_by) -> tuple:
    """`store()`, which stores a test set or a rubric under `name` (or finds the same content there), in one
    transaction: (the row, its version number within the name, whether it is new). A new version records who
    saved it when a person did."""
    from judgeapp.judging.selectors import version_numbers_for_model

    with transaction.atomic():
        known = set(model.objects.filter(name=name).values_list("pk", flat=True))
        row = store()
        created = row.pk not in known
        if created and getattr(created_by, "is_authenticated", False):
            row.created_by = created_by
            row.save(update_fields=["created_by", "updated_at"])
    return row, version_numbers_for_model(model).get(row.pk, 1), created


@dataclass
class Saved:
    testset: TestSet
    number: int
    created: bool


@refused_when_disk_full
def testset_save_named(*, token: str, file_name: str, name: str, created_by) -> Saved:
    """Step two: the upload kept under `token` stored as a version of `name` (v1, v2… by when each was
    saved); the same content under that name is found again, not stored twice. Nothing is stored when a
    line is invalid. The kept upload is removed once stored."""
    name = name_check(name)
    suffix = PurePath(file_name).suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError("a test set is a .jsonl or .csv file")
    path, data = _pending_read(token)
    preview = preview_of(data, file_name)
    if not preview.savable:
        raise InputError(f"{preview.problem_count} invalid line(s): fix the file and upload it again")
    testset, number, created = _version_stored(
        TestSet, name, lambda: testset_store(data=data, name=f"{name}{suffix}", source_path=f"uploaded: {file_name}"),
        created_by,
    )
    path.unlink(missing_ok=True)
    return Saved(testset=testset, number=number, created=created)


@dataclass
class Appended:
    testset: TestSet
    number: int
    added: int
    skipped: int


def run_lowest_case_ids(run) -> list[str]:
    """The cases of a run's lowest-scoring judgments (its report's `lowest`), each once, in the report's order."""
    return list(dict.fromkeys(item["case_id"] for item in (run.report or {}).get("lowest") or []))


@refused_when_disk_full
def testset_cases_append(*, run, case_ids: list[str], name: str, created_by) -> Appended:
    """A new version of the test set `name` (its newest version, or a new name) with the run's cases appended:
    ids kept, an id it already has skipped and counted. Each case keeps its input, its own output (if any)
    and its other fields; never a system's reply judged in the run."""
    from judgeapp.datasets.core import case_line

    name = name_check(name)
    if run.testset_id is None:
        raise InputError(f"run {run.run_id} has no test set")
    if not case_ids:
        raise InputError(f"run {run.run_id} has no such cases to add")
    target = TestSet.objects.filter(name=name).order_by("-created_at", "-pk").first()
    lines, known = [], set()
    if target is not None:
        for case_id, text, output, extra in target.cases.order_by("position").values_list("case_id", "input", "output", "extra"):
            known.add(case_id)
            lines.append(case_line(case_id, text, output, extra))
    wanted = set(case_ids)
    cases = {c.case_id: c for c in run.testset.cases.filter(case_id__in=wanted)}
    added = skipped = 0
    for case_id in case_ids:
        case = cases.get(case_id)
        if case is None:
            continue
        if case_id in known:
            skipped += 1
            continue
        known.add(case_id)
        lines.append(case_line(case_id, case.input, case.output, case.extra))
        added += 1
    data = "".join(lines).encode("utf-8")
    testset, number, _created = _version_stored(
        TestSet, name, lambda: testset_store(data=data, name=f"{name}.jsonl", source_path=f"cases added from run {run.run_id}"),
        created_by,
    )
    return Appended(testset=testset, number=number, added=added, skipped=skipped)


# --- A system version's outputs, previewed ---------------------------------------------------------------


@dataclass
class OutputsPreview:
    token: str
    file_name: str
    valid: int = 0
    rows: list[tuple[str, str]] = field(default_factory=list)  # the first (id, output)
    problems: list[tuple[int | None, str]] = field(default_factory=list)  # (line number, reason)
    problem_count: int = 0
    missing: list[str] = field(default_factory=list)  # the test set's ids without an output (the first ones)
    missing_count: int = 0

    @property
    def savable(self) -> bool:
        return self.valid > 0 and self.problem_count == 0 and self.missing_count == 0


def outputs_preview_of(data: bytes, name: str, testset: TestSet, token: str = "") -> OutputsPreview:
    """Every line of an outputs file checked on its own against the test set it answers: the first rows, every
    invalid line with its number and reason (an id the test set does not have among them), the test set's ids
    it leaves without an output. Stores nothing."""
    from judgeapp.judging.files import parse_outputs

    preview = OutputsPreview(token=token, file_name=name)
    if PurePath(name).suffix.lower() != ".jsonl":
        _problem(preview, None, 'outputs are a .jsonl file of {"id", "output"} lines')
        return preview
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        _problem(preview, None, "not UTF-8 text")
        return preview
    known = list(testset.cases.order_by("position").values_list("case_id", flat=True))
    known_set, first_line = set(known), {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            ((case_id, output),) = parse_outputs(line.encode("utf-8"), name).items()
        except InputError as exc:
            _problem(preview, number, _reason(str(exc), name))
            continue
        if case_id in first_line:
            _problem(preview, number, f"duplicate id {case_id!r} (first on line {first_line[case_id]})")
        elif case_id not in known_set:
            _problem(preview, number, f"id {case_id!r} is not in test set {testset.name}")
        else:
            first_line[case_id] = number
            preview.valid += 1
            if len(preview.rows) < PREVIEW_ROWS:
                preview.rows.append((case_id, output))
    missing = [case_id for case_id in known if case_id not in first_line]
    preview.missing, preview.missing_count = missing[:PREVIEW_PROBLEMS], len(missing)
    if not preview.valid and not preview.problem_count:
        _problem(preview, None, "no outputs")
    return preview


def _pending_keep(data: bytes, name: str) -> str:
    text_refuse(name, "the file name")
    if len(data) > settings.UPLOAD_MAX_BYTES:
        raise InputError(f"{name}: {len(data):,} bytes is over the limit of {settings.UPLOAD_MAX_BYTES:,}")
    _pending_clean()
    token = secrets.token_urlsafe(32)
    folder = _pending_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / token).write_bytes(data)
    return token


@refused_when_disk_full
def outputs_preview(*, data: bytes, name: str, testset: TestSet) -> OutputsPreview:
    """Step one of storing a system version's outputs: the upload kept aside under a random token and
    previewed against the test set. Nothing is stored as outputs until `outputs_save_pending`."""
    return outputs_preview_of(data, name, testset, _pending_keep(data, name))


@refused_when_disk_full
def outputs_save_pending(*, token: str, file_name: str, system, version_label: str, testset: TestSet, created_by):
    """Step two: the previewed upload stored as the system version's outputs ((output set, created), as
    `output_set_save`); refused in one line when a line is invalid or a case has no output."""
    from judgeapp.judging.content import InputFile
    from judgeapp.judging.outputs import output_set_save

    path, data = _pending_read(token)
    preview = outputs_preview_of(data, file_name, testset)
    if not preview.savable:
        raise InputError(
            f"{preview.problem_count} invalid line(s), {preview.missing_count} case(s) without an output: fix the file"
        )
    given = InputFile(data=data, name=file_name)
    stored = output_set_save(system=system, version_label=version_label, testset=testset, outputs=given, created_by=created_by)
    path.unlink(missing_ok=True)
    return stored


# --- A rubric, previewed ---------------------------------------------------------------------------------

RUBRIC_SUFFIXES = (".toml", ".json")


@dataclass
class CriterionRow:
    name: str
    scale: str  # "1-5"
    examples: int


@dataclass
class RubricPreview:
    token: str
    file_name: str
    rubric_name: str = ""  # the file's own `name`, the name it is saved under unless another is given
    criteria: list[CriterionRow] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (where: "criterion 2", "" for the file; reason)
    problem_count: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def savable(self) -> bool:
        return bool(self.criteria) and self.problem_count == 0


def rubric_preview_of(data: bytes, name: str, token: str = "") -> RubricPreview:
    """Every criterion of a rubric file checked on its own (`judging/files.py: criterion_parse`, what a run
    checks): the valid ones with their scale and number of examples, every problem with the criterion it is
    in and its reason. Stores nothing."""
    from judgeapp.judging.files import criterion_parse, criterion_warning, rubric_document

    preview = RubricPreview(token=token, file_name=name)
    if PurePath(name).suffix.lower() not in RUBRIC_SUFFIXES:
        _problem(preview, "", "a rubric is a .toml or .json file")
        return preview
    try:
        preview.rubric_name, criteria_doc = rubric_document(data, name)
    except InputError as exc:
        _problem(preview, "", _reason(str(exc), name, ""))
        return preview
    first: dict[str, int] = {}
    for i, doc in enumerate(criteria_doc, start=1):
        label = doc.get("name") if isinstance(doc, dict) and isinstance(doc.get("name"), str) else ""
        where = f"criterion {i}" + (f" ({label.strip()[:100]})" if label.strip() else "")
        try:
            criterion = criterion_parse(doc, i, name)
        except InputError as exc:
            reason = _reason(_reason(str(exc), name, f"criterion {label.strip()!r}"), name, f"criterion {i}")
            _problem(preview, where, reason)
            continue
        if criterion.name in first:
            _problem(preview, where, f"criterion {criterion.name!r} appears twice (first as criterion {first[criterion.name]})")
            continue
        first[criterion.name] = i
        low, high = criterion.bounds
        preview.criteria.append(CriterionRow(criterion.name, f"{low}-{high}", len(criterion.examples)))
        warning = criterion_warning(criterion)
        if warning:
            preview.warnings.append(warning)
    return preview


@refused_when_disk_full
def rubric_preview(*, data: bytes, name: str) -> RubricPreview:
    """Step one of storing a rubric: the upload kept aside under a random token and previewed criterion by
    criterion. Nothing is stored as a rubric until `rubric_save_named`."""
    return rubric_preview_of(data, name, _pending_keep(data, name))


@dataclass
class SavedRubric:
    rubric: Rubric
    number: int
    created: bool


@refused_when_disk_full
def rubric_save_named(*, token: str, file_name: str, name: str, created_by) -> SavedRubric:
    """Step two: the rubric kept under `token` stored as a version of `name` (v1, v2… by when each was saved),
    with who saved it; the same content under that name is found again, not stored twice. Nothing is stored
    when a criterion is invalid. The kept upload is removed once stored."""
    from judgeapp.judging.content import rubric_store
    from judgeapp.judging.files import MAX_RUBRIC_NAME

    name = name_check(name, "rubric", MAX_RUBRIC_NAME)
    if PurePath(file_name).suffix.lower() not in RUBRIC_SUFFIXES:
        raise InputError("a rubric is a .toml or .json file")
    path, data = _pending_read(token)
    preview = rubric_preview_of(data, file_name)
    if not preview.savable:
        raise InputError(f"{preview.problem_count} problem(s) in the rubric: fix the file and upload it again")
    rubric, number, created = _version_stored(
        Rubric, name, lambda: rubric_store(data=data, name=file_name, source_path=f"uploaded: {file_name}", label=name),
        created_by,
    )
    path.unlink(missing_ok=True)
    return SavedRubric(rubric=rubric, number=number, created=created)
