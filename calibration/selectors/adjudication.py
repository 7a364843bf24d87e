"""Adjudication: the items a lead resolves."""

from __future__ import annotations

from calibration.core import adjudication as adjudication_rules
from calibration.models import Adjudication, Assignment, AssignmentState, LabelKind, Sample, SampleItem
from calibration.selectors.annotation import view_for_item


def _labels_by_item(sample: Sample) -> dict[int, list[tuple[str, str]]]:
    """{item pk: [(annotator, label)]} of the sample's labelled assignments, annotators by name."""
    labels: dict[int, list[tuple[str, str]]] = {}
    for item_id, username, value in (
        Assignment.objects.filter(item__sample=sample, state=AssignmentState.LABELLED)
        .values_list("item_id", "annotator__username", "value")
        .order_by("item_id", "annotator__username")
    ):
        labels.setdefault(item_id, []).append((username, value))
    return labels


def _needs_resolving(sample: Sample, labels: list[tuple[str, str]]) -> bool:
    return adjudication_rules.disagrees(
        [value for _, value in labels], label_kind=sample.label_kind, margin=sample.adjudication_margin
    )


def open_adjudications_for_sample(*, sample: Sample) -> int:
    """Items whose annotators disagree by more than the sample's margin and that no lead resolved yet."""
    resolved = set(Adjudication.objects.filter(item__sample=sample).values_list("item_id", flat=True))
    return sum(
        1 for item_id, labels in _labels_by_item(sample).items() if item_id not in resolved and _needs_resolving(sample, labels)
    )


def _shown_label(value: str, *, label_kind: str) -> str:
    """A stored label in the words the lead's page uses (the replies in A, B order, shown as 1 and 2)."""
    if label_kind == LabelKind.PAIRWISE:
        return {"A": "Reply 1", "B": "Reply 2"}.get(value, "Tie")
    if label_kind == LabelKind.PASS_FAIL:
        return value.capitalize()
    return value


def adjudication_items_for_sample(*, sample: Sample) -> list[dict]:
    """The items to resolve (annotators disagree by more than the margin), open first, then those already
    resolved; each as the annotators saw it (replies of a pair in A, B order, shown as 1 and 2), with each
    annotator's label and the resolved one: [{item, labels [{annotator, shown}], adjudication, resolved_shown,
    display}]."""
    labels_of = _labels_by_item(sample)
    adjudications = {a.item_id: a for a in Adjudication.objects.filter(item__sample=sample).select_related("decided_by")}
    wanted = [
        item_id for item_id, labels in labels_of.items() if item_id in adjudications or _needs_resolving(sample, labels)
    ]
    items = SampleItem.objects.filter(pk__in=wanted).select_related("sample", "sample__run", "case").order_by("position")
    rows = [_adjudication_row(item, labels_of[item.pk], adjudications.get(item.pk)) for item in items]
    rows.sort(key=lambda row: (row["adjudication"] is not None, row["item"].position))
    return rows


def adjudication_item_get(*, sample: Sample, position: int) -> dict:
    """One item of `adjudication_items_for_sample` (404 when the sample has no item at that position)."""
    from django.shortcuts import get_object_or_404

    item = get_object_or_404(SampleItem.objects.select_related("sample", "sample__run", "case"), sample=sample, position=position)
    labels = _labels_by_item(sample).get(item.pk, [])
    return _adjudication_row(item, labels, Adjudication.objects.filter(item=item).select_related("decided_by").first())


def _adjudication_row(item: SampleItem, labels: list[tuple[str, str]], adjudication: Adjudication | None) -> dict:
    kind = item.sample.label_kind
    return {
        "item": item,
        "labels": [{"annotator": annotator, "shown": _shown_label(value, label_kind=kind)} for annotator, value in labels],
        "adjudication": adjudication,
        "resolved_shown": _shown_label(adjudication.value, label_kind=kind) if adjudication else "",
        "display": view_for_item(item=item, swapped=False),
    }
