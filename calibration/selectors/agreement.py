"""Agreement: a run's figures against people, the latest per configuration, a judge's record (the
scorecard), and one consistent snapshot of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from django.db.models import Max, QuerySet, Sum

from calibration.core import status as status_rules
from calibration.models import AgreementLevel, AgreementMetric, AgreementResult, JudgeLock, Sample
from calibration.selectors.alt_test import alt_test_for_result
from calibration.selectors.corrected import corrected_for_run, corrected_rate_for_run
from calibration.selectors.evidence import evidence_for_result, pooled_counting
from calibration.selectors.locks import lock_reason_for_scope
from calibration.selectors.policy import level_get, policy_get, rules_get
from calibration.selectors.run_judges import judge_configurations_for_run, primary_judge_for_run, scope_for_run
from calibration.selectors.slices import slices_for_result
from calibration.selectors.status import calibration_for_run
from judgeapp.judging.memo import reads_are_shared, reads_shared
from judgeapp.models import Run, RunKind

T = TypeVar("T")


def agreement_fingerprint_get() -> tuple:
    """Changes whenever an agreement computation commits: each one raises its sample's agreement_version (the
    labels version it computed, above the last) and stamps agreement_computed_at, with its results, in one
    transaction."""
    figures = Sample.objects.aggregate(versions=Sum("agreement_version"), last=Max("agreement_computed_at"))
    return figures["versions"], figures["last"]


def one_snapshot(read: Callable[[], T], *, attempts: int = 3) -> T:
    """`read()`, whose figures all stand on stored agreement (status, agreement, corrected mean), read again
    when a computation committed while it read: a page or report never shows figures of two moments. Each
    attempt reads afresh (no answer shared from before the computation). Inside a page's shared scope the
    page's own memo already answers each read once, so a page of many runs reads once rather than check the
    fingerprint twice a run."""
    if reads_are_shared():
        return read()
    for _ in range(attempts):
        before = agreement_fingerprint_get()
        with reads_shared():
            answer = read()
        if agreement_fingerprint_get() == before:
            break
    return answer


def agreement_figures(result: AgreementResult) -> dict:
    """A result's counts and figures, as the run report and `calibrate agreement --json` both give them (each
    adds the handling its own way)."""
    return {
        "n_items": result.n_items,
        "n_unreadable": result.n_unreadable,
        "n_labels": result.n_labels,
        "kappa": result.kappa,
        "agreement": result.agreement,
        "metrics": result.metrics,
    }


def _figures(result: AgreementResult) -> dict:
    return {**agreement_figures(result), "handling_words": result.handling_words}


def _level_figure(result: AgreementResult, level: AgreementLevel) -> dict:
    return (result.kappa_figure if level.metric == AgreementMetric.KAPPA else result.agreement_figure) or {}


def status_for_result(result: AgreementResult, level: AgreementLevel) -> str:
    """A sample's figure against the level, on its interval: `calibrated` (lower bound at or above),
    `below level` (upper bound below), `undecided` (across it), `too few items`, `undefined`."""
    value = result.metric_value(level.metric)
    if result.n_items < level.min_items:
        return "too few items"
    if value is None:
        return "undefined"
    position = status_rules.interval_position(value, _level_figure(result, level).get("ci"), level.threshold)
    return {status_rules.ABOVE: "calibrated", status_rules.BELOW: "below level"}.get(position, status_rules.UNDECIDED)


def planning_for_result(result: AgreementResult, level: AgreementLevel) -> dict | None:
    """An undecided result's planning figure (calibration.core.status.planning), None otherwise."""
    if status_for_result(result, level) != status_rules.UNDECIDED:
        return None
    name = "kappa" if level.metric == AgreementMetric.KAPPA else "agreement"
    return status_rules.planning(
        result.metric_value(level.metric), _level_figure(result, level)["ci"], result.n_items, threshold=level.threshold,
        metric_name=name
    )


