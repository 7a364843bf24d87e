"""Candidates: the configurations a lead tries on a sample, side by side, and the one adopted."""

from __future__ import annotations

from django.db.models import QuerySet

from calibration.models import AgreementResult, Candidate, Sample
from calibration.selectors.agreement import planning_for_result, status_for_result
from calibration.selectors.policy import level_get, rules_get
from calibration.selectors.run_judges import primary_judge_for_run
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.models import Run


def adopted_candidate_for_judge(*, judge_name: str) -> Candidate | None:
    """The candidate a lead adopted last for this judge (its configuration is the judge's now)."""
    return (
        Candidate.objects.filter(judge_name=judge_name, adopted_at__isnull=False)
        .select_related("run", "run__prompt", "run__rubric", "adopted_by")
        .order_by("-adopted_at", "-id")
        .first()
    )


def adopted_prompt_for_judge(*, judge_name: str):
    """The prompt text a lead adopted for this judge (a PromptTemplate), or None for the seed's."""
    from judgeapp.judging.prompts import load_prompt

    candidate = adopted_candidate_for_judge(judge_name=judge_name)
    if candidate is None or candidate.run.prompt is None:
        return None
    if candidate.run.prompt.content_hash == load_prompt("pointwise").content_hash:
        return None
    return candidate.run.prompt


def candidates_for_sample(*, sample: Sample) -> QuerySet[Candidate]:
    return sample.candidates.select_related("run", "run__prompt", "run__rubric", "created_by", "adopted_by").order_by(
        "created_at", "id"
    )


def candidate_get(*, candidate_uuid) -> Candidate:
    from django.shortcuts import get_object_or_404

    return get_object_or_404(
        Candidate.objects.select_related("sample", "sample__run", "run", "run__prompt", "run__rubric"), uuid=candidate_uuid
    )


def _column(
    result: AgreementResult | None, *, title: str, run: Run | None, reasonings: dict, candidate: Candidate | None = None
) -> dict:
    labels = {}
    if result is not None:
        for row in (result.details or {}).get("disagreements", []):
            key = tuple(row["item"])
            labels[key] = {**row, "reasoning": reasonings.get(key, "")}
    return {
        "title": title,
        "result": result,
        "run": run,
        "candidate": candidate,
        "confusion": (result.details or {}).get("confusion") if result else None,
        "disagreements": list(labels.values()),
    }


def side_by_side_for_sample(*, sample: Sample) -> dict:
    """The current judge beside every candidate judged on the sample's labelled items: figures with
    intervals, the judge × human table, and the items furthest apart with each judge's reasoning."""
    run = sample.run
    name = primary_judge_for_run(run=run)
    current = (
        AgreementResult.objects.filter(sample=sample, judge_name=name, criterion="", candidate__isnull=True).first() if name
        else None
    )
    columns = [
        _column(current, title=f"{name} as it judged run {run.run_id}" if name else "the run's judge", run=run,
                reasonings=judgeapp_selectors.reasonings_for_run(run=run))
    ]
    for candidate in candidates_for_sample(sample=sample):
        result = candidate.results.filter(criterion="").first()
        columns.append(
            _column(result, title=candidate.title, run=candidate.run, candidate=candidate,
                    reasonings=judgeapp_selectors.reasonings_for_run(run=candidate.run))
        )
    level = level_get()
    for column in columns:
        # Read on the interval, as the status is: yes (lower bound at the level), undecided, or no.
        result = column["result"]
        column["level_status"] = status_for_result(result, level) if result is not None else None
        column["planning"] = planning_for_result(result, level) if result is not None else None
    return {"judge": name, "columns": columns, "level": level, "rules": rules_get()}
