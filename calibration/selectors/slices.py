"""Slices: the figures per tag, worst first (calibration/core/slices.py)."""

from __future__ import annotations

from calibration.core import slices as slice_rules
from calibration.models import AgreementLevel, AgreementResult, PolicyAction, Sample
from calibration.selectors.evidence import decisive_result_for_scope
from calibration.selectors.policy import level_get, metric_label, policy_get
from calibration.selectors.run_judges import judge_configurations_for_run, primary_judge_for_run, scope_for_run
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.models import Run


def slices_for_result(result: AgreementResult | None, level: AgreementLevel | None = None) -> list[dict]:
    """A result's per-tag agreement, the worst first by the level's metric, each marked `decides` (it has the
    level's minimum of items; a smaller slice is shown and never decides)."""
    if result is None or not result.slices:
        return []
    level = level or level_get()
    return slice_rules.worst_first(result.slices, figure=level.metric, min_items=level.min_items)


def corrected_slices_for_run(
    *, run: Run, sample: Sample, keys, human, judge_labelled, unlabelled, strata, sample_scores
) -> list[dict]:
    """The corrected mean per tag (the report's `corrected.slices`), lowest first; the labelled items' tags as
    their sample kept them, the unlabelled ones' from the run's test set."""
    item_tags = {(k, c): tags for k, c, tags in sample.items.values_list("case_key", "criterion", "tags")}
    run_tags = judgeapp_selectors.case_tags_for_run(run=run)
    sample_tags = run_tags if sample.run_id == run.pk else judgeapp_selectors.case_tags_for_run(run=sample.run)
    tags_of = {key: item_tags.get(key) or [] for key in keys}
    tags_of.update({key: run_tags.get(key[0], []) for key in unlabelled})

    def population_of(tag: str) -> dict[str, int]:
        population: dict[str, int] = {}
        for key, score in sample_scores.items():
            if tag in sample_tags.get(key[0], ()):
                population[str(int(score))] = population.get(str(int(score)), 0) + 1
        return population

    return slice_rules.corrected_slices(
        keys, human, judge_labelled, unlabelled, tags_of, strata=strata, population_of=population_of if strata else None,
        min_items=level_get().min_items,
    )


def slice_floor_for_run(*, run: Run) -> dict | None:
    """The lead's floor for the worst slice, read against the primary judge's deciding evidence in the run's
    scope: {line, blocks} when the worst slice with enough items is below it; None otherwise (no floor, no
    deciding evidence, no tags)."""
    policy = policy_get()
    name = primary_judge_for_run(run=run)
    if policy.slice_floor is None or name is None:
        return None
    level = level_get()
    prompt, rubric = scope_for_run(run=run)
    result = decisive_result_for_scope(
        judge_name=name, judge_version=judge_configurations_for_run(run=run)[name]["version"], prompt_version=prompt,
        rubric_version=rubric, level=level, policy=policy,
    )
    if result is None:
        return None
    line = slice_rules.slice_floor_line(
        result.slices, figure=level.metric, figure_label=metric_label(metric=level.metric, label_kind=result.label_kind),
        min_items=level.min_items, floor=policy.slice_floor, judge=name,
    )
    return {"line": line, "blocks": policy.slice_floor_action == PolicyAction.BLOCK} if line else None
