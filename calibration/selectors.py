"""What the rest of the app asks calibration, and calibration's own reads.

judgeapp's gate and reports call `gate_lock_reasons` and `agreement_for_run`; nothing else of calibration's
is imported outside it. judgeapp's data is read only through `judgeapp.judging.selectors`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from calibration.models import AgreementLevel, AgreementMetric, AgreementResult, Assignment, AssignmentState, JudgeLock, Sample
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.models import Run, RunKind, content_hash, short_version

POOLED_JURY = "jury"


# --- A run's judges ------------------------------------------------------------------------------------


def judge_configurations(*, run: Run) -> dict[str, dict]:
    """{judge name: {"version": configuration hash, "scripted_demo": bool}} of every judge a run used.

    A jury's pooled verdict is a judge of its own, "jury", whose configuration is its panel's.
    """
    configs = {}
    for name, snapshot in (run.config.get("judges") or {}).items():
        configs[name] = {
            "version": snapshot.get("version") or short_version(content_hash(snapshot)),
            "scripted_demo": bool(snapshot.get("scripted_demo")),
        }
    if run.kind == RunKind.JURY and configs:
        panel = sorted(f"{name}:{c['version']}" for name, c in configs.items())
        configs[POOLED_JURY] = {
            "version": short_version(content_hash({"jury": panel})),
            "scripted_demo": any(c["scripted_demo"] for c in configs.values()),
        }
    return configs


def primary_judge(*, run: Run) -> str | None:
    """The judge whose verdict a run's report stands on: the pooled one for a jury, else the run's judge."""
    configs = judge_configurations(run=run)
    if POOLED_JURY in configs:
        return POOLED_JURY
    if run.judge_id and run.judge.name in configs:
        return run.judge.name
    return next(iter(configs), None)


# --- The level and the locks ---------------------------------------------------------------------------


def level_current() -> AgreementLevel:
    """The level in force: the latest a lead set, or the default (kappa 0.6, 20 items) if none was."""
    return AgreementLevel.objects.select_related("set_by").first() or AgreementLevel()


def level_history(*, limit: int = 20) -> QuerySet[AgreementLevel]:
    return AgreementLevel.objects.select_related("set_by")[:limit]


def decisive_result(*, judge_name: str, judge_version: str, level: AgreementLevel) -> AgreementResult | None:
    """The result that decides a judge configuration's lock: from the latest sample with enough labelled
    items and a defined figure, all criteria pooled."""
    results = AgreementResult.objects.filter(
        judge_name=judge_name, judge_version=judge_version, criterion="", n_items__gte=level.min_items
    )
    field = "kappa" if level.metric == AgreementMetric.KAPPA else "agreement"
    results = results.filter(**{f"{field}__isnull": False})
    return results.select_related("sample", "sample__run").order_by("-sample__created_at", "-sample_id").first()


def locks_all() -> QuerySet[JudgeLock]:
    return JudgeLock.objects.select_related("result", "result__sample", "result__sample__run").order_by("judge_name", "-changed_at")


def lock_reason_for(*, judge_name: str, judge_version: str) -> str | None:
    """Why a judge configuration may not back a gate, or None."""
    lock = JudgeLock.objects.filter(judge_name=judge_name, judge_version=judge_version).first()
    if lock is not None:
        if lock.locked:
            return f"judge not calibrated: {judge_name} (configuration {judge_version[:12]}): {lock.reason}"
        return None
    # A configuration no person has scored yet inherits its judge's state: changing a locked judge's
    # base URL must not be a way round the lock. It is lifted when a sample of the new configuration
    # reaches the level.
    latest = JudgeLock.objects.filter(judge_name=judge_name).order_by("-changed_at", "-id").first()
    if latest is not None and latest.locked:
        return (
            f"judge not calibrated: {judge_name} was locked in configuration {latest.judge_version[:12]} "
            f"({latest.reason}); configuration {judge_version[:12]} has no human-scored sample that reaches the level yet"
        )
    return None


def gate_lock_reasons(*, run: Run) -> list[str]:
    """Reasons the release gate of `run` is locked by calibration, e.g. ["judge not calibrated: …"].

    Empty while no agreement level applies to the run's judge configurations: a judge no person has
    scored is not locked (unless the same judge, under an earlier configuration, is).
    """
    reasons = []
    for name, config in judge_configurations(run=run).items():
        reason = lock_reason_for(judge_name=name, judge_version=config["version"])
        if reason:
            reasons.append(reason)
    return reasons


# --- Agreement -----------------------------------------------------------------------------------------


def _figures(result: AgreementResult) -> dict:
    return {
        "n_items": result.n_items,
        "n_labels": result.n_labels,
        "kappa": result.kappa,
        "agreement": result.agreement,
        "metrics": result.metrics,
    }


def result_status(result: AgreementResult, level: AgreementLevel) -> str:
    value = result.metric_value(level.metric)
    if result.n_items < level.min_items:
        return "too few items"
    if value is None:
        return "undefined"
    return "calibrated" if value >= level.threshold else "below level"


def agreement_for_run(*, run: Run) -> dict | None:
    """The agreement of the run's judge with the latest human-scored sample, for the report's
    `agreement` key; None when people have not scored a sample for that judge configuration."""
    name = primary_judge(run=run)
    if name is None:
        return None
    config = judge_configurations(run=run)[name]
    pooled = (
        AgreementResult.objects.filter(judge_name=name, judge_version=config["version"], criterion="")
        .select_related("sample", "sample__run")
        .order_by("-sample__created_at", "-sample_id")
        .first()
    )
    if pooled is None:
        return None
    level = level_current()
    sample = pooled.sample
    per_criterion = {
        r.criterion: _figures(r)
        for r in AgreementResult.objects.filter(sample=sample, judge_name=name).exclude(criterion="").order_by("criterion")
    }
    inter = pooled.inter_annotator or None
    return {
        "judge": name,
        "judge_version": config["version"],
        "sample_id": str(sample.uuid),
        "sample_run_id": sample.run.run_id,
        "sample_created_at": sample.created_at.isoformat(),
        "prompt_version": pooled.prompt_version or None,
        "rubric_version": pooled.rubric_version or None,
        "same_versions_as_run": (pooled.prompt_version or None) == run.versions.get("prompt")
        and (pooled.rubric_version or None) == run.versions.get("rubric"),
        "label_kind": pooled.label_kind,
        **_figures(pooled),
        "per_criterion": per_criterion,
        "inter_annotator_alpha": inter and inter.get("alpha"),
        "level": {"metric": level.metric, "threshold": level.threshold, "min_items": level.min_items},
        "status": result_status(pooled, level),
        "locked": lock_reason_for(judge_name=name, judge_version=config["version"]) is not None,
        "pending_labels": sample.agreement_stale,
        "scripted_demo": pooled.scripted_demo,
    }


@dataclass
class ConfigurationAgreement:
    """The latest agreement of one judge configuration, for the overview and the CLI."""

    judge_name: str
    judge_version: str
    pooled: AgreementResult
    per_criterion: list[AgreementResult]
    status: str
    lock: JudgeLock | None


def agreement_latest(*, judge: str | None = None) -> list[ConfigurationAgreement]:
    """Per judge configuration, its results on the latest sample it was compared on."""
    level = level_current()
    results = AgreementResult.objects.select_related("sample", "sample__run").order_by(
        "judge_name", "judge_version", "-sample__created_at", "-sample_id", "criterion"
    )
    if judge:
        results = results.filter(judge_name=judge)
    latest_sample: dict[tuple[str, str], int] = {}
    grouped: dict[tuple[str, str], list[AgreementResult]] = {}
    for result in results:
        key = (result.judge_name, result.judge_version)
        latest_sample.setdefault(key, result.sample_id)
        if result.sample_id == latest_sample[key]:
            grouped.setdefault(key, []).append(result)
    locks = {(lock.judge_name, lock.judge_version): lock for lock in JudgeLock.objects.all()}
    rows = []
    for (name, version), group in grouped.items():
        pooled = next((r for r in group if r.criterion == ""), None)
        if pooled is None:
            continue
        rows.append(
            ConfigurationAgreement(
                judge_name=name,
                judge_version=version,
                pooled=pooled,
                per_criterion=[r for r in group if r.criterion],
                status=result_status(pooled, level),
                lock=locks.get((name, version)),
            )
        )
    rows.sort(key=lambda row: (row.judge_name, -row.pooled.sample.created_at.timestamp()))
    return rows


def results_of_sample(*, sample: Sample) -> QuerySet[AgreementResult]:
    return sample.results.order_by("judge_name", "criterion")


# --- Samples and queues --------------------------------------------------------------------------------


def samples_recent(*, limit: int = 50) -> QuerySet[Sample]:
    return (
        Sample.objects.select_related("run", "created_by")
        .annotate(
            n_assignments=Count("items__assignments"),
            n_labelled=Count("items__assignments", filter=Q(items__assignments__state=AssignmentState.LABELLED)),
        )
        .order_by("-created_at")[:limit]
    )


def sample_get(*, sample_uuid) -> Sample:
    from django.shortcuts import get_object_or_404

    return get_object_or_404(Sample.objects.select_related("run", "created_by"), uuid=sample_uuid)


def sample_progress(*, sample: Sample) -> list[dict]:
    """Per annotator: assigned, labelled, skipped."""
    rows = (
        Assignment.objects.filter(item__sample=sample)
        .values("annotator__username")
        .annotate(
            assigned=Count("id"),
            labelled=Count("id", filter=Q(state=AssignmentState.LABELLED)),
            skipped=Count("id", filter=Q(state=AssignmentState.SKIPPED)),
        )
        .order_by("annotator__username")
    )
    return [{"annotator": r["annotator__username"], **{k: r[k] for k in ("assigned", "labelled", "skipped")}} for r in rows]


def _queue(annotator) -> QuerySet[Assignment]:
    # An item held back on leakage is in no queue (it gets no assignment when drawn; this is the guard).
    return (
        Assignment.objects.filter(annotator=annotator)
        .filter(item__leakage_flags=[])
        .select_related("item", "item__sample", "item__case")
    )


def sample_held_back(*, sample: Sample) -> list:
    """The sample's items held back from annotators on leakage, with their flags, for the reviewer."""
    return [item for item in sample.items.select_related("case").order_by("position") if item.held_back]


