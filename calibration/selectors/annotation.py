"""An annotator's queue and the item they label."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from calibration.models import Assignment, AssignmentState, ItemNote, SampleItem
from judgeapp.judging import selectors as judgeapp_selectors


def _queue(annotator) -> QuerySet[Assignment]:
    # An item held back on leakage is in no queue (it gets no assignment when drawn; this is the guard).
    return (
        Assignment.objects.filter(annotator=annotator)
        .filter(item__leakage_flags=[])
        .select_related("item", "item__sample", "item__case")
    )


def next_item_for_annotator(*, annotator, skipped: bool = False) -> Assignment | None:
    """The annotator's next item: the first pending one (oldest sample first, then their own order);
    with `skipped`, the one they skipped longest ago."""
    if skipped:
        return _queue(annotator).filter(state=AssignmentState.SKIPPED).order_by("acted_at", "id").first()
    return _queue(annotator).filter(state=AssignmentState.PENDING).order_by(
        "item__sample__created_at", "item__sample_id", "position"
    ).first()


def queue_progress_for_annotator(*, annotator) -> dict:
    counts = Assignment.objects.filter(annotator=annotator).aggregate(
        total=Count("id"),
        labelled=Count("id", filter=Q(state=AssignmentState.LABELLED)),
        skipped=Count("id", filter=Q(state=AssignmentState.SKIPPED)),
    )
    counts["pending"] = counts["total"] - counts["labelled"] - counts["skipped"]
    counts["percent"] = round(100 * counts["labelled"] / counts["total"]) if counts["total"] else 0
    return counts


def last_action_for_annotator(*, annotator) -> Assignment | None:
    return _queue(annotator).filter(acted_at__isnull=False).order_by("-acted_at", "-id").first()


def assignment_get(*, assignment_uuid) -> Assignment:
    from django.shortcuts import get_object_or_404

    return get_object_or_404(
        Assignment.objects.select_related("item", "item__sample", "item__sample__run", "item__case", "annotator"),
        uuid=assignment_uuid,
    )


def item_notes_for_assignment(*, assignment: Assignment) -> list[ItemNote]:
    """The annotator's own comments and flags on the item of this assignment, oldest first."""
    return list(ItemNote.objects.filter(assignment=assignment).order_by("created_at", "id"))


def cues_for_assignment(*, assignment: Assignment | None, last: Assignment | None) -> dict:
    """What changed since the annotator's last answered item: the criterion they score (`criterion_was`,
    the previous criterion's name, or ""), and the sample (`new_sample`: its instructions are shown open)."""
    if assignment is None:
        return {"criterion_was": "", "new_sample": False}
    if last is None or last.pk == assignment.pk:
        return {"criterion_was": "", "new_sample": last is None}
    was, now = last.item.criterion, assignment.item.criterion
    return {
        "criterion_was": was if was and now and was != now else "",
        "new_sample": last.item.sample_id != assignment.item.sample_id,
    }


def display_for_assignment(*, assignment: Assignment) -> dict:
    """What an annotator sees of an item, and nothing else: the input, the reply (or both replies, as 1
    and 2 in this annotator's order), the rubric with its examples. No run, system, version, judge,
    model or verdict goes into it."""
    return view_for_item(item=assignment.item, swapped=assignment.swapped)


def view_for_item(*, item: SampleItem, swapped: bool) -> dict:
    """An item as an annotator sees it (display_for_assignment), the replies of a pair in the order `swapped` says."""
    sample = item.sample
    run = sample.run
    outputs = {o.slot: o.text for o in judgeapp_selectors.outputs_for_run(run=run).filter(case_id=item.case_id)}
    criteria = judgeapp_selectors.criteria_for_run(run=run)
    if item.criterion:
        criteria = [c for c in criteria if c.name == item.criterion]
    rubric = [
        {
            "name": c.name,
            "description": c.description,
            "points": [
                {"score": point, "meaning": c.scale.get(point, ""), "example": (c.examples or {}).get(point, "")}
                for point in sorted(c.scale, key=int)
            ],
        }
        for c in criteria
    ]
    display = {
        "input": item.case.input,
        "rubric": rubric,
        "label_kind": sample.label_kind,
        "criterion": item.criterion,
        "instructions": sample.instructions,
    }
    if sample.label_kind == "pairwise":
        first, second = ("B", "A") if swapped else ("A", "B")
        display["replies"] = [outputs.get(first, ""), outputs.get(second, "")]
        display["instruction"] = (run.config.get("imported") or {}).get("instruction") or (
            "Which reply is better against the rubric? The order of the replies means nothing, and a "
            "longer reply is not a better one."
        )
    else:
        display["reply"] = outputs.get("", item.case.output or "")
    if sample.label_kind == "score":
        low, high = criteria[0].scale_bounds if criteria else (1, 5)
        display["choices"] = [{"value": str(v), "key": str(v), "label": str(v)} for v in range(low, high + 1)]
    elif sample.label_kind == "pass_fail":
        display["choices"] = [{"value": "pass", "key": "1", "label": "Pass"}, {"value": "fail", "key": "0", "label": "Fail"}]
    else:
        display["choices"] = [
            {"value": "1", "key": "1", "label": "Reply 1"},
            {"value": "2", "key": "2", "label": "Reply 2"},
            {"value": "tie", "key": "0", "label": "Tie"},
        ]
    return display
