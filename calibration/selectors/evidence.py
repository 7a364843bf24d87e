"""The agreement results that count as a judge's evidence, pooled over criteria, and the one that decides."""

from __future__ import annotations

from django.db.models import QuerySet

from calibration.core import status as status_rules
from calibration.models import AgreementLevel, AgreementMetric, AgreementResult, CalibrationPolicy
from calibration.selectors.policy import level_get, metric_label, rules_get


def evidence_for_result(result: AgreementResult, level: AgreementLevel) -> status_rules.Evidence:
    """A pooled result as the status rules read it."""
    figure = result.kappa_figure if level.metric == AgreementMetric.KAPPA else result.agreement_figure
    inter = result.inter_annotator or {}
    alpha = inter.get("alpha") or {}
    when = result.effective_at or result.sample.created_at
    return status_rules.Evidence(
        judge_version=result.judge_version,
        prompt_version=result.prompt_version,
        rubric_version=result.rubric_version,
        n_items=result.n_items,
        value=result.metric_value(level.metric),
        ci=(figure or {}).get("ci"),
        metric_label=metric_label(metric=level.metric, label_kind=result.label_kind),
        date=when.isoformat(),
        sample_id=str(result.sample.uuid),
        overlap=bool(inter),
        alpha=alpha.get("value"),
        alpha_ci=alpha.get("ci"),
        alpha_items=inter.get("n_items", 0),
        candidate=result.candidate.title if result.candidate_id else "",
        n_unreadable=result.n_unreadable,
        handling=result.handling_words,
        non_answers=(result.handling or {}).get("non_answers", "disagreement"),
        extra={"sample_run_id": result.sample.run.run_id, "label_kind": result.label_kind, "scripted_demo": result.scripted_demo},
    )


def pooled_counting(**filters) -> QuerySet[AgreementResult]:
    return (
        AgreementResult.objects.counting()
        .filter(criterion="", **filters)
        .select_related("sample", "sample__run", "candidate")
        .order_by("-effective_at", "-id")
    )


def decisive_result_for_scope(
    *,
    judge_name: str,
    judge_version: str,
    prompt_version: str,
    rubric_version: str,
    level: AgreementLevel,
    policy: CalibrationPolicy | None = None,
) -> AgreementResult | None:
    """The result that decides a scope's lock — a judge configuration with one prompt and one rubric version:
    the newest evidence (a sample, or an adopted candidate) judged in that scope with enough labelled items,
    a defined figure and people whose own agreement reaches the floor (see calibration.core.status.counts),
    all criteria pooled."""
    rules = rules_get(level=level, policy=policy)
    scoped = pooled_counting(
        judge_name=judge_name, judge_version=judge_version, prompt_version=prompt_version or "",
        rubric_version=rubric_version or "", n_items__gte=level.min_items,
    )
    for result in scoped:
        if status_rules.counts(evidence_for_result(result, level), rules):
            return result
    return None


def evidence_for_judge(*, judge_name: str, level: AgreementLevel | None = None) -> list[status_rules.Evidence]:
    """Every pooled result that speaks for the judge, under any configuration, prompt and rubric, newest first."""
    level = level or level_get()
    return [evidence_for_result(r, level) for r in pooled_counting(judge_name=judge_name)]
