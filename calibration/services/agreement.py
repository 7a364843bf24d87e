"""Judge–human agreement of a sample, computed by a task a few seconds after its labels change.

Labels arriving together (an annotator going through a queue, two at once) are counted by one computation:
the first marks the sample and sends the task with a short countdown, the others find it marked
(agreement_enqueue). Each computation stores the labels it counted beside its results (the snapshot every
page and report reads), so no page shows figures of two moments.

Idempotent: the task compares the sample's labels version with the one its stored results were computed
for and does nothing when they match; a task that finds the labels changed while it computed throws its
figures away (the change enqueued a newer task). Results are written per judge configuration × prompt
version × rubric version × criterion, then the locks of the judge configurations involved are evaluated.

Labels, ties and non-answers are counted as the lead's policy declares (calibration/core/handling.py). By
default a labelled item the judge was asked about but gave no usable verdict on (a parse failure, a reply
cut at max_tokens, no reply) is compared as the value farthest from each of its labels: it counts toward the
minimum and as a disagreement, never as a match, so failing to answer is no way out of a lock. Every result
stores the handling it used and its figures under every other handling (its sensitivity).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from calibration.core import handling as handling_rules
from calibration.core.agreement import inter_annotator
from calibration.core.alt_test import judge_beside_people
from calibration.core.labels import label_value
from calibration.core.slices import agreement_slices
from calibration.models import Adjudication, AgreementResult, Assignment, AssignmentState, Sample
from calibration.selectors.policy import policy_get
from calibration.selectors.run_judges import judge_configurations_for_run
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.judging import taskqueue

log = logging.getLogger(__name__)


def bootstrap_resamples() -> int:
    return getattr(settings, "CALIBRATION_BOOTSTRAP_RESAMPLES", 1000)


def debounce_seconds() -> float:
    return float(getattr(settings, "CALIBRATION_AGREEMENT_DEBOUNCE_SECONDS", 2.0))


def _not_queued(now) -> Q:
    """A sample with no agreement computation due: never marked, or marked so long ago that its task was lost
    (a worker killed while it held it)."""
    stale = now - timedelta(seconds=getattr(settings, "CALIBRATION_AGREEMENT_QUEUED_STALE_SECONDS", 600))
    return Q(agreement_queued_at__isnull=True) | Q(agreement_queued_at__lt=stale)


def agreement_enqueue(*, sample_id: int) -> bool:
    """Have the sample's agreement computed in a worker a few seconds after its labels' transaction commits:
    one computation for every label that arrives meanwhile. Call it in the transaction that changed the labels.

    Compare-and-set on `agreement_queued_at`: only the label that finds it empty marks it and sends the task
    (the row is already locked by the label's `labels_version` bump, so two labels never both win); the task
    empties it before it reads the labels, so a label committed after that sends the next one. True when this
    call sent (or will send, at commit) the task."""
    now = timezone.now()
    if not Sample.objects.filter(_not_queued(now), pk=sample_id).update(agreement_queued_at=now):
        return False  # a computation is due and has not started: it reads this label when it does

    def send():
        try:
            taskqueue.send(taskqueue.COMPUTE_AGREEMENT, sample_id, countdown=debounce_seconds())
            return
        except taskqueue.BrokerDown as exc:  # the labels are stored; a worker's start-up or `agreement` catches up
            log.warning("could not enqueue the agreement of sample %s; it stays pending: %s", sample_id, exc)
        except Exception:  # noqa: BLE001 - as above, with the traceback of what went wrong
            log.warning("could not enqueue the agreement of sample %s; it stays pending", sample_id, exc_info=True)
        # Nothing was sent: the next label tries again rather than wait for the mark to go stale.
        Sample.objects.filter(pk=sample_id, agreement_queued_at=now).update(agreement_queued_at=None)

    transaction.on_commit(send)
    return True


def agreement_run(*, sample_pk: int) -> bool:
    """What the agreement task does: take the sample off the queued mark, then compute. The mark is emptied
    (and committed) before the labels are read, so every label either is read by this computation or, arriving
    after, finds the mark empty and sends the next one."""
    Sample.objects.filter(pk=sample_pk).update(agreement_queued_at=None)
    return agreement_compute(sample_pk=sample_pk)


def _resolved(sample: Sample) -> dict[int, int | str]:
    """{item pk: the lead's resolved label} — the item's one label wherever the judge meets the majority."""
    return {
        item_id: label_value(value, label_kind=sample.label_kind)
        for item_id, value in Adjudication.objects.filter(item__sample=sample).values_list("item_id", "value")
    }


def _groups(sample: Sample) -> tuple[list[str], dict, list[list[str]]]:
    """The criteria to report on ("" = all pooled first), each item's human labels, and the labels as the
    snapshot keeps them ([case id, criterion, annotator, value] rows)."""
    assignments = (
        Assignment.objects.filter(item__sample=sample, state=AssignmentState.LABELLED)
        .select_related("item", "annotator")
        .order_by("item__position", "annotator__username")
    )
    labels: dict = defaultdict(dict)  # item -> {annotator: value}
    rows = []
    for a in assignments:
        labels[a.item][a.annotator.username] = label_value(a.value, label_kind=sample.label_kind)
        rows.append([a.item.case_key, a.item.criterion, a.annotator.username, a.value])
    criteria = sorted({item.criterion for item in labels if item.criterion})
    return ([""] + criteria) if criteria else [""], labels, rows


# The figures of one judge's agreement with people that its AgreementResult keeps as they were measured.
RESULT_FIGURES = (
    "n_items", "n_unreadable", "n_labels", "kappa", "agreement", "metrics", "per_annotator", "details", "handling",
    "sensitivity", "slices",
)


def _judge_figures(
    judge: str, *, in_group, humans, scale, scales, items, unusable, label_kind, declared, resolved, resamples, seed, key_of
) -> dict | None:
    """One judge's agreement with people on a group of labelled items (its slices, its disagreements named by
    case and criterion, its verdicts beside each person's), or None when it judged none of them."""
    judged = {}
    for item in in_group:
        key = (item.case_key, item.criterion, judge)
        verdict = items.verdicts.get(key)
        if verdict is None and key not in unusable:
            continue  # not judged by this judge (no output to judge, another juror's case)
        judged[item.pk] = None if verdict is None else label_value(verdict, label_kind=label_kind)
    figures = handling_rules.measured(
        humans, judged, declared=declared, label_kind=label_kind, scale=scale, scales=scales,
        n_resamples=resamples, seed=seed, resolved=resolved,
    )
    if figures is None:
        return None
    figures["slices"] = agreement_slices(
        figures["pairs"], {item.pk: item.tags for item in in_group}, label_kind=label_kind, scale=scale,
        n_resamples=resamples, seed=seed,
    )
    details = figures["details"]
    figures["details"] = {
        **details,
        "disagreements": [{**row, "item": list(key_of[row["item"]])} for row in details["disagreements"]],
        "unreadable": [list(key_of[pk]) for pk in details["unreadable"]],
    }
    figures["details"].update(
        judge_beside_people(humans, handling_rules.answered(judged, declared), figures["pairs"], label_kind=label_kind)
    )
    return figures


def agreement_compute(*, sample_pk: int, force: bool = False) -> bool:
    """(Re)compute the sample's agreement results. False when there was nothing to do."""
    from calibration.services.locks import locks_evaluate
    from calibration.services.samples import run_items

    sample = Sample.objects.select_related("run").get(pk=sample_pk)
    version = sample.labels_version
    if sample.agreement_version == version and not force:
        return False
    run = sample.run
    items = run_items(run=run)
    imported = bool(run.config.get("imported"))
    unusable = set(judgeapp_selectors.unusable_for_run(run=run)) | set(judgeapp_selectors.unanswered_for_run(run=run))
    declared = handling_rules.effective(policy_get().declared_handling, label_kind=sample.label_kind, imported=imported)
    configs = judge_configurations_for_run(run=run)
    criteria, labels, label_rows = _groups(sample)
    resolved = _resolved(sample)
    judges = sorted(({judge for (_, _, judge) in items.verdicts} | {judge for (_, _, judge) in unusable}) & set(configs))
    resamples = bootstrap_resamples()
    seed = sample.seed or 0

    key_of = {item.pk: (item.case_key, item.criterion) for item in labels}
    computed = []
    for criterion in criteria:
        in_group = {item: by for item, by in labels.items() if not criterion or item.criterion == criterion}
        scales = [items.scales.get(item.criterion, (1, 5)) for item in in_group] or [(1, 5)]
        scale = (min(s[0] for s in scales), max(s[1] for s in scales))
        humans = {item.pk: by for item, by in in_group.items()}
        human_only = inter_annotator(humans, label_kind=sample.label_kind, scale=scale, n_resamples=resamples, seed=seed)
        scales = {item.pk: items.scales.get(item.criterion, (1, 5)) for item in in_group}
        for judge in judges:
            figures = _judge_figures(
                judge, in_group=in_group, humans=humans, scale=scale, scales=scales, items=items, unusable=unusable,
                label_kind=sample.label_kind, declared=declared, resolved=resolved, resamples=resamples, seed=seed,
                key_of=key_of,
            )
            if figures is not None:
                computed.append((judge, criterion, figures, human_only))

    with transaction.atomic():
        locked_sample = Sample.objects.select_for_update().get(pk=sample_pk)
        if locked_sample.labels_version != version:
            return False  # labels changed meanwhile: the task their change enqueued computes the new state
        kept = []
        for judge, criterion, figures, human_only in computed:
            result, _ = AgreementResult.objects.update_or_create(
                sample=sample,
                judge_name=judge,
                criterion=criterion,
                defaults={
                    "judge_version": configs[judge]["version"],
                    "prompt_version": run.versions.get("prompt") or "",
                    "rubric_version": run.versions.get("rubric") or "",
                    "label_kind": sample.label_kind,
                    "scripted_demo": configs[judge]["scripted_demo"],
                    **{field: figures[field] for field in RESULT_FIGURES},
                    "inter_annotator": human_only,
                    "labels_version": version,
                    "effective_at": sample.created_at,
                },
            )
            kept.append(result.pk)
        AgreementResult.objects.filter(sample=sample, candidate__isnull=True).exclude(pk__in=kept).delete()
        adopted = _candidates_measure(sample, resamples=resamples)
        # The snapshot: what every page and report reads beside these results (the corrected mean among them).
        now = timezone.now()
        Sample.objects.filter(pk=sample_pk).update(
            agreement_version=version, agreement_labels=label_rows, agreement_computed_at=now, updated_at=now
        )
        locks_evaluate(configs=[(judge, configs[judge]["version"]) for judge in judges] + adopted)
    return True


def _candidates_measure(sample: Sample, *, resamples: int) -> list[tuple[str, str]]:
    """The candidates judged on the sample's labelled items measured against the same labels; the adopted
    ones' (judge, configuration version), whose locks are evaluated again."""
    from calibration.runkind import candidate_results_store

    adopted = []
    for candidate in sample.candidates.select_related("run", "sample").filter(run__status__in=["done", "invalid"]):
        candidate_results_store(candidate=candidate, resamples=resamples)
        if candidate.adopted_at is not None:
            adopted.append((candidate.judge_name, candidate.config_version))
    return adopted


def agreements_refresh() -> int:
    """Compute every sample whose labels changed since its agreement was computed (a lost task, say), then
    bring every lock in line with its evidence: a scope measured before locks were kept per prompt × rubric
    (an install upgraded in place) gets its own lock here, at a worker's start or `manage.py agreement`."""
    from calibration.services.locks import locks_evaluate

    count = 0
    for pk in Sample.objects.exclude(labels_version=0).values_list("pk", "labels_version", "agreement_version"):
        if pk[1] != pk[2] and agreement_run(sample_pk=pk[0]):
            count += 1
    # A mark whose task was lost (a killed worker) on a sample with nothing left to compute: free it, so that
    # the next label sends a task at once instead of waiting for the mark to go stale. A label that bumps the
    # version marks the row in the same transaction, so no mark cleared here is one still needed.
    done = Sample.objects.filter(agreement_queued_at__isnull=False, labels_version=F("agreement_version"))
    done.update(agreement_queued_at=None)
    locks_evaluate()
    return count
