"""The human-corrected mean and rates (PPI++): a run's figures corrected with a sample's labels."""

from __future__ import annotations

from calibration.models import Adjudication, Assignment, AssignmentState, LabelKind, Sample
from calibration.selectors.run_judges import judge_configurations_for_run, primary_judge_for_run
from calibration.selectors.slices import corrected_slices_for_run
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.models import Run, RunKind


def _human_means(sample: Sample) -> dict[tuple[str, str], list[float]]:
    """{(case id, criterion): [each person's score]} of a score sample's labelled items, as its stored
    agreement counted them (its snapshot); a resolved item's one score is the lead's resolved label."""
    labels: dict[tuple[str, str], list[float]] = {}
    for case_key, criterion, _annotator, value in sample.agreement_labels or []:
        try:
            labels.setdefault((case_key, criterion), []).append(float(value))
        except ValueError:
            continue
    for key, value in _resolved_labels(sample=sample).items():
        if key in labels:
            labels[key] = [float(value)]
    return labels


def _resolved_labels(*, sample: Sample | None = None, run: Run | None = None) -> dict[tuple[str, str], str]:
    """{(case id, criterion): a lead's resolved label} of one sample's items, or of every sample of a run."""
    rows = (
        Adjudication.objects.filter(item__sample=sample) if sample is not None
        else Adjudication.objects.filter(item__sample__run=run)
    )
    return {
        (case_key, criterion): value
        for case_key, criterion, value in rows.values_list("item__case_key", "item__criterion", "value")
    }


# The label kind whose samples correct each kind of run: a pointwise run's mean of scores, a jury's pass rate,
# a pairwise comparison's win rate.
CORRECTED_LABEL_KINDS = {
    RunKind.POINTWISE: LabelKind.SCORE, RunKind.JURY: LabelKind.PASS_FAIL, RunKind.PAIRWISE: LabelKind.PAIRWISE
}


def corrected_sample_for_run(*, run: Run) -> Sample | None:
    """The labelled sample a run's corrected mean (pointwise) or rate (jury, pairwise) stands on: a sample of
    the run itself, else the latest sample of a run of its kind with the same judge configuration, prompt and
    rubric versions (the judge's error measured there carries over only to the same judge, prompt and rubric)."""
    label_kind = CORRECTED_LABEL_KINDS.get(run.kind)
    if label_kind is None:
        return None
    # Labelled as the stored agreement counted it (its snapshot), so the corrected figures and the agreement
    # beside them stand on the same labels.
    labelled = Sample.objects.filter(label_kind=label_kind).exclude(agreement_computed_at=None).exclude(agreement_labels=[])
    own = labelled.filter(run=run).order_by("-created_at", "-id").first()
    if own is not None:
        return own
    name = primary_judge_for_run(run=run)
    if name is None:
        return None
    version = judge_configurations_for_run(run=run)[name]["version"]
    for sample in labelled.exclude(run=run).filter(run__kind=run.kind).select_related("run").order_by("-created_at", "-id")[:50]:
        other = judge_configurations_for_run(run=sample.run).get(name)
        if (
            other
            and other["version"] == version
            and sample.run.versions.get("prompt") == run.versions.get("prompt")
            and sample.run.versions.get("rubric") == run.versions.get("rubric")
        ):
            return sample
    return None


def corrected_for_run(*, run: Run) -> dict | None:
    """The report's `corrected` key (CONTRACT §6): the prediction-powered mean of the run's scores and its
    95% interval, from its judge configuration's labelled sample; None without one."""
    from calibration.core.ppi import corrected_mean, stratum_weights

    sample = corrected_sample_for_run(run=run)
    if sample is None:
        return None
    name = primary_judge_for_run(run=run)
    scores = {
        (v.case_id, v.criterion): float(v.value)
        for v in judgeapp_selectors.verdicts_for_run(run=run)
        if v.judge == name and isinstance(v.value, (int, float))
    }
    same_run = sample.run_id == run.pk
    sample_scores = scores if same_run else {
        (v.case_id, v.criterion): float(v.value)
        for v in judgeapp_selectors.verdicts_for_run(run=sample.run)
        if v.judge == name and isinstance(v.value, (int, float))
    }
    humans = _human_means(sample)
    strata = {(k, c): s for k, c, s in sample.items.values_list("case_key", "criterion", "stratum")}
    keys = sorted(key for key in humans if key in sample_scores)
    human = [sum(humans[key]) / len(humans[key]) for key in keys]
    judge_labelled = [sample_scores[key] for key in keys]
    labelled = set(keys) if same_run else set()
    judge_unlabelled = [score for key, score in sorted(scores.items()) if key not in labelled]
    # A sample drawn with equal allocation over the judge's scores is weighted back to the sample run's
    # own mix of scores (its population); an imported sample is taken as a simple random one.
    drawn = sample.method == Sample.Method.DRAWN and bool(sample.stratified_by)
    population: dict[str, int] = {}
    if drawn:
        for score in sample_scores.values():
            population[str(int(score))] = population.get(str(int(score)), 0) + 1
    weights = stratum_weights([strata.get(key, "") if drawn else "" for key in keys], population)
    result = corrected_mean(human, judge_labelled, judge_unlabelled, weights=weights)
    if result is None:
        return None
    result["slices"] = corrected_slices_for_run(
        run=run, sample=sample, keys=keys, human=human, judge_labelled=judge_labelled,
        unlabelled={key: score for key, score in scores.items() if key not in labelled},
        strata=[strata.get(key, "") for key in keys] if weights is not None else None, sample_scores=sample_scores,
    )
    result.update(
        {
            "judge_mean_unlabelled": sum(judge_unlabelled) / len(judge_unlabelled),
            "human_mean_labelled": sum(human) / len(human),
            **_sample_facts(sample, same_run=same_run, weighted=weights is not None),
        }
    )
    return result


