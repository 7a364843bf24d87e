"""People's labels: scored in the queue (label, skip, undo) or imported in bulk from a CSV file.

Every change to a sample's labels bumps its `labels_version` in the same transaction and, once that
commits, enqueues the agreement task for the sample.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from calibration.core.labels import PAIRWISE, SCORE, pairwise_label_from_shown, parse_label
from calibration.models import Assignment, AssignmentState, LabelSource, Sample, SampleItem
from calibration.selectors.run_judges import primary_judge_for_run
from calibration.services.agreement import agreement_enqueue
from calibration.services.samples import case_tags, run_items
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import csv_records, decode_text, text_check

User = get_user_model()

LABEL_COLUMNS = ("run_id", "case_id", "criterion", "annotator", "label")


def sample_labels_changed(*, sample_id: int) -> None:
    """Call in the transaction of any change to what the sample's figures read (a label, a resolved label)."""
    Sample.objects.filter(pk=sample_id).update(labels_version=F("labels_version") + 1, updated_at=timezone.now())
    agreement_enqueue(sample_id=sample_id)


def _scale_of(assignment: Assignment) -> tuple[int, int]:
    if assignment.item.sample.label_kind != SCORE:
        return (1, 5)
    for criterion in judgeapp_selectors.criteria_for_run(run=assignment.item.sample.run):
        if criterion.name == assignment.item.criterion:
            return criterion.scale_bounds
    return (1, 5)


def label_record(*, assignment: Assignment, answer: str) -> Assignment:
    """The annotator's answer as shown to them (a score, pass/fail, or reply 1 / 2 / tie), stored as a label.

    InputError for an answer the item does not take; nothing is written then.
    """
    kind = assignment.item.sample.label_kind
    try:
        if kind == PAIRWISE:
            value = pairwise_label_from_shown(answer, swapped=assignment.swapped)
        else:
            value = parse_label(answer, label_kind=kind, scale=_scale_of(assignment))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    with transaction.atomic():
        Assignment.objects.filter(pk=assignment.pk).update(
            state=AssignmentState.LABELLED, value=value, source=LabelSource.WEB, acted_at=timezone.now(),
            updated_at=timezone.now()
        )
        sample_labels_changed(sample_id=assignment.item.sample_id)
    assignment.refresh_from_db()
    return assignment


def label_skip(*, assignment: Assignment) -> Assignment:
    with transaction.atomic():
        had_label = Assignment.objects.filter(pk=assignment.pk, state=AssignmentState.LABELLED).exists()
        Assignment.objects.filter(pk=assignment.pk).update(
            state=AssignmentState.SKIPPED, value="", source="", acted_at=timezone.now(), updated_at=timezone.now()
        )
        if had_label:
            sample_labels_changed(sample_id=assignment.item.sample_id)
    assignment.refresh_from_db()
    return assignment


def label_undo(*, annotator) -> Assignment | None:
    """Take back the annotator's last label or skip: the item is pending again. None if nothing to undo."""
    with transaction.atomic():
        last = (
            Assignment.objects.select_for_update()
            .filter(annotator=annotator, acted_at__isnull=False)
            .order_by("-acted_at", "-id")
            .first()
        )
        if last is None:
            return None
        had_label = last.state == AssignmentState.LABELLED
        Assignment.objects.filter(pk=last.pk).update(
            state=AssignmentState.PENDING, value="", source="", acted_at=None, updated_at=timezone.now()
        )
        if had_label:
            sample_labels_changed(sample_id=last.item.sample_id)
    last.refresh_from_db()
    return last


# --- Bulk import (manage.py import-labels FILE.csv) ----------------------------------------------------


@dataclass
class ImportSummary:
    labels: int
    samples: list[Sample]
    annotators: list[str]
    created_users: list[str]


# The columns the values go into (calibration/models/, Django's User.username).
FIELD_LIMITS = {"run_id": 100, "case_id": 200, "criterion": 100, "annotator": 150, "label": 10}


def _csv_rows(data: bytes, name: str) -> list[tuple[int, dict]]:
    """The label rows, read strictly (judgeapp/judging/files.py: csv_records): an unterminated quote is
    refused with the line it opens on, never merged with the rows after it."""
    text = decode_text(data, name)
    rows = []
    header_checked = False
    for header, line_no, values in csv_records(text, name):
        if not header_checked:
            missing = [c for c in LABEL_COLUMNS if c not in header]
            if missing:
                raise InputError(f"{name}: missing column(s) {', '.join(missing)}; expected {', '.join(LABEL_COLUMNS)}")
            header_checked = True
        clean = {k: v.strip() for k, v in zip(header, values)}
        if not any(clean.values()):
            continue
        for column, limit in FIELD_LIMITS.items():
            text_check(clean[column], f"{name} line {line_no}", f"the {column}", max_length=limit)
        rows.append((line_no, clean))
    if not rows:
        raise InputError(f"{name}: no labels (only a header)")
    return rows


