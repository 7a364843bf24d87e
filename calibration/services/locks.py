"""The lock on the release gate: the level a lead sets, and whether each judge configuration reaches it.

A lock is scoped: one per judge configuration × prompt version × rubric version, the scope a sample's runs
were judged in; a sample's agreement decides its own scope's lock and nothing else. A scope is locked when
its decisive result (the latest sample judged in it with at least `min_items` labelled items, every
criterion pooled) is below the level — its interval's upper bound below it — and unlocked when a fresh
sample in the same scope reaches the level — its interval's lower bound at or above it. A decisive result
whose interval straddles the level (undecided) neither locks nor unlocks: the scope stays as the last
decided result left it (no lock at all if there was none; an inherited lock still applies). A run with a
new prompt or rubric version is judged in a new scope, decided by its own samples. A new judge version is
a new configuration: it is unlocked by its own sample reaching the level
(until then it inherits its judge's lock in the same scope, see selectors.lock_reason_for_scope). A lead may also
unlock a scope by hand; that holds until new labels change its decisive result. Every lock, unlock and
level change goes into the audit log.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from calibration.core.status import ABOVE, BELOW, interval_position, unreadable_text
from calibration.models import (
    AgreementLevel,
    AgreementMetric,
    AgreementResult,
    AltTestRequirement,
    AnnotatorHandling,
    CalibrationPolicy,
    JudgeLock,
    NonAnswerHandling,
    PolicyAction,
    Sample,
    TieHandling,
)
from calibration.selectors.evidence import decisive_result_for_scope
from calibration.selectors.policy import level_get, policy_get
from calibration.services.audit import calibration_audit
from judgeapp.judging import taskqueue
from judgeapp.judging.audit import SYSTEM, audit_log_create
from judgeapp.judging.errors import InputError
from judgeapp.judging.notify import notify
from judgeapp.models import AuditLog, WebhookEvent


def _metric_label(level: AgreementLevel, result: AgreementResult) -> str:
    if level.metric == AgreementMetric.KAPPA:
        return "quadratic-weighted kappa" if result.label_kind == "score" else "Cohen's kappa"
    return "exact agreement" if result.label_kind == "score" else "percent agreement"


def _position(level: AgreementLevel, result: AgreementResult) -> str | None:
    figure = result.kappa_figure if level.metric == AgreementMetric.KAPPA else result.agreement_figure
    return interval_position(result.metric_value(level.metric), (figure or {}).get("ci"), level.threshold)


def _describe(level: AgreementLevel, result: AgreementResult) -> str:
    value = result.metric_value(level.metric)
    figure = result.kappa_figure if level.metric == AgreementMetric.KAPPA else result.agreement_figure
    ci = (figure or {}).get("ci")
    # The lock reads the interval: said beside the point, which side of the level it lies on.
    side = {ABOVE: "at or above", BELOW: "below"}.get(_position(level, result), "across")
    interval = f" (95% interval [{ci[0]:.2f}, {ci[1]:.2f}], {side} the level)" if ci else ""
    source = f", candidate {result.candidate.title} adopted" if result.candidate_id else ""
    non_answers = (result.handling or {}).get("non_answers", "disagreement")
    unreadable = unreadable_text(result.n_unreadable, result.n_items, non_answers)
    return (
        f"{_metric_label(level, result)} {value:.2f} with people, level {level.threshold:.2f}{interval} on sample "
        f"{result.sample.short_id} "
        f"of run {result.sample.run.run_id} ({result.n_items} items, prompt {result.prompt_version or '—'}, "
        f"rubric {result.rubric_version or '—'}{source})" + (f"; {unreadable}" if unreadable else "")
        + f"; {result.handling_words}"
    )


_audit = calibration_audit
log = logging.getLogger(__name__)


def _detail(level: AgreementLevel, result: AgreementResult) -> dict:
    return {
        "judge": result.judge_name,
        "judge_version": result.judge_version,
        "sample": str(result.sample.uuid),
        "run_id": result.sample.run.run_id,
        "prompt_version": result.prompt_version,
        "rubric_version": result.rubric_version,
        "metric": level.metric,
        "value": result.metric_value(level.metric),
        "threshold": level.threshold,
        "min_items": level.min_items,
        "n_items": result.n_items,
        "n_unreadable": result.n_unreadable,
        "candidate": str(result.candidate.uuid) if result.candidate_id else None,
        "alpha": result.alpha,
    }


def _subject(judge_name: str, judge_version: str, prompt_version: str, rubric_version: str) -> str:
    return (
        f"judge {judge_name} configuration {judge_version[:12]} with prompt {prompt_version or '—'}, "
        f"rubric {rubric_version or '—'}"
    )


def lock_evaluate(
    *, judge_name: str, judge_version: str, prompt_version: str, rubric_version: str, level: AgreementLevel | None = None
) -> str | None:
    """Bring one scope's lock (a configuration with one prompt and one rubric version) in line with its
    decisive result. Returns "locked", "unlocked" or None."""
    level = level or level_get()
    scope = {
        "judge_name": judge_name, "judge_version": judge_version, "prompt_version": prompt_version or "",
        "rubric_version": rubric_version or ""
    }
    result = decisive_result_for_scope(**scope, level=level)
    if result is None:
        return None  # no sample large enough yet: nothing to decide on
    lock = JudgeLock.objects.select_for_update().filter(**scope).first()
    same_evidence = lock is not None and lock.result_id == result.pk and lock.result_labels_version == result.labels_version
    if lock is not None and lock.overridden and same_evidence:
        return None  # a lead's unlock holds until new labels arrive
    position = _position(level, result)
    if position not in (ABOVE, BELOW):
        return None  # undecided: neither locks nor unlocks; the scope stays as the last decided result left it
    reaches = position == ABOVE
    now = timezone.now()
    subject = _subject(**scope)
    change = None
    if lock is None:
        # A configuration's first decision in a scope where its judge is locked under another configuration
        # lifts the lock it inherited (selectors.lock_reason_for_scope): that is an unlock, audited as one.
        inherited = (
            JudgeLock.objects.filter(
                judge_name=judge_name, prompt_version=scope["prompt_version"], rubric_version=scope["rubric_version"]
            )
            .order_by("-changed_at", "-id")
            .values_list("locked", flat=True)
            .first()
        )
        lock = JudgeLock(**scope, changed_at=now)
        if not reaches:
            change = "locked"
        elif inherited:
            change = "unlocked"
    elif lock.locked != (not reaches):
        change = "locked" if not reaches else "unlocked"
    lock.locked = not reaches
    lock.reason = _describe(level, result)
    lock.result = result
    lock.result_labels_version = result.labels_version
    lock.overridden = False
    if change:
        lock.changed_at = now
    lock.save()
    if change == "locked":
        audit_log_create(action=AuditLog.Action.JUDGE_LOCKED, actor=SYSTEM, subject=subject, reason=lock.reason,
                         run=result.sample.run, detail=_detail(level, result))
    elif change == "unlocked":
        audit_log_create(action=AuditLog.Action.JUDGE_UNLOCKED, actor=SYSTEM, subject=subject,
                         reason=f"recalibrated: {lock.reason}", run=result.sample.run, detail=_detail(level, result))
    if change:
        _lock_notify(lock, locked=change == "locked", subject=subject)
    return change


def _lock_notify(lock: JudgeLock, *, locked: bool, subject: str) -> None:
    """The webhooks' judge.locked or judge.unlocked, in the transaction of the lock's change."""
    data = {
        "judge": lock.judge_name,
        "judge_version": lock.judge_version,
        "prompt_version": lock.prompt_version,
        "rubric_version": lock.rubric_version,
        "locked": locked,
        "reason": lock.reason[:500],
    }
    if locked:
        line = f"{subject} is locked: its release gates block until it is recalibrated. {lock.reason[:300]}"
    else:
        line = f"{subject} is unlocked: {lock.reason[:300]}"
    notify(event=WebhookEvent.JUDGE_LOCKED if locked else WebhookEvent.JUDGE_UNLOCKED, data=data, line=line,
           path=reverse("judge_scorecard", args=[lock.judge_name]))


def locks_evaluate(*, configs=None) -> dict[tuple[str, str, str, str], str]:
    """Evaluate the lock of every scope (prompt × rubric) the given (judge name, version) configurations
    were measured in, or of every scope with a result. {(name, version, prompt, rubric): change}."""
    level = level_get()
    scopes = AgreementResult.objects.counting().filter(criterion="")
    if configs is not None:
        configs = set(configs)
        scopes = scopes.filter(
            judge_name__in={name for name, _ in configs}, judge_version__in={version for _, version in configs}
        )
    found = {
        scope for scope in scopes.values_list("judge_name", "judge_version", "prompt_version", "rubric_version").distinct()
        if configs is None or scope[:2] in configs
    }
    changes = {}
    with transaction.atomic():
        for judge_name, judge_version, prompt_version, rubric_version in sorted(found):
            change = lock_evaluate(
                judge_name=judge_name, judge_version=judge_version, prompt_version=prompt_version, rubric_version=rubric_version,
                level=level
            )
            if change:
                changes[(judge_name, judge_version, prompt_version, rubric_version)] = change
    return changes


def level_set(*, metric: str, threshold: float, min_items: int, actor, reason: str = "") -> AgreementLevel:
    """A lead's new level; every judge configuration's lock is evaluated against it at once."""
    if metric not in AgreementMetric.values:
        raise InputError(f"metric must be one of {', '.join(AgreementMetric.values)}")
    if not -1.0 <= threshold <= 1.0:
        raise InputError("the threshold must be between -1 and 1")
    if min_items < 1:
        raise InputError("the minimum sample size must be at least 1 item")
    with transaction.atomic():
        previous = level_get()
        level = AgreementLevel.objects.create(metric=metric, threshold=threshold, min_items=min_items, set_by=actor)
        audit_log_create(
            action=AuditLog.Action.LEVEL_SET,
            actor=actor,
            subject="calibration level",
            reason=reason or f"{level}",
            detail={
                "metric": metric,
                "threshold": threshold,
                "min_items": min_items,
                "previous": {"metric": previous.metric, "threshold": previous.threshold, "min_items": previous.min_items},
            },
        )
        locks_evaluate()
    return level


def lock_unlock(*, lock: JudgeLock, actor, reason: str) -> bool:
    """A lead lifts one scope's lock by hand, with a reason. It holds until new labels change the decisive result."""
    reason = reason.strip()
    if not reason:
        raise InputError("say why the judge may be trusted without a recalibration")
    with transaction.atomic():
        lock = JudgeLock.objects.select_for_update().get(pk=lock.pk)
        if not lock.locked:
            return False
        lock.locked = False
        lock.overridden = True
        lock.changed_at = timezone.now()
        lock.reason = f"unlocked by {actor.username}: {reason}"
        lock.save()
        subject = _subject(lock.judge_name, lock.judge_version, lock.prompt_version, lock.rubric_version)
        audit_log_create(
            action=AuditLog.Action.JUDGE_UNLOCKED,
            actor=actor,
            subject=subject,
            reason=reason,
            run=lock.result.sample.run if lock.result else None,
            detail={
                "judge": lock.judge_name,
                "judge_version": lock.judge_version,
                "prompt_version": lock.prompt_version,
                "rubric_version": lock.rubric_version,
                "override": True,
            },
        )
        _lock_notify(lock, locked=False, subject=subject)
    return True


