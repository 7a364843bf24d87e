"""A lead's resolved label of an item its annotators disagree on, and the margin that says which items those are.

The resolved label is stored beside the annotators' labels (calibration/models/samples.py: Adjudication), never over
them. A new or changed one changes the sample's figures like a label does: it bumps the sample's
`labels_version` in its transaction and enqueues the agreement once that commits (services/labels.py).
Every decision is in the audit log.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from calibration.core import adjudication as adjudication_rules
from calibration.core.labels import PAIRWISE, SCORE, pairwise_label_from_shown, parse_label
from calibration.models import Adjudication, Assignment, AssignmentState, Sample, SampleItem
from calibration.services.audit import calibration_audit
from calibration.services.labels import sample_labels_changed
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.judging.errors import InputError
from judgeapp.models import AuditLog

MAX_NOTE = 2000


def _scale_of(item: SampleItem) -> tuple[int, int]:
    if item.sample.label_kind == SCORE:
        for criterion in judgeapp_selectors.criteria_for_run(run=item.sample.run):
            if criterion.name == item.criterion:
                return criterion.scale_bounds
    return (1, 5)


def adjudication_record(*, item: SampleItem, answer: str, note: str = "", actor) -> Adjudication:
    """The lead's resolved label of the item, from the answer as the lead's page shows it (a score, pass or
    fail, or reply 1 / 2 / tie with the replies in A, B order). InputError, and nothing written, for an answer
    the item does not take, a note over MAX_NOTE characters, or an item whose annotators do not disagree by
    more than the margin (one already resolved may be resolved again)."""
    sample = item.sample
    note = (note or "").strip()
    if len(note) > MAX_NOTE:
        raise InputError(f"the note is {len(note)} characters; at most {MAX_NOTE}")
    try:
        if sample.label_kind == PAIRWISE:
            value = pairwise_label_from_shown(answer or "", swapped=False)
        else:
            value = parse_label(answer or "", label_kind=sample.label_kind, scale=_scale_of(item))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    with transaction.atomic():
        # One lead's decision at a time per item: the second waits and sees the first as `previous`.
        item = SampleItem.objects.select_for_update().select_related("sample", "sample__run").get(pk=item.pk)
        previous = Adjudication.objects.filter(item=item).first()
        labels = list(
            Assignment.objects.filter(item=item, state=AssignmentState.LABELLED).order_by("annotator__username")
            .values_list("annotator__username", "value")
        )
        if previous is None and not adjudication_rules.disagrees(
            [v for _, v in labels], label_kind=sample.label_kind, margin=sample.adjudication_margin
        ):
            raise InputError("this item's annotators do not disagree by more than the margin: there is nothing to resolve")
        adjudication, _ = Adjudication.objects.update_or_create(
            item=item, defaults={"value": value, "note": note, "decided_by": actor, "decided_at": timezone.now()}
        )
        if previous is None or previous.value != value:
            sample_labels_changed(sample_id=sample.pk)
        calibration_audit(
            action=AuditLog.Action.ITEM_RESOLVED,
            actor=actor,
            subject=f"sample {sample.short_id} item {item.position + 1} ({item})"[:300],
            reason=note or f"resolved as {value}",
            run=sample.run,
            detail={
                "sample": str(sample.uuid),
                "item": item.position,
                "value": value,
                "previous": previous.value if previous else None,
                "labels": dict(labels),
            },
        )
    return adjudication


def sample_margin_set(*, sample: Sample, margin: int, actor) -> Sample:
    """The score difference above which the sample's items go to a lead to resolve; audited. Items already
    resolved keep their resolved label."""
    if sample.label_kind != SCORE:
        raise InputError("only scores have a margin: any two different labels of this sample need resolving")
    if not 0 <= margin <= adjudication_rules.MAX_MARGIN:
        raise InputError(f"the margin must be a whole number from 0 to {adjudication_rules.MAX_MARGIN}")
    with transaction.atomic():
        previous = Sample.objects.select_for_update().values_list("adjudication_margin", flat=True).get(pk=sample.pk)
        Sample.objects.filter(pk=sample.pk).update(adjudication_margin=margin, updated_at=timezone.now())
        calibration_audit(
            action=AuditLog.Action.MARGIN_SET,
            actor=actor,
            subject=f"sample {sample.short_id}",
            reason=f"items whose scores differ by more than {margin} are resolved by a lead (was {previous})",
            run=sample.run,
            detail={"sample": str(sample.uuid), "margin": margin, "previous": previous},
        )
    sample.refresh_from_db()
    return sample