CROSSES = "this choice alone crosses the level"


def sensitivity_for_result(result: AgreementResult, level: AgreementLevel) -> dict:
    """The figure under the declared handling beside the same figure under every other handling (points),
    each alternative marked when it falls on the other side of the level from the declared one:
    {handling (words), value, alternatives: [{annotators, ties, non_answers, words, n_items, value, crosses}]}."""
    metric = "kappa" if level.metric == AgreementMetric.KAPPA else "agreement"
    value = result.metric_value(level.metric)
    rows = []
    for row in result.sensitivity or []:
        other = row.get(metric)
        crosses = value is not None and other is not None and (other >= level.threshold) != (value >= level.threshold)
        rows.append({**row, "value": other, "crosses": crosses, "crossing": CROSSES if crosses else None})
    return {"handling": result.handling_words, "value": value, "metric": metric, "alternatives": rows}


def agreement_for_run(*, run: Run) -> dict | None:
    """The agreement of the run's judge with the latest human-scored sample — judged with the run's prompt and
    rubric if there is one, else with its rubric, else any — for the report's `agreement` key; None when
    people have not scored a sample for that judge configuration."""
    name = primary_judge_for_run(run=run)
    if name is None:
        return None
    config = judge_configurations_for_run(run=run)[name]
    prompt, rubric = scope_for_run(run=run)
    results = pooled_counting(judge_name=name, judge_version=config["version"])
    pooled = (
        results.filter(prompt_version=prompt, rubric_version=rubric).first()
        or results.filter(rubric_version=rubric).first()
        or results.first()
    )
    if pooled is None:
        return None
    level = level_get()
    sample = pooled.sample
    per_criterion = {
        r.criterion: _figures(r)
        for r in AgreementResult.objects.filter(sample=sample, judge_name=name, candidate=pooled.candidate)
        .exclude(criterion="")
        .order_by("criterion")
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
        "level": level.as_dict(),
        "status": status_for_result(pooled, level),
        "planning": planning_for_result(pooled, level),
        "handling": {**(pooled.handling or {}), "words": pooled.handling_words},
        "sensitivity": sensitivity_for_result(pooled, level)["alternatives"],
        "locked": lock_reason_for_scope(
            judge_name=name, judge_version=config["version"], prompt_version=prompt, rubric_version=rubric
        ) is not None,
        "pending_labels": sample.agreement_stale,
        # The labels these figures stand on: its labels_version is the results' own (read in one statement).
        "snapshot": {**sample.snapshot, "labels_version": pooled.labels_version},
        "scripted_demo": pooled.scripted_demo,
        "slices": slices_for_result(pooled, level),
    }


def agreement_reads_for_run(*, run: Run, corrected: bool = True) -> dict:
    """What a run's page and report show of people's labels, read from one snapshot (one_snapshot):
    {calibration (each judge's status), agreement (pointwise), corrected (a pointwise run's corrected mean, a
    jury's or pairwise comparison's corrected rate; None when `corrected` is False), snapshot (the labels
    version and time of the agreement the figures stand on, None without one)}."""

    def read() -> dict:
        pointwise = run.kind == RunKind.POINTWISE
        agreement = agreement_for_run(run=run) if pointwise else None
        figures = None
        if corrected:
            figures = corrected_for_run(run=run) if pointwise else corrected_rate_for_run(run=run)
        return {
            "calibration": calibration_for_run(run=run),
            "agreement": agreement,
            "corrected": figures,
            "snapshot": (agreement or figures or {}).get("snapshot"),
        }

    return one_snapshot(read)


