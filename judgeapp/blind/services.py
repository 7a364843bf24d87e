"""Blind comparisons: read the versions, draw the labels, check for leakage, store, start, reveal.

Everything a comparison needs is read and checked before anything is stored: the version directories
(or uploads), the eval prompt, the expectations and the labels. Leakage stops the comparison before any
judging; from the browser the flags are kept (so that the leakage page can list them), from the command
line nothing is written. A clean comparison is stored in one transaction: the run (kind "blind"), the
mapping and a copy of every run's files, so that a worker on another machine judges exactly what was
checked.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from judgeapp.blind.core.inputs import LABELS, VersionContent, read_version_dir, read_version_zip, version_from_files
from judgeapp.blind.core.leakage import scan_inputs
from judgeapp.judging.audit import audit_log_create
from judgeapp.judging.content import prompt_register, source_path_fit
from judgeapp.judging.costs import budget_check
from judgeapp.judging.errors import InputError, refused_when_disk_full
from judgeapp.judging.files import text_check
from judgeapp.judging.leakage.names import KnownName, version_names
from judgeapp.judging.leakage.scan import LeakageFlag
from judgeapp.judging.runs import run_create, run_enqueue
from judgeapp.judging.selectors import known_names_for_run
from judgeapp.models import AuditLog, BlindComparison, BlindRunOutput, BlindVersion, Executor, Judge, Run, RunKind, content_hash

MAX_BROWSE_DEPTH = 3
MAX_BROWSE_CHOICES = 500


@dataclass
class VersionInput:
    """One version as given: its real name (the mapping), where it came from, and what it holds."""

    real_name: str
    source: str  # BlindVersion.Source
    source_path: str
    content: VersionContent
    label: str | None = None  # given when the inputs are already blinded (the CLI)


@dataclass
class BlindOutcome:
    comparison: BlindComparison | None
    run: Run | None
    flags: list[LeakageFlag] = field(default_factory=list)

    @property
    def leaked(self) -> bool:
        return bool(self.flags)


# --- Where versions come from --------------------------------------------------------------------------------


@dataclass(frozen=True)
class BrowseChoice:
    key: str  # what the form posts: "<root index>:<relative path>"
    real_name: str
    path: Path
    runs: int


def _roots() -> list[Path]:
    return [Path(root).resolve() for root in settings.BROWSE_ROOTS]


def browse_choices() -> list[BrowseChoice]:
    """The directories under BROWSE_ROOTS that can be picked as versions: those holding files or run-*
    directories, up to MAX_BROWSE_DEPTH levels down. A run-* directory is part of its version, not one."""
    choices: list[BrowseChoice] = []
    roots = _roots()
    many_roots = len(roots) > 1
    for index, root in enumerate(roots):
        if not root.is_dir():
            continue
        stack = [(root, 0)]
        while stack and len(choices) < MAX_BROWSE_CHOICES:
            current, depth = stack.pop()
            try:
                entries = sorted(
                    (e for e in current.iterdir() if not e.name.startswith(".") and not e.is_symlink()), reverse=True
                )
            except OSError:
                continue
            run_dirs = [e for e in entries if e.is_dir() and e.name.lower().startswith("run-")]
            has_files = any(e.is_file() for e in entries)
            if current != root and (run_dirs or has_files):
                relative = current.relative_to(root).as_posix()
                name = f"{root.name}/{relative}" if many_roots else relative
                choices.append(BrowseChoice(f"{index}:{relative}", name, current, max(1, len(run_dirs))))
            if depth < MAX_BROWSE_DEPTH:
                stack += [(e, depth + 1) for e in entries if e.is_dir() and e not in run_dirs]
    return sorted(choices, key=lambda c: c.real_name)


def browse_resolve(key: str) -> BrowseChoice:
    """A posted directory choice, checked to lie inside its root (no `..`, no symbolic link out)."""
    index_text, sep, relative = key.partition(":")
    roots = _roots()
    if not sep or not index_text.isdigit() or int(index_text) >= len(roots) or not relative:
        raise InputError(f"{key!r} is not one of the server directories")
    root = roots[int(index_text)]
    candidate = root / relative
    if candidate.is_symlink():
        raise InputError(f"{relative}: a symbolic link, not a version directory")
    path = candidate.resolve()
    if path == root or not path.is_relative_to(root):
        raise InputError(f"{relative}: outside the folders this server may read")
    if not path.is_dir():
        raise InputError(f"{relative}: no such directory under the server directories")
    name = f"{root.name}/{relative}" if len(roots) > 1 else relative
    return BrowseChoice(key, name, path, 0)


def version_from_browse(key: str) -> VersionInput:
    choice = browse_resolve(key)
    content = read_version_dir(choice.path, max_run_bytes=settings.ARTIFACT_MAX_BYTES, name=choice.real_name)
    return VersionInput(choice.real_name, BlindVersion.Source.BROWSE, str(choice.path), content)


def version_from_upload(*, name: str, files) -> VersionInput:
    """An uploaded version: one zip archive (which may hold run-* directories), or text files forming
    one run."""
    name = " ".join(name.split())
    if not name:
        raise InputError("an uploaded version needs a name (its real name, kept hidden until the reveal)")
    files = list(files)
    if not files:
        raise InputError(f"{name}: no files uploaded")
    total = sum(f.size for f in files)
    if total > settings.UPLOAD_MAX_BYTES:
        raise InputError(f"{name}: {total:,} bytes uploaded, over the limit of {settings.UPLOAD_MAX_BYTES:,} (UPLOAD_MAX_BYTES)")
    if len(files) == 1 and files[0].name.lower().endswith(".zip"):
        content = read_version_zip(
            files[0].read(), name=name, max_run_bytes=settings.ARTIFACT_MAX_BYTES, max_total_bytes=settings.UPLOAD_MAX_BYTES
        )
    else:
        by_name: dict[str, bytes] = {}
        for upload in files:
            base = Path(upload.name).name
            if base in by_name:
                raise InputError(f"{name}: two uploaded files are named {base!r}")
            by_name[base] = upload.read()
        content = version_from_files(by_name, name=name, max_run_bytes=settings.ARTIFACT_MAX_BYTES)
    return VersionInput(name, BlindVersion.Source.UPLOAD, ", ".join(f.name for f in files), content)


def version_from_directory(*, label: str, directory: str) -> VersionInput:
    """An already-blinded version from the command line: LABEL=DIR."""
    content = read_version_dir(directory, max_run_bytes=settings.ARTIFACT_MAX_BYTES, name=directory)
    return VersionInput(directory, BlindVersion.Source.CLI, str(Path(directory).resolve()), content, label=label)


# --- Leakage --------------------------------------------------------------------------------------------------


def known_names(real_names: list[str], *, context: list[str] = ()) -> list[KnownName]:
    """Every name that identifies a configuration: the configured systems and judges (names and models)
    and the mapping's own real names, with their directories, parents and distinctive words (`context`,
    the task's own words, are not distinctive)."""
    return version_names(real_names, context=context) + known_names_for_run()