def queue_next(*, annotator, skipped: bool = False) -> Assignment | None:
    """The annotator's next item: the first pending one (oldest sample first, then their own order);
    with `skipped`, the one they skipped longest ago."""
    if skipped:
        return _queue(annotator).filter(state=AssignmentState.SKIPPED).order_by("acted_at", "id").first()
    return _queue(annotator).filter(state=AssignmentState.PENDING).order_by("item__sample__created_at", "item__sample_id", "position").first()


def queue_progress(*, annotator) -> dict:
    counts = Assignment.objects.filter(annotator=annotator).aggregate(
        total=Count("id"),
        labelled=Count("id", filter=Q(state=AssignmentState.LABELLED)),
        skipped=Count("id", filter=Q(state=AssignmentState.SKIPPED)),
    )
    counts["pending"] = counts["total"] - counts["labelled"] - counts["skipped"]
    counts["percent"] = round(100 * counts["labelled"] / counts["total"]) if counts["total"] else 0
    return counts


def queue_last_action(*, annotator) -> Assignment | None:
    return _queue(annotator).filter(acted_at__isnull=False).order_by("-acted_at", "-id").first()


def assignment_get(*, assignment_uuid) -> Assignment:
    from django.shortcuts import get_object_or_404

    return get_object_or_404(
        Assignment.objects.select_related("item", "item__sample", "item__sample__run", "item__case", "annotator"),
        uuid=assignment_uuid,
    )