@dataclass
class ConfigurationAgreement:
    """The latest agreement of one judge configuration in one scope (prompt and rubric versions), for the
    overview and the CLI."""

    judge_name: str
    judge_version: str
    pooled: AgreementResult
    per_criterion: list[AgreementResult]
    status: str
    lock: JudgeLock | None
    planning: dict | None = None
    sensitivity: dict | None = None
    # The pooled result's alternative annotator test at the lead's ε and its slices, worst first (the overview).
    alt_test: dict | None = None
    slices: list[dict] = field(default_factory=list)

    @property
    def prompt_version(self) -> str:
        return self.pooled.prompt_version

    @property
    def rubric_version(self) -> str:
        return self.pooled.rubric_version


def latest_agreement_for_judge(*, judge: str | None = None) -> list[ConfigurationAgreement]:
    """Per judge configuration and scope (prompt × rubric), its results on the latest sample it was
    compared on, beside the scope's lock."""
    level = level_get()
    policy = policy_get()
    results = AgreementResult.objects.counting().select_related("sample", "sample__run", "candidate").order_by(
        "judge_name", "judge_version", "-effective_at", "-sample_id", "candidate_id", "criterion"
    )
    if judge:
        results = results.filter(judge_name=judge)
    latest_evidence: dict[tuple[str, str, str, str], tuple] = {}
    grouped: dict[tuple[str, str, str, str], list[AgreementResult]] = {}
    for result in results:
        key = (result.judge_name, result.judge_version, result.prompt_version, result.rubric_version)
        latest_evidence.setdefault(key, (result.sample_id, result.candidate_id))
        if (result.sample_id, result.candidate_id) == latest_evidence[key]:
            grouped.setdefault(key, []).append(result)
    locks = {
        (lock.judge_name, lock.judge_version, lock.prompt_version, lock.rubric_version): lock for lock in JudgeLock.objects.all()
    }
    rows = []
    for key, group in grouped.items():
        pooled = next((r for r in group if r.criterion == ""), None)
        if pooled is None:
            continue
        rows.append(
            ConfigurationAgreement(
                judge_name=key[0],
                judge_version=key[1],
                pooled=pooled,
                per_criterion=[r for r in group if r.criterion],
                status=status_for_result(pooled, level),
                lock=locks.get(key),
                planning=planning_for_result(pooled, level),
                sensitivity=sensitivity_for_result(pooled, level),
                alt_test=alt_test_for_result(pooled, policy=policy),
                slices=slices_for_result(pooled, level),
            )
        )
    rows.sort(key=lambda row: (row.judge_name, -(row.pooled.effective_at or row.pooled.sample.created_at).timestamp()))
    return rows


def result_rows_list(*, results: list[AgreementResult], level: AgreementLevel | None = None) -> list[dict]:
    """Each result with what its row shows beside its figures: {result, alt_test (at the lead's ε, or None),
    slices (worst first by the level's metric)}; the level and the policy read once for all of them."""
    level, policy = level or level_get(), policy_get()
    return [
        {"result": r, "alt_test": alt_test_for_result(r, policy=policy), "slices": slices_for_result(r, level)} for r in results
    ]


def results_for_sample(*, sample: Sample) -> QuerySet[AgreementResult]:
    """The run's own judges' results on a sample (candidates' are beside them on the candidates page)."""
    return sample.results.filter(candidate__isnull=True).order_by("judge_name", "criterion")


def agreement_history_for_judge(*, judge_name: str, judge_version: str) -> list[dict]:
    """Every pooled result that speaks for one judge configuration, oldest first, with whether it counts
    (enough items, people reliable enough) and why."""
    level = level_get()
    rules = rules_get(level=level)
    rows = []
    for result in pooled_counting(judge_name=judge_name, judge_version=judge_version).order_by("effective_at", "id"):
        evidence = evidence_for_result(result, level)
        reliable, why = status_rules.reliability(evidence, rules)
        rows.append(
            {
                "result": result,
                "date": evidence.date,
                "value": evidence.value,
                "ci": evidence.ci,
                "metric": evidence.metric_label,
                "n_items": evidence.n_items,
                "counts": status_rules.counts(evidence, rules),
                "reliable": reliable,
                "reliability": why,
            }
        )
    return rows