def labels_import(*, data: bytes, name: str) -> ImportSummary:
    """Check every row, then store all of them in one transaction: one new sample per run in the file.

    A row names the run, the case, the criterion (empty for pairwise and jury runs), the annotator (a
    username; an account without a password is made for a name the app does not know) and the label.
    """
    rows = _csv_rows(data, name)
    runs: dict[str, object] = {}
    items_of_run: dict[str, object] = {}
    seen: dict[tuple, int] = {}
    checked = []
    username_check = UnicodeUsernameValidator()
    for line_no, row in rows:
        where = f"{name} line {line_no}"
        run_id = row["run_id"]
        if not run_id:
            raise InputError(f"{where}: empty run_id")
        if run_id not in runs:
            run = judgeapp_selectors.run_get_for_id(run_id=run_id)
            if run is None:
                raise InputError(f"{where}: no run {run_id!r}")
            try:
                items_of_run[run_id] = run_items(run=run)
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from None
            runs[run_id] = run
        items = items_of_run[run_id]
        case_id, criterion = row["case_id"], row["criterion"]
        if case_id not in items.cases:
            raise InputError(f"{where}: run {run_id} has no case {case_id!r}")
        if items.label_kind == SCORE:
            if criterion not in items.scales:
                known = ", ".join(items.scales) or "none"
                raise InputError(f"{where}: run {run_id} has no criterion {criterion!r} (criteria: {known})")
        elif criterion:
            raise InputError(f"{where}: leave criterion empty for a {items.label_kind} run ({run_id})")
        annotator = row["annotator"]
        try:
            username_check(annotator)
        except ValidationError:
            raise InputError(f"{where}: annotator {annotator!r} is not a valid username") from None
        try:
            value = parse_label(row["label"], label_kind=items.label_kind, scale=items.scales.get(criterion, (1, 5)))
        except ValueError as exc:
            raise InputError(f"{where}: {exc}") from None
        key = (run_id, case_id, criterion, annotator)
        if key in seen:
            raise InputError(
                f"{where}: {annotator} labels {case_id}{'/' + criterion if criterion else ''} of {run_id} "
                f"again (first on line {seen[key]})"
            )
        seen[key] = line_no
        checked.append((run_id, case_id, criterion, annotator, value))

    return labels_store(rows=checked, runs=runs, items_of_run=items_of_run, source=Path(name).name)


def labels_store(*, rows: list[tuple], runs: dict, items_of_run: dict, source: str) -> ImportSummary:
    """Store checked labels (run_id, case_id, criterion, annotator, canonical label), one new sample per
    run, in one transaction; the agreement of each sample is enqueued when it commits."""
    checked = rows
    created_users = []
    samples = []
    with transaction.atomic():
        users = {}
        for username in sorted({row[3] for row in checked}):
            user = User.objects.filter(username=username).first()
            if user is None:
                user = User(username=username)
                user.set_unusable_password()
                user.save()
                created_users.append(username)
            users[username] = user
        by_run: dict[str, list] = defaultdict(list)
        for row in checked:
            by_run[row[0]].append(row)
        for run_id, run_rows in by_run.items():
            run, items = runs[run_id], items_of_run[run_id]
            keys = list(dict.fromkeys((case_id, criterion) for _, case_id, criterion, _, _ in run_rows))
            per_item = defaultdict(int)
            for _, case_id, criterion, _, _ in run_rows:
                per_item[(case_id, criterion)] += 1
            stratifier = primary_judge_for_run(run=run)
            sample = Sample.objects.create(
                run=run,
                label_kind=items.label_kind,
                method=Sample.Method.IMPORTED,
                size=len(keys),
                overlap=max(per_item.values()),
                stratified_by=stratifier or "",
                source=source,
            )
            created = SampleItem.objects.bulk_create(
                SampleItem(
                    sample=sample,
                    position=i,
                    case=items.cases[case_id],
                    case_key=case_id,
                    criterion=criterion,
                    stratum=items.verdicts.get((case_id, criterion, stratifier), ""),
                    tags=case_tags(items.cases[case_id]),
                )
                for i, (case_id, criterion) in enumerate(keys)
            )
            item_of = {(row.case_key, row.criterion): row for row in created}
            position = defaultdict(int)
            assignments = []
            for _, case_id, criterion, annotator, value in run_rows:
                user = users[annotator]
                assignments.append(
                    Assignment(
                        item=item_of[(case_id, criterion)],
                        annotator=user,
                        position=position[user.pk],
                        state=AssignmentState.LABELLED,
                        value=value,
                        source=LabelSource.IMPORT,
                        acted_at=None,  # an imported label is not the annotator's last action to undo
                    )
                )
                position[user.pk] += 1
            Assignment.objects.bulk_create(assignments, batch_size=1000)
            sample_labels_changed(sample_id=sample.pk)
            sample.refresh_from_db()
            samples.append(sample)
    return ImportSummary(labels=len(checked), samples=samples, annotators=sorted(users), created_users=created_users)