def policy_set(
    *,
    actor,
    not_calibrated: str,
    stale: str,
    alpha_floor: float,
    single_annotator_locks: bool,
    corrected_gate: bool,
    checkup_failed: str | None = None,
    checkup_position_floor: float | None = None,
    checkup_accuracy_floor: float | None = None,
    checkup_kappa_floor: float | None = None,
    alt_test: str | None = None,
    alt_test_epsilon: float | None = None,
    undecided: str | None = None,
    annotators: str | None = None,
    ties: str | None = None,
    non_answers: str | None = None,
    slice_floor: float | None = None,
    slice_floor_action: str = PolicyAction.WARN,
    reason: str = "",
) -> CalibrationPolicy:
    """A lead's new calibration policy, audited; every lock is evaluated again under it (a new alpha floor
    or single-annotator rule changes which samples may lock). A check-up, alternative-annotator-test,
    undecided or handling setting left out (None) stays as the policy in force has it. A new handling
    recomputes every sample's agreement (in a worker, as new labels would): until then each figure says the
    handling it was computed with."""
    _handling_check(annotators=annotators, ties=ties, non_answers=non_answers)
    _policy_values_check(
        actions={"not calibrated": not_calibrated, "stale": stale, "a failed check-up": checkup_failed, "undecided": undecided},
        alpha_floor=alpha_floor, checkup_position_floor=checkup_position_floor, checkup_accuracy_floor=checkup_accuracy_floor,
        checkup_kappa_floor=checkup_kappa_floor, alt_test=alt_test, alt_test_epsilon=alt_test_epsilon, slice_floor=slice_floor,
        slice_floor_action=slice_floor_action,
    )
    with transaction.atomic():
        previous = policy_get()
        checkup = {
            "checkup_failed": checkup_failed,
            "checkup_position_floor": checkup_position_floor,
            "checkup_accuracy_floor": checkup_accuracy_floor,
            "checkup_kappa_floor": checkup_kappa_floor,
            "alt_test": alt_test,
            "alt_test_epsilon": alt_test_epsilon,
            "undecided": undecided,
            "annotators": annotators,
            "ties": ties,
            "non_answers": non_answers,
        }
        policy = CalibrationPolicy.objects.create(
            not_calibrated=not_calibrated,
            stale=stale,
            alpha_floor=alpha_floor,
            single_annotator_locks=single_annotator_locks,
            corrected_gate=corrected_gate,
            slice_floor=slice_floor,  # None: no floor (off), as a lead's form leaves it empty
            slice_floor_action=slice_floor_action,
            **{name: getattr(previous, name) if value is None else value for name, value in checkup.items()},
            set_by=actor if getattr(actor, "is_authenticated", False) else None,
            reason=reason.strip(),
        )
        _audit(
            action=AuditLog.Action.POLICY_SET,
            actor=actor,
            subject="calibration policy",
            reason=reason.strip() or str(policy),
            detail={**policy.as_dict(), "previous": previous.as_dict()},
        )
        locks_evaluate()
        if policy.declared_handling != previous.declared_handling:
            _agreements_recount()
    return policy


