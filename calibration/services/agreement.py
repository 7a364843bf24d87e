"""Judge–human agreement of a sample, computed by a Celery task whenever its labels change.

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

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from calibration.core import handling as handling_rules
from calibration.core.agreement import inter_annotator
from calibration.core.alt_test import judge_beside_people
from calibration.core.labels import label_value
from calibration.core.slices import agreement_slices
from calibration.models import Adjudication, AgreementResult, Assignment, AssignmentState, Sample
from calibration.selectors import judge_configurations, policy_current
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.judging import taskqueue

log = logging.getLogger(__name__)


def bootstrap_resamples() -> int:
    return getattr(settings, "CALIBRATION_BOOTSTRAP_RESAMPLES", 1000)


def agreement_enqueue(*, sample_id: int) -> None:
    """Compute the sample's agreement in a worker once the labels' transaction commits."""

    def send():
        try:
            taskqueue.send(taskqueue.COMPUTE_AGREEMENT, sample_id)
        except taskqueue.BrokerDown as exc:  # the labels are stored; a worker's start-up or `agreement` catches up
            log.warning("could not enqueue the agreement of sample %s; it stays pending: %s", sample_id, exc)
        except Exception:  # noqa: BLE001 - as above, with the traceback of what went wrong
            log.warning("could not enqueue the agreement of sample %s; it stays pending", sample_id, exc_info=True)

    transaction.on_commit(send)


def _resolved(sample: Sample) -> dict[int, int | str]:
    """{item pk: the lead's resolved label} — the item's one label wherever the judge meets the majority."""
    return {
        item_id: label_value(value, label_kind=sample.label_kind)
        for item_id, value in Adjudication.objects.filter(item__sample=sample).values_list("item_id", "value")
    }


def _groups(sample: Sample) -> tuple[list[str], dict]:
    """The criteria to report on ("" = all pooled first) and each item's human labels."""
    assignments = (
        Assignment.objects.filter(item__sample=sample, state=AssignmentState.LABELLED)
        .select_related("item", "annotator")
        .order_by("item__position", "annotator__username")
    )
    labels: dict = defaultdict(dict)  # item -> {annotator: value}
    for a in assignments:
        labels[a.item][a.annotator.username] = label_value(a.value, label_kind=sample.label_kind)
    criteria = sorted({item.criterion for item in labels if item.criterion})
    return ([""] + criteria) if criteria else [""], labels


def agreement_compute(*, sample_pk: int, force: bool = False) -> bool:
    """(Re)compute the sample's agreement results. False when there was nothing to do."""
    from calibration.runkind import candidate_results_store
    from calibration.services.locks import locks_evaluate
    from calibration.services.samples import run_items

    sample = Sample.objects.select_related("run").get(pk=sample_pk)
    version = sample.labels_version
    if sample.agreement_version == version and not force:
        return False
    run = sample.run
    items = run_items(run=run)
    imported = bool(run.config.get("imported"))
    unusable = set(judgeapp_selectors.run_unusable(run=run)) | set(judgeapp_selectors.run_imported_unanswered(run=run))
    declared = handling_rules.effective(policy_current().declared_handling, label_kind=sample.label_kind, imported=imported)
    configs = judge_configurations(run=run)
    criteria, labels = _groups(sample)
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
        human_only = inter_annotator(
            {item.pk: by for item, by in in_group.items()},
            label_kind=sample.label_kind,
            scale=scale,
            n_resamples=resamples,
            seed=seed,
        )
        humans = {item.pk: by for item, by in in_group.items()}
        scales = {item.pk: items.scales.get(item.criterion, (1, 5)) for item in in_group}
        for judge in judges:
            judged = {}
            for item in in_group:
                key = (item.case_key, item.criterion, judge)
                verdict = items.verdicts.get(key)
                if verdict is None and key not in unusable:
                    continue  # not judged by this judge (no output to judge, another juror's case)
                judged[item.pk] = None if verdict is None else label_value(verdict, label_kind=sample.label_kind)
            figures = handling_rules.measured(
                humans, judged, declared=declared, label_kind=sample.label_kind, scale=scale, scales=scales,
                n_resamples=resamples, seed=seed, resolved=resolved,
            )
            if figures is None:
                continue
            figures["slices"] = agreement_slices(
                figures["pairs"], {item.pk: item.tags for item in in_group}, label_kind=sample.label_kind, scale=scale,
                n_resamples=resamples, seed=seed,
            )
            details = figures["details"]
            figures["details"] = {
                **details,
                "disagreements": [{**row, "item": list(key_of[row["item"]])} for row in details["disagreements"]],
                "unreadable": [list(key_of[pk]) for pk in details["unreadable"]],
            }
            figures["details"].update(
                judge_beside_people(
                    humans, handling_rules.answered(judged, declared), figures["pairs"], label_kind=sample.label_kind
                )
            )
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
                    "n_items": figures["n_items"],
                    "n_unreadable": figures["n_unreadable"],
                    "n_labels": figures["n_labels"],
                    "kappa": figures["kappa"],
                    "agreement": figures["agreement"],
                    "metrics": figures["metrics"],
                    "per_annotator": figures["per_annotator"],
                    "inter_annotator": human_only,
                    "details": figures["details"],
                    "handling": figures["handling"],
                    "sensitivity": figures["sensitivity"],
                    "slices": figures["slices"],
                    "labels_version": version,
                    "effective_at": sample.created_at,
                },
            )
            kept.append(result.pk)
        AgreementResult.objects.filter(sample=sample, candidate__isnull=True).exclude(pk__in=kept).delete()
        # The candidates judged on this sample's labelled items are measured against the same labels.
        adopted = []
        for candidate in sample.candidates.select_related("run", "sample").filter(run__status__in=["done", "invalid"]):
            candidate_results_store(candidate=candidate, resamples=resamples)
            if candidate.adopted_at is not None:
                adopted.append((candidate.judge_name, candidate.config_version))
        Sample.objects.filter(pk=sample_pk).update(agreement_version=version, updated_at=timezone.now())
        locks_evaluate(configs=[(judge, configs[judge]["version"]) for judge in judges] + adopted)
    return True


def agreements_refresh() -> int:
    """Compute every sample whose labels changed since its agreement was computed (a lost task, say), then
    bring every lock in line with its evidence: a scope measured before locks were kept per prompt × rubric
    (an install upgraded in place) gets its own lock here, at a worker's start or `manage.py agreement`."""
    from calibration.services.locks import locks_evaluate

    count = 0
    for pk in Sample.objects.exclude(labels_version=0).values_list("pk", "labels_version", "agreement_version"):
        if pk[1] != pk[2] and agreement_compute(sample_pk=pk[0]):
            count += 1
    locks_evaluate()
    return count
