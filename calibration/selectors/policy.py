"""The agreement level and the calibration policy in force, and the rules a judge's status is decided by."""

from __future__ import annotations

from calibration.core import status as status_rules
from calibration.models import AgreementLevel, AgreementMetric, CalibrationPolicy, LabelKind, PolicyAction
from judgeapp.judging.memo import shared_read


@shared_read
def level_get() -> AgreementLevel:
    """The level in force: the latest a lead set, or the default (kappa 0.6, 20 items) if none was."""
    return AgreementLevel.objects.select_related("set_by").first() or AgreementLevel()


@shared_read
def policy_get() -> CalibrationPolicy:
    """The policy in force: the latest a lead set, or the default (warn, alpha floor 0.667)."""
    return CalibrationPolicy.objects.select_related("set_by").first() or CalibrationPolicy()


def rules_get(*, level: AgreementLevel | None = None, policy: CalibrationPolicy | None = None) -> status_rules.Rules:
    level = level or level_get()
    policy = policy or policy_get()
    return status_rules.Rules(
        threshold=level.threshold,
        min_items=level.min_items,
        alpha_floor=policy.alpha_floor,
        single_annotator_locks=policy.single_annotator_locks,
        metric_name="kappa" if level.metric == AgreementMetric.KAPPA else "agreement",
        not_calibrated_blocks=policy.not_calibrated == PolicyAction.BLOCK,
        stale_blocks=policy.stale == PolicyAction.BLOCK,
        undecided_blocks=policy.undecided == PolicyAction.BLOCK,
    )


def metric_label(*, metric: str, label_kind: str) -> str:
    if metric == AgreementMetric.KAPPA:
        return "quadratic-weighted kappa" if label_kind == LabelKind.SCORE else "Cohen's kappa"
    return "exact agreement" if label_kind == LabelKind.SCORE else "percent agreement"