def _sample_facts(sample: Sample, *, same_run: bool, weighted: bool) -> dict:
    """Which labelled sample a corrected figure stands on, as the corrected mean and the corrected rate both report it."""
    return {
        "sample_id": str(sample.uuid),
        "sample_run_id": sample.run.run_id,
        "same_run": same_run,
        "weighted": weighted,
        "snapshot": sample.snapshot,
    }


def _verdicts_of(run: Run, judge: str | None) -> dict[str, str]:
    return {v.case_id: str(v.value) for v in judgeapp_selectors.verdicts_for_run(run=run) if v.judge == judge and not v.criterion}


def corrected_rate_for_run(*, run: Run) -> dict | None:
    """A jury's human-corrected pass rate or a pairwise comparison's human-corrected win rate of version B
    (the report's `corrected_pass_rate` / `corrected_win_rate`, CONTRACT §6): PPI++ on the verdicts as numbers
    (pass 1, fail 0; B 1, tie ½, A 0), from the judge configuration's labelled sample; None without one, or
    with fewer than two labelled or two judged-only items. A case without a verdict (a jury's unjudged case, a
    pair without a both-order verdict) is in neither set."""
    from calibration.core.ppi import PASS_VALUES, WIN_VALUES, corrected_rate, stratum_weights

    if run.kind not in (RunKind.JURY, RunKind.PAIRWISE):
        return None
    sample = corrected_sample_for_run(run=run)
    if sample is None:
        return None
    values = PASS_VALUES if run.kind == RunKind.JURY else WIN_VALUES
    name = primary_judge_for_run(run=run)
    verdicts = {case: v for case, v in _verdicts_of(run, name).items() if v in values}
    same_run = sample.run_id == run.pk
    sample_verdicts = verdicts if same_run else {case: v for case, v in _verdicts_of(sample.run, name).items() if v in values}
    humans: dict[str, list[str]] = {}
    for case_key, _criterion, _annotator, value in sorted(sample.agreement_labels or []):  # the snapshot's labels
        if value in values:
            humans.setdefault(case_key, []).append(value)
    for (case_key, _criterion), value in _resolved_labels(sample=sample).items():
        if case_key in humans and value in values:
            humans[case_key] = [value]  # the lead's resolved label is the item's one label
    keys = sorted(key for key in humans if key in sample_verdicts)
    labelled = set(keys) if same_run else set()
    # A sample drawn with equal allocation over the judge's verdicts is weighted back to the sample run's mix
    # of verdicts, as the corrected mean is.
    strata = dict(sample.items.filter(criterion="").values_list("case_key", "stratum"))
    drawn = sample.method == Sample.Method.DRAWN and bool(sample.stratified_by)
    population: dict[str, int] = {}
    for verdict in sample_verdicts.values() if drawn else ():
        population[verdict] = population.get(verdict, 0) + 1
    weights = stratum_weights([strata.get(key, "") if drawn else "" for key in keys], population)
    result = corrected_rate(
        [humans[key] for key in keys],
        [sample_verdicts[key] for key in keys],
        [v for case, v in sorted(verdicts.items()) if case not in labelled],
        values=values,
        weights=weights,
    )
    if result is None:
        return None
    judge_only = [values[v] for case, v in verdicts.items() if case not in labelled]
    result.update(
        {
            "judge_rate_unlabelled": sum(judge_only) / len(judge_only),
            "human_rate_labelled": sum(sum(values[x] for x in humans[k]) / len(humans[k]) for k in keys) / len(keys),
            **_sample_facts(sample, same_run=same_run, weighted=weights is not None),
        }
    )
    return result


def human_majority_for_run(*, run: Run) -> dict[str, str | None]:
    """{case id: the label most of its annotators gave ("A", "B", "tie"), None when they split evenly; a lead's
    resolved label where there is one} over the labelled items of the run's samples: what an imported pairwise
    run's verdicts are set against."""
    votes: dict[str, dict[str, int]] = {}
    for case_key, value in Assignment.objects.filter(
        item__sample__run=run, state=AssignmentState.LABELLED
    ).values_list("item__case_key", "value"):
        tally = votes.setdefault(case_key, {})
        tally[value] = tally.get(value, 0) + 1
    majority = {}
    for case_key, tally in votes.items():
        ranked = sorted(tally.items(), key=lambda kv: -kv[1])
        majority[case_key] = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else None
    for (case_key, _criterion), value in _resolved_labels(run=run).items():
        if case_key in majority:
            majority[case_key] = value  # a lead resolved the item: the people's one label
    return majority
