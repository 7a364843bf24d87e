"""Storing versioned inputs: test sets, rubrics, prompts and goals, each by content hash (and git commit);
and the input files they come from, as given on the command line or uploaded."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction

from judgeapp.judging.batches import batched
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import CaseRow, parse_rubric, testset_rows
from judgeapp.judging.prompts import Prompt, load_prompt
from judgeapp.models import Case, Criterion, Goal, PromptTemplate, Rubric, TestSet, content_hash


def git_commit_of(path: Path) -> str:
    """The commit a file is at, when it is in a git work tree and unchanged since that commit."""
    path = Path(path).resolve()
    try:
        def git(*args):
            return subprocess.run(
                ["git", *args], cwd=path.parent, capture_output=True, text=True, timeout=5, check=False
            )

        if git("ls-files", "--error-unmatch", path.name).returncode != 0:
            return ""
        if git("diff", "--quiet", "HEAD", "--", path.name).returncode != 0:
            return ""  # edited since the last commit: the commit would not describe this content
        result = git("log", "-1", "--format=%H", "--", path.name)
        return result.stdout.strip() if result.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def read_input_file(path: str | Path) -> bytes:
    """An input file's bytes, refused before reading when over INPUT_MAX_BYTES (a 5 GB file is not loaded
    to be told it is too long)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a file")
    try:
        size = path.stat().st_size
        if size > settings.INPUT_MAX_BYTES:
            raise InputError(f"{path}: {size:,} bytes is over the limit of {settings.INPUT_MAX_BYTES:,} (INPUT_MAX_BYTES)")
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None


def source_path_fit(path: str, limit: int = 500) -> str:
    """Where a file came from, kept whole when it fits its column, else its last `limit` characters."""
    return path if len(path) <= limit else "…" + path[-(limit - 1):]


def testset_cases(data: bytes, name: str):
    """A test set's cases one at a time, checked as they are read, refused past MAX_TESTSET_CASES."""
    return testset_rows(data, name, max_cases=settings.MAX_TESTSET_CASES)


def case_rows(testset: TestSet | InputFile) -> Iterator[CaseRow]:
    """A test set's cases one at a time, in order, whether stored (a version picked by its hash) or given as a file."""
    if isinstance(testset, TestSet):
        cases = testset.cases.order_by("position").values_list("case_id", "input", "output").iterator(chunk_size=2000)
        return (CaseRow(case_id, text, output) for case_id, text, output in cases)
    return testset_cases(testset.data, testset.name)


def testset_check(data: bytes, name: str) -> None:
    """Check a test set case by case, keeping none of them (a form's check of an upload)."""
    for _case in testset_cases(data, name):
        pass


@transaction.atomic
def testset_store(*, data: bytes, name: str, source_path: str = "", git_commit: str = "") -> TestSet:
    """Parse and store a test set; the same content is stored once and found again by its hash. The cases
    are read, checked and written a batch at a time (never a list of every case: a 100,000-case test set
    is not 100,000 objects at once), and a test set over MAX_TESTSET_CASES is refused with one line before
    its transaction commits (nothing of it is kept)."""
    rows = testset_cases(data, name)  # the file name and the text are checked here, before any query
    digest = content_hash(data)
    label = Path(name).stem
    existing = TestSet.objects.filter(name=label, content_hash=digest).first()
    if existing:
        return existing
    testset = TestSet.objects.create(
        name=label, content_hash=digest, source_path=source_path_fit(source_path), git_commit=git_commit, case_count=0
    )
    stored = 0
    for batch in batched(rows):
        Case.objects.bulk_create(
            Case(testset=testset, case_id=row.case_id, position=stored + i, input=row.input, output=row.output, extra=row.extra)
            for i, row in enumerate(batch)
        )
        stored += len(batch)
    testset.case_count = stored
    testset.save(update_fields=["case_count"])
    return testset


def testset_load(*, path: str | Path) -> TestSet:
    path = Path(path)
    return testset_store(data=read_input_file(path), name=path.name, source_path=str(path), git_commit=git_commit_of(path))


@transaction.atomic
def rubric_store(*, data: bytes, name: str, source_path: str = "", git_commit: str = "", label: str = "") -> Rubric:
    """Parse and store a rubric under its own `name` (or `label`, a name given on the Datasets page); the same
    content under that name is stored once and found again by its hash."""
    spec = parse_rubric(data, name)
    digest = content_hash(data)
    stored_name = label or spec.name
    existing = Rubric.objects.filter(name=stored_name, content_hash=digest).first()
    if existing:
        return existing
    rubric = Rubric.objects.create(
        name=stored_name, content_hash=digest, source_path=source_path_fit(source_path), git_commit=git_commit,
        raw=data.decode("utf-8-sig"),
    )
    Criterion.objects.bulk_create(
        Criterion(rubric=rubric, name=c.name, position=i, description=c.description, scale=c.scale, examples=c.examples)
        for i, c in enumerate(spec.criteria)
    )
    return rubric


