"""Samples: the recent ones, their annotators' progress, notes and labelled items."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from calibration.core import adjudication as adjudication_rules
from calibration.models import AgreementResult, Assignment, AssignmentState, ItemNote, NoteKind, Sample


def sample_list(*, limit: int = 50) -> QuerySet[Sample]:
    # The flags counted in a subquery: a second join (items → notes) would multiply the assignments counted.
    flags = (
        ItemNote.objects.filter(item__sample=OuterRef("pk"), kind=NoteKind.FLAG)
        .order_by()
        .values("item__sample")
        .annotate(n=Count("id"))
        .values("n")
    )
    return (
        Sample.objects.select_related("run", "created_by")
        .annotate(
            n_assignments=Count("items__assignments"),
            n_labelled=Count("items__assignments", filter=Q(items__assignments__state=AssignmentState.LABELLED)),
            n_flags=Coalesce(Subquery(flags, output_field=IntegerField()), 0),
        )
        .order_by("-created_at")[:limit]
    )


def sample_get(*, sample_uuid) -> Sample:
    from django.shortcuts import get_object_or_404

    return get_object_or_404(Sample.objects.select_related("run", "created_by"), uuid=sample_uuid)


@dataclass
class AnnotatorProgress:
    annotator: str
    assigned: int
    done: int
    skipped: int
    remaining: int
    seconds_per_item: float | None

    @property
    def done_words(self) -> str:
        return f"{self.done} of {self.assigned} done"

    @property
    def time_per_item(self) -> str:
        return adjudication_rules.duration_words(self.seconds_per_item)


def progress_for_sample(*, sample: Sample) -> list[AnnotatorProgress]:
    """Per annotator, over the items in the queues (not those held back on leakage): done (labelled),
    skipped, remaining, and the time per item (calibration/core/adjudication.py: seconds_per_item)."""
    rows: dict[str, dict] = {}
    assignments = (
        Assignment.objects.filter(item__sample=sample, item__leakage_flags=[])
        .values_list("annotator__username", "state", "acted_at")
        .order_by("annotator__username", "acted_at")
    )
    for username, state, acted_at in assignments:
        row = rows.setdefault(username, {"assigned": 0, AssignmentState.LABELLED: 0, AssignmentState.SKIPPED: 0, "acted": []})
        row["assigned"] += 1
        if state in (AssignmentState.LABELLED, AssignmentState.SKIPPED):
            row[state] += 1
        if acted_at is not None and state != AssignmentState.PENDING:
            row["acted"].append(acted_at)
    return [
        AnnotatorProgress(
            annotator=username,
            assigned=row["assigned"],
            done=row[AssignmentState.LABELLED],
            skipped=row[AssignmentState.SKIPPED],
            remaining=row["assigned"] - row[AssignmentState.LABELLED] - row[AssignmentState.SKIPPED],
            seconds_per_item=adjudication_rules.seconds_per_item(row["acted"]),
        )
        for username, row in rows.items()
    ]


def held_back_for_sample(*, sample: Sample) -> list:
    """The sample's items held back from annotators on leakage, with their flags, for the reviewer."""
    return [item for item in sample.items.select_related("case").order_by("position") if item.held_back]


def notes_for_sample(*, sample: Sample, limit: int = 200) -> list[ItemNote]:
    """The annotators' comments and flags on the sample's items, newest first."""
    return list(
        ItemNote.objects.filter(item__sample=sample)
        .select_related("item", "annotator")
        .order_by("-created_at", "-id")[:limit]
    )


def flag_count_for_sample(*, sample: Sample) -> int:
    return ItemNote.objects.filter(item__sample=sample, kind=NoteKind.FLAG).count()


def item_notes_for_sample(*, sample: Sample, limit: int = 200) -> dict:
    """The annotators' comments and flags on a sample's items as its page shows them: {rows (the newest
    `limit`), more (older ones left out), flags (how many flags in all)}."""
    rows = notes_for_sample(sample=sample, limit=limit + 1)
    return {"rows": rows[:limit], "more": len(rows) > limit, "flags": flag_count_for_sample(sample=sample)}


def labelled_items_for_sample(*, sample: Sample) -> list[dict]:
    """The items of a sample at least one person labelled: what a candidate judges."""
    rows = (
        sample.items.filter(assignments__state=AssignmentState.LABELLED)
        .distinct()
        .order_by("position")
        .values("case_id", "case_key", "criterion")
    )
    return [{"case": r["case_id"], "case_key": r["case_key"], "criterion": r["criterion"]} for r in rows]


def annotator_panel_list(*, limit: int = 5) -> list[dict]:
    """The latest samples with overlap and each annotator's agreement with the others there."""
    panels = []
    results = (
        AgreementResult.objects.filter(criterion="", candidate__isnull=True, inter_annotator__isnull=False)
        .select_related("sample", "sample__run")
        .order_by("-sample__created_at", "judge_name")
    )
    seen = set()
    for result in results:
        if result.sample_id in seen:
            continue
        seen.add(result.sample_id)
        inter = result.inter_annotator or {}
        rows = inter.get("per_annotator") or []
        kappas = [r["kappa"] for r in rows if r.get("kappa") is not None]
        typical = sorted(kappas)[len(kappas) // 2] if kappas else None
        alpha = (inter.get("alpha") or {}).get("value")
        for row in rows:
            # Stands out: well below the others' typical agreement, or the others agree better without them.
            row["stands_out"] = bool(
                (typical is not None and row.get("kappa") is not None and row["kappa"] < typical - 0.2)
                or (alpha is not None and row.get("alpha_without") is not None and row["alpha_without"] > alpha + 0.1)
            )
        panels.append({"sample": result.sample, "inter": inter, "rows": rows, "label_kind": result.label_kind})
        if len(panels) >= limit:
            break
    return panels
