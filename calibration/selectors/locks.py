"""The locks a lead put on a judge's configuration, and the reasons they give to the gate."""

from __future__ import annotations

from django.db.models import QuerySet

from calibration.models import AgreementResult, JudgeLock


def lock_list() -> QuerySet[JudgeLock]:
    return JudgeLock.objects.select_related("result", "result__sample", "result__sample__run").order_by(
        "judge_name", "-changed_at", "-id"
    )


def _scope_words(prompt_version: str, rubric_version: str) -> str:
    return f"prompt {prompt_version or '—'}, rubric {rubric_version or '—'}"


def lock_reason_for_scope(*, judge_name: str, judge_version: str, prompt_version: str, rubric_version: str) -> str | None:
    """Why a judge configuration may not back the gate of a run judged with this prompt and rubric, or None.

    Only locks of the same prompt × rubric scope apply: a lock measured on rubric A never blocks a run on
    rubric B."""
    prompt_version, rubric_version = prompt_version or "", rubric_version or ""
    scoped = JudgeLock.objects.filter(judge_name=judge_name, prompt_version=prompt_version, rubric_version=rubric_version)
    lock = scoped.filter(judge_version=judge_version).first()
    if lock is not None:
        if lock.locked:
            return f"judge locked: {judge_name} (configuration {judge_version[:12]}): {lock.reason}"
        return None
    # A configuration no person has scored in this scope inherits its judge's state there: changing a locked
    # judge's base URL must not be a way round the lock. It is lifted when a sample of the new configuration
    # with this prompt and rubric reaches the level.
    latest = scoped.order_by("-changed_at", "-id").first()
    if latest is not None and latest.locked:
        return (
            f"judge locked: {judge_name} was locked in configuration {latest.judge_version[:12]} with "
            f"{_scope_words(prompt_version, rubric_version)} ({latest.reason}); configuration {judge_version[:12]} has no "
            "human-scored sample that reaches the level yet"
        )
    return None



def locks_for_judge(*, judge_name: str, judge_version: str) -> list[JudgeLock]:
    """A judge configuration's locks, one per prompt × rubric scope it was measured in, latest change first."""
    return list(
        JudgeLock.objects.filter(judge_name=judge_name, judge_version=judge_version).select_related("result").order_by(
            "-changed_at", "-id"
        )
    )


def lock_get(*, judge_name: str, judge_version: str, prompt_version: str, rubric_version: str) -> JudgeLock:
    """One scope's lock (404 without one): what a lead unlocks by hand."""
    from django.shortcuts import get_object_or_404

    return get_object_or_404(
        JudgeLock, judge_name=judge_name, judge_version=judge_version, prompt_version=prompt_version or "",
        rubric_version=rubric_version or ""
    )


def calibrated_versions_for_judge(*, judge_name: str) -> set[str]:
    return set(AgreementResult.objects.filter(judge_name=judge_name).values_list("judge_version", flat=True))