def rubric_load(*, path: str | Path) -> Rubric:
    path = Path(path)
    return rubric_store(data=read_input_file(path), name=path.name, source_path=str(path), git_commit=git_commit_of(path))


def prompt_register(*, prompt: Prompt | str) -> PromptTemplate:
    """The stored version of a prompt (by name from judgeapp/prompts/, or a loaded Prompt)."""
    if isinstance(prompt, str):
        prompt = load_prompt(prompt)
    path = Path(__file__).resolve().parent.parent / "prompts" / f"{prompt.name}.md"
    # Only the file's own text names the file as its source: a calibration candidate's text, stored under the
    # name of the prompt it replaces, has none (the report calls it `adopted`, judging/library.py).
    from_file = path.exists() and load_prompt(prompt.name).content_hash == prompt.content_hash
    template, _ = PromptTemplate.objects.get_or_create(
        name=prompt.name,
        content_hash=prompt.content_hash,
        defaults={
            "text": prompt.text, "source_path": str(path) if from_file else "",
            "git_commit": git_commit_of(path) if from_file else "",
        },
    )
    return template


def goal_get_or_create(*, text: str) -> Goal:
    text = " ".join(text.split())
    if not text:
        raise InputError("the goal is empty")
    goal, _ = Goal.objects.get_or_create(content_hash=content_hash(text), defaults={"text": text})
    return goal


# --- Input files, before anything is stored -------------------------------------------------------------


@dataclass
class InputFile:
    """A test set, rubric or outputs file as given: its bytes, the name its format is read from, and where
    it came from (its path and git commit, when it is a file on disk)."""

    data: bytes
    name: str
    source_path: str = ""
    git_commit: str = ""

    @classmethod
    def from_path(cls, path: str | Path) -> InputFile:
        path = Path(path)
        return cls(data=read_input_file(path), name=path.name, source_path=str(path), git_commit=git_commit_of(path))


def testset_case_ids(testset: TestSet | InputFile) -> tuple[list[str], dict[str, bool]]:
    """The test set's case ids in order, and which of them carry an output; parsed, not stored."""
    if isinstance(testset, TestSet):
        rows = list(testset.cases.values_list("case_id", "output"))
        return [r[0] for r in rows], {r[0]: r[1] is not None for r in rows}
    case_ids, has_output = [], {}
    for row in testset_cases(testset.data, testset.name):
        case_ids.append(row.case_id)
        has_output[row.case_id] = row.output is not None
    return case_ids, has_output


def rubric_check(rubric: Rubric | InputFile) -> list[str]:
    """Warnings about a rubric; InputError when it is malformed."""
    if isinstance(rubric, Rubric):
        return []
    return parse_rubric(rubric.data, rubric.name).warnings


def testset_save(testset: TestSet | InputFile) -> TestSet:
    if isinstance(testset, TestSet):
        return testset
    return testset_store(data=testset.data, name=testset.name, source_path=testset.source_path, git_commit=testset.git_commit)


def rubric_save(rubric: Rubric | InputFile) -> Rubric:
    if isinstance(rubric, Rubric):
        return rubric
    return rubric_store(data=rubric.data, name=rubric.name, source_path=rubric.source_path, git_commit=rubric.git_commit)


def testset_named(value: str) -> TestSet:
    """A test set given on a command line or in a request: a file when one exists at that path (stored, as
    a run stores it), else the stored version of that name (`stored_by_name`: NAME its newest, NAME@v2)."""
    if Path(value).is_file():
        return testset_load(path=value)
    return stored_by_name(TestSet, value, "test set")


NAMED_VERSION = re.compile(r"^(?P<name>.+?)(?:@v(?P<number>\d{1,6}))?$")


def stored_by_name(model, reference: str, what: str):
    """A stored test set or rubric by name: "support" is its newest version, "support@v2" its second stored
    (the numbers the Datasets page shows). InputError when there is none."""
    match = NAMED_VERSION.match((reference or "").strip())
    if match is None:
        raise InputError(f"{what} {reference!r}: no such file, and no stored {what} of that name")
    versions = model.objects.filter(name=match["name"])
    if match["number"]:
        number = int(match["number"])
        found = versions.order_by("created_at", "pk")[number - 1] if 0 < number <= versions.count() else None
    else:
        found = versions.order_by("-created_at", "-pk").first()
    if found is None:
        raise InputError(f"{reference}: no such file, and no stored {what} of that name")
    return found


def input_or_stored(value: str, model, what: str):
    """A --testset or --rubric value: the file when one exists at that path (a path wins), else the stored
    version of that name (`stored_by_name`); neither is the missing file's own error ("F: no such file")."""
    path = Path(value)
    match = NAMED_VERSION.match(value.strip())
    if not path.exists() and match and model.objects.filter(name=match["name"]).exists():
        return stored_by_name(model, value, what)
    return InputFile.from_path(path)