def _input_name(version: VersionInput) -> str:
    if version.source == BlindVersion.Source.CLI:
        return f"version {version.label} ({version.real_name})"
    return f"version {version.real_name!r}"


def _content_digest(content: VersionContent) -> str:
    return content_hash(
        [[run.real_name, [[f.path, f.text, f.size] for f in run.files]] for run in content.runs]
    )


def _versions_check(versions: list[VersionInput]) -> None:
    if len(versions) < 2:
        raise InputError("a blind comparison needs at least two versions")
    if len(versions) > len(LABELS):
        raise InputError(f"at most {len(LABELS)} versions can be compared at once")
    for version in versions:
        text_check(version.real_name, f"version {version.real_name[:40]}…", "the version's name", max_length=300)
    names = [v.real_name for v in versions]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"version {duplicates[0]!r} is given twice")
    given = [v.label for v in versions if v.label is not None]
    if given and len(given) != len(versions):
        raise InputError("give every version a label, or none")
    if len(set(given)) != len(given):
        raise InputError(f"label {sorted({g for g in given if given.count(g) > 1})[0]!r} is given twice")


def blind_check(
    *, versions: list[VersionInput], eval_prompt: str, expectations: list[str], judge: Judge, output_path: str, budget
) -> tuple[Decimal | None, list[LeakageFlag]]:
    """Everything about a comparison's inputs that can be wrong, found before anything is stored: one InputError,
    or the checked budget and the leakage flags (none for a clean comparison). Draws the labels at random
    unless the versions come already labelled."""
    _versions_check(versions)
    if not eval_prompt.strip():
        raise InputError("the eval prompt is empty")
    budget = budget_check(budget=budget, judges=[judge])
    text_check(output_path, "--output", "the path", max_length=1000)
    if versions[0].label is None:
        drawn = secrets.SystemRandom().sample(LABELS[: len(versions)], len(versions))
        for version, label in zip(versions, drawn):
            version.label = label
    flags = scan_inputs(
        versions=[(_input_name(v), v.content) for v in versions],
        eval_prompt=eval_prompt,
        expectations=expectations,
        known=known_names([v.real_name for v in versions], context=[eval_prompt, *expectations]),
        labels=[v.label for v in versions],
    )
    return budget, flags