def _policy_values_check(
    *, actions: dict, alpha_floor, checkup_position_floor, checkup_accuracy_floor, checkup_kappa_floor, alt_test,
    alt_test_epsilon, slice_floor, slice_floor_action,
) -> None:
    """Every value of a new calibration policy in its range, or InputError naming the one that is not."""
    for name, value in actions.items():
        if value is not None and value not in PolicyAction.values:
            raise InputError(f"{name}: must be one of {', '.join(PolicyAction.values)}")
    if not -1.0 <= alpha_floor <= 1.0:
        raise InputError("the alpha floor must be between -1 and 1")
    for name, value in (("position consistency", checkup_position_floor), ("accuracy", checkup_accuracy_floor)):
        if value is not None and not 0.0 <= value <= 1.0:
            raise InputError(f"the check-up's {name} floor must be between 0 and 1")
    if checkup_kappa_floor is not None and not -1.0 <= checkup_kappa_floor <= 1.0:
        raise InputError("the check-up's kappa floor must be between -1 and 1")
    if alt_test is not None and alt_test not in AltTestRequirement.values:
        raise InputError(f"the alternative annotator test: must be one of {', '.join(AltTestRequirement.values)}")
    if alt_test_epsilon is not None and not 0.0 <= alt_test_epsilon < 1.0:
        raise InputError("ε of the alternative annotator test must be from 0 up to (not including) 1")
    if slice_floor is not None and not -1.0 <= slice_floor <= 1.0:
        raise InputError("the worst slice's floor must be between -1 and 1")
    if slice_floor_action not in PolicyAction.values:
        raise InputError(f"the worst slice below its floor: must be one of {', '.join(PolicyAction.values)}")


def _handling_check(**choices: str | None) -> None:
    allowed = {"annotators": AnnotatorHandling.values, "ties": TieHandling.values, "non_answers": NonAnswerHandling.values}
    for name, value in choices.items():
        if value is not None and value not in allowed[name]:
            raise InputError(f"{name.replace('_', '-')}: must be one of {', '.join(allowed[name])}")


def _agreements_recount() -> None:
    """Every labelled sample's agreement computed again under the new handling: marked pending (its page
    says so) and sent to a worker once the policy commits; a worker's start-up or `agreement` catches up."""
    samples = list(Sample.objects.exclude(labels_version=0).values_list("pk", flat=True))
    Sample.objects.filter(pk__in=samples).update(agreement_version=0, updated_at=timezone.now())

    def send():
        # As services.agreement.agreement_enqueue (not imported: it imports this module), for every sample.
        for pk in samples:
            try:
                taskqueue.send(taskqueue.COMPUTE_AGREEMENT, pk)
            except Exception:  # the sample stays pending; a worker's start-up or `agreement` catches up
                log.warning("could not enqueue the agreement of sample %s; it stays pending", pk, exc_info=True)
                return

    transaction.on_commit(send)