def item_display(*, assignment: Assignment) -> dict:
    """What an annotator sees of an item, and nothing else: the input, the reply (or both replies, as 1
    and 2 in this annotator's order), the rubric with its examples. No run, system, version, judge,
    model or verdict goes into it."""
    item = assignment.item
    sample = item.sample
    run = sample.run
    outputs = {o.slot: o.text for o in judgeapp_selectors.run_outputs(run=run).filter(case_id=item.case_id)}
    criteria = judgeapp_selectors.run_criteria(run=run)
    if item.criterion:
        criteria = [c for c in criteria if c.name == item.criterion]
    rubric = [
        {
            "name": c.name,
            "description": c.description,
            "points": [
                {"score": point, "meaning": c.scale.get(point, ""), "example": (c.examples or {}).get(point, "")}
                for point in sorted(c.scale, key=int)
            ],
        }
        for c in criteria
    ]
    display = {"input": item.case.input, "rubric": rubric, "label_kind": sample.label_kind}
    if sample.label_kind == "pairwise":
        first, second = ("B", "A") if assignment.swapped else ("A", "B")
        display["replies"] = [outputs.get(first, ""), outputs.get(second, "")]
        display["instruction"] = (run.config.get("imported") or {}).get("instruction") or (
            "Which reply is better against the rubric? The order of the replies means nothing, and a longer reply is not a better one."
        )
    else:
        display["reply"] = outputs.get("", item.case.output or "")
    if sample.label_kind == "score":
        low, high = criteria[0].scale_bounds if criteria else (1, 5)
        display["choices"] = [{"value": str(v), "key": str(v), "label": str(v)} for v in range(low, high + 1)]
    elif sample.label_kind == "pass_fail":
        display["choices"] = [{"value": "pass", "key": "1", "label": "Pass"}, {"value": "fail", "key": "0", "label": "Fail"}]
    else:
        display["choices"] = [
            {"value": "1", "key": "1", "label": "Reply 1"},
            {"value": "2", "key": "2", "label": "Reply 2"},
            {"value": "tie", "key": "0", "label": "Tie"},
        ]
    return display