@refused_when_disk_full
def blind_run_create(
    *,
    versions: list[VersionInput],
    eval_prompt: str,
    expectations: list[str],
    judge: Judge,
    origin: str = BlindComparison.Origin.WEB,
    executor: str = Executor.CELERY,
    created_by=None,
    run_id: str | None = None,
    output_path: str = "",
    keep_leaks: bool = True,
    budget=None,
) -> BlindOutcome:
    """Check every input for leakage; stop on any flag, else store the comparison and its run (queued).

    Labels are drawn at random unless the versions come already labelled. On leakage nothing is judged:
    with `keep_leaks` the flags are stored for the leakage page, without it nothing at all is written.
    `budget`: a spend cap in dollars (judging/costs.py): the comparison stops at it, invalid, with the runs scored.
    """
    budget, flags = blind_check(
        versions=versions, eval_prompt=eval_prompt, expectations=expectations, judge=judge, output_path=output_path,
        budget=budget,
    )
    if flags:
        comparison = _leaks_store(versions, flags, eval_prompt=eval_prompt, expectations=expectations, judge=judge,
                                  origin=origin, output_path=output_path, created_by=created_by) if keep_leaks else None
        return BlindOutcome(comparison, None, flags)
    return _comparison_store(
        versions=versions, eval_prompt=eval_prompt, expectations=expectations, judge=judge, origin=origin,
        output_path=output_path, created_by=created_by, run_id=run_id, executor=executor, budget=budget,
    )


@transaction.atomic
def _comparison_store(
    *, versions: list[VersionInput], eval_prompt: str, expectations: list[str], judge: Judge, origin: str, output_path: str,
    created_by, run_id: str | None, executor: str, budget: Decimal | None,
) -> BlindOutcome:
    """A clean comparison: its queued run, the mapping and a copy of every run's files; a Celery run is sent to
    the workers once this transaction commits."""
    ordered = sorted(versions, key=lambda v: v.label)
    run = run_create(
        kind=RunKind.BLIND,
        run_id=run_id,
        executor=executor,
        created_by=created_by,
        title=f"Blind comparison of {len(versions)} versions",
        judge=judge,
        prompt=prompt_register(prompt="blind_score"),
        budget=budget,
        options={"output_path": output_path, "labels": [v.label for v in ordered], "expectations": len(expectations)},
        versions={
            "blind_rubric": prompt_register(prompt="blind_rubric").version,
            "blind_score": prompt_register(prompt="blind_score").version,
            "inputs": content_hash([eval_prompt, expectations, [_content_digest(v.content) for v in ordered]])[:12],
        },
    )
    comparison = BlindComparison.objects.create(
        run=run,
        status=BlindComparison.Status.STARTED,
        origin=origin,
        eval_prompt=eval_prompt,
        expectations=expectations,
        judge=judge,
        output_path=output_path,
        created_by=created_by if getattr(created_by, "is_authenticated", False) else None,
    )
    for v in ordered:
        _version_store(comparison, v)
    if executor == Executor.CELERY:
        run_enqueue(run=run)
    return BlindOutcome(comparison, run, [])


def _leaks_store(versions, flags, *, eval_prompt, expectations, judge, origin, output_path, created_by) -> BlindComparison:
    """A comparison stopped by its leakage flags, kept for the leakage page: nothing is judged, and no label is
    kept (the next attempt draws new ones)."""
    with transaction.atomic():
        comparison = BlindComparison.objects.create(
            status=BlindComparison.Status.LEAKED,
            origin=origin,
            eval_prompt=eval_prompt,
            expectations=expectations,
            leakage_flags=[f.as_dict() for f in flags],
            judge=judge,
            output_path=output_path,
            created_by=created_by if getattr(created_by, "is_authenticated", False) else None,
        )
        BlindVersion.objects.bulk_create(
            BlindVersion(comparison=comparison, label="", real_name=v.real_name, source=v.source,
                         source_path=source_path_fit(v.source_path, 1000), content_hash=_content_digest(v.content),
                         stray_files=v.content.stray_files)
            for v in versions
        )
    return comparison


def _version_store(comparison: BlindComparison, v: VersionInput) -> None:
    """A labelled version and each of its runs' files."""
    row = BlindVersion.objects.create(
        comparison=comparison, label=v.label, real_name=v.real_name, source=v.source,
        source_path=source_path_fit(v.source_path, 1000), content_hash=_content_digest(v.content),
        stray_files=v.content.stray_files,
    )
    BlindRunOutput.objects.bulk_create(
        BlindRunOutput(
            version=row,
            position=position,
            real_name=run_content.real_name,
            files=[{"path": f.path, "text": f.text, "size": f.size} for f in run_content.files],
        )
        for position, run_content in enumerate(v.content.runs, start=1)
    )


# --- After the verdict -------------------------------------------------------------------------------------------


def blind_mapping_reveal(*, comparison: BlindComparison, actor) -> bool:
    """Show which real version each label stands for, once the run has finished; logged. False when it
    was revealed already."""
    run = comparison.run
    if run is None or not run.is_finished:
        raise InputError("the mapping is revealed only after the verdict: wait for the comparison to finish")
    with transaction.atomic():
        updated = BlindComparison.objects.filter(pk=comparison.pk, revealed_at__isnull=True).update(
            revealed_at=timezone.now(), revealed_by=actor if getattr(actor, "is_authenticated", False) else None
        )
        if not updated:
            return False
        audit_log_create(
            action=AuditLog.Action.MAPPING_REVEALED,
            actor=actor,
            run=run,
            subject=run.run_id,
            detail={"mapping": {v.label: v.real_name for v in comparison.versions.all()}},
        )
    comparison.refresh_from_db()
    return True
