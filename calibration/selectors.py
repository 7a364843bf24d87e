"""What the rest of the app asks calibration, and calibration's own reads.

judgeapp reads calibration only here: the gate (`gate_calibration`), a run's agreement and corrected figures
(`agreement_reads`, `one_snapshot`, `corrected_for_run`), the warnings before a run starts (`run_preflight`),
the judges' statuses, locks and check-ups for the web shell, and the prompt or candidate a lead adopted.
judgeapp's data is read only through `judgeapp.judging.selectors`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from django.db.models import Count, IntegerField, Max, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from calibration.core import adjudication as adjudication_rules
from calibration.core import alt_test as alt_test_rules
from calibration.core import checkup as checkup_rules
from calibration.core import slices as slice_rules
from calibration.core import status as status_rules
from calibration.models import (
    Adjudication,
    AgreementLevel,
    AgreementMetric,
    AgreementResult,
    AltTestRequirement,
    Assignment,
    AssignmentState,
    CalibrationPolicy,
    Candidate,
    ItemNote,
    JudgeLock,
    LabelKind,
    NoteKind,
    PolicyAction,
    Sample,
    SampleItem,
)
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.judging.memo import reads_are_shared, reads_shared, shared_read
from judgeapp.models import Run, RunKind, content_hash, short_version

POOLED_JURY = "jury"
T = TypeVar("T")


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


@shared_read
def level_current() -> AgreementLevel:
    """The level in force: the latest a lead set, or the default (kappa 0.6, 20 items) if none was."""
    return AgreementLevel.objects.select_related("set_by").first() or AgreementLevel()


@shared_read
def policy_current() -> CalibrationPolicy:
    """The policy in force: the latest a lead set, or the default (warn, alpha floor 0.667)."""
    return CalibrationPolicy.objects.select_related("set_by").first() or CalibrationPolicy()


def rules_current(*, level: AgreementLevel | None = None, policy: CalibrationPolicy | None = None) -> status_rules.Rules:
    level = level or level_current()
    policy = policy or policy_current()
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


def evidence_of(result: AgreementResult, level: AgreementLevel) -> status_rules.Evidence:
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


def _pooled_counting(**filters) -> QuerySet[AgreementResult]:
    return (
        AgreementResult.objects.counting()
        .filter(criterion="", **filters)
        .select_related("sample", "sample__run", "candidate")
        .order_by("-effective_at", "-id")
    )


def run_scope(*, run: Run) -> tuple[str, str]:
    """(prompt version, rubric version) a run was judged with: the scope its judges' evidence and locks are read in."""
    return run.versions.get("prompt") or "", run.versions.get("rubric") or ""


def decisive_result(
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
    rules = rules_current(level=level, policy=policy)
    scoped = _pooled_counting(
        judge_name=judge_name, judge_version=judge_version, prompt_version=prompt_version or "",
        rubric_version=rubric_version or "", n_items__gte=level.min_items,
    )
    for result in scoped:
        if status_rules.counts(evidence_of(result, level), rules):
            return result
    return None


def locks_all() -> QuerySet[JudgeLock]:
    return JudgeLock.objects.select_related("result", "result__sample", "result__sample__run").order_by(
        "judge_name", "-changed_at", "-id"
    )


def _scope_words(prompt_version: str, rubric_version: str) -> str:
    return f"prompt {prompt_version or '—'}, rubric {rubric_version or '—'}"


def lock_reason_for(*, judge_name: str, judge_version: str, prompt_version: str, rubric_version: str) -> str | None:
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


def gate_lock_reasons(*, run: Run) -> list[str]:
    """Reasons the release gate of `run` is locked by calibration, e.g. ["judge locked: …"]: the
    locks of the run's judge configurations with the run's prompt and rubric versions.

    Empty while no agreement level applies to the run's judge configurations in that scope: a judge no
    person has scored is not locked (unless the same judge, under an earlier configuration, is there).
    """
    prompt, rubric = run_scope(run=run)
    reasons = []
    for name, config in judge_configurations(run=run).items():
        reason = lock_reason_for(judge_name=name, judge_version=config["version"], prompt_version=prompt, rubric_version=rubric)
        if reason:
            reasons.append(reason)
    return reasons


# --- The judge check-up (judgeapp/checkup/, docs/checkup.md) against the lead's floors ---------------------


def _when(record: judgeapp_selectors.CheckupRecord) -> str:
    return f" on {record.finished_at:%Y-%m-%d}" if record.finished_at else ""


def checkup_entry(
    *, judge_name: str, judge_version: str, record: judgeapp_selectors.CheckupRecord | None, policy: CalibrationPolicy
) -> dict:
    """What a judge configuration's check-up says, in words, under the lead's policy: {judge, judge_version,
    run_id, finished_at, checked_version, stale, passed (None: never checked up), verdict ("passed",
    "failed: …" or None), failures, notes, blocks, warns, line}.

    `record` is the configuration's latest check-up, or the judge's latest under an earlier configuration
    (stale): as with a lock, a check-up that failed in one configuration holds for a new one until the new
    one is checked up itself, so that changing a judge's base URL is no way round it.
    """
    short = judge_version[:12]
    entry = {"judge": judge_name, "judge_version": judge_version, "run_id": None, "finished_at": None, "checked_version": None,
             "stale": False, "passed": None, "verdict": None, "failures": [], "notes": [], "blocks": False, "warns": False,
             "line": f"judge never checked up: {judge_name} (configuration {short})"}
    if record is None:
        return entry
    verdict = checkup_rules.checkup_verdict(
        record.sets, floors=policy.checkup_floors, invalid=record.invalid, invalid_reasons=record.invalid_reasons
    )
    stale = record.checked_version != judge_version
    said = f"judge check-up {'passed' if verdict.passed else 'failed'}: {judge_name}"
    run = f"check-up run {record.run_id}{_when(record)}"
    if stale:
        line = (
            f"{said} in configuration {(record.checked_version or 'unknown')[:12]} ({verdict.text}, {run}); "
            f"configuration {short} has not been checked up since"
        )
    else:
        line = f"{said} (configuration {short}): {verdict.text}, {run}"
    failed = not verdict.passed
    entry.update(
        run_id=record.run_id,
        finished_at=record.finished_at.isoformat() if record.finished_at else None,
        checked_version=record.checked_version,
        stale=stale,
        passed=verdict.passed,
        verdict=verdict.text,
        failures=list(verdict.failures),
        notes=list(verdict.notes),
        blocks=failed and policy.checkup_failed == PolicyAction.BLOCK,
        warns=failed and policy.checkup_failed == PolicyAction.WARN,
        line=line,
    )
    return entry


def checkup_report_verdict(*, report: dict) -> dict:
    """A check-up report's verdict against the lead's floors in force (the report's `verdict`, which
    `judge-checkup` prints): {passed, text ("passed" or "failed: …"), failures, notes, floors}."""
    policy = policy_current()
    verdict = checkup_rules.checkup_verdict(
        {name: report["sets"][name] for name in report.get("set_order") or report.get("sets") or {}},
        floors=policy.checkup_floors,
        invalid=bool(report.get("invalid")),
        invalid_reasons=report.get("invalid_reasons") or (),
    )
    return {
        "passed": verdict.passed,
        "text": verdict.text,
        "failures": list(verdict.failures),
        "notes": list(verdict.notes),
        "floors": {"position_consistency": policy.checkup_position_floor, "accuracy_consistent": policy.checkup_accuracy_floor,
                   "kappa": policy.checkup_kappa_floor},
    }


@shared_read
def checkup_for(*, judge_name: str, judge_version: str) -> dict:
    """The check-up of one judge configuration, judged against the lead's floors (see checkup_entry)."""
    return checkup_entry(
        judge_name=judge_name,
        judge_version=judge_version,
        record=judgeapp_selectors.checkup_latest(judge_name, judge_version),
        policy=policy_current(),
    )


def checkups_for_judges(*, judges, records: dict | None = None) -> dict[str, dict]:
    """{judge name: its check-up in its configuration now (see checkup_entry)}, for a page of judges;
    `records` are the judges' check-ups if the page read them already (judging.selectors.checkups_latest)."""
    judges = list(judges)
    if records is None:
        records = judgeapp_selectors.checkups_latest(judges=judges)
    policy = policy_current()
    return {
        judge.name: checkup_entry(judge_name=judge.name, judge_version=judge.version, record=records[judge.name], policy=policy)
        for judge in judges
    }


def checkups_for_run(*, run: Run) -> list[dict]:
    """The check-up of every judge a run relied on, in the configuration it used, the one its report
    stands on first. A jury's pooled verdict is no judge of its own to check up."""
    configs = judge_configurations(run=run)
    primary = primary_judge(run=run)
    names = sorted((name for name in configs if name != POOLED_JURY), key=lambda name: (name != primary, name))
    return [checkup_for(judge_name=name, judge_version=configs[name]["version"]) for name in names]


# --- The calibration status (CONTRACT §3: six words) ---------------------------------------------------


def judge_evidence(*, judge_name: str, level: AgreementLevel | None = None) -> list[status_rules.Evidence]:
    """Every pooled result that speaks for the judge, under any configuration, prompt and rubric, newest first."""
    level = level or level_current()
    return [evidence_of(r, level) for r in _pooled_counting(judge_name=judge_name)]


def _latest_scope(evidence: list[status_rules.Evidence], judge_version: str, rules: status_rules.Rules) -> tuple[str, str]:
    """The scope a judge configuration was last measured in (counting evidence first, its own before the
    judge's other configurations'): what its status says when no run gives one."""
    own = [e for e in evidence if e.judge_version == judge_version]
    for pool in (own, evidence):
        shown = next((e for e in pool if status_rules.counts(e, rules)), None) or (pool[0] if pool else None)
        if shown is not None:
            return shown.prompt_version or "", shown.rubric_version or ""
    return "", ""


@shared_read
def status_for(
    *, judge_name: str, judge_version: str, prompt_version: str | None = None, rubric_version: str | None = None
) -> dict:
    """The calibration status of one judge configuration as a run used it: with its prompt and rubric
    versions (its scope; "" for a run without one). None for both: the scope it was last measured in (a
    judge's page, where no run says which prompt and rubric)."""
    level = level_current()
    rules = rules_current(level=level)
    evidence = judge_evidence(judge_name=judge_name, level=level)
    if prompt_version is None and rubric_version is None:
        prompt_version, rubric_version = _latest_scope(evidence, judge_version, rules)
    prompt_version, rubric_version = prompt_version or "", rubric_version or ""
    lock = JudgeLock.objects.filter(
        judge_name=judge_name, judge_version=judge_version, prompt_version=prompt_version, rubric_version=rubric_version
    ).first()
    status = status_rules.calibration_status(
        judge=judge_name,
        judge_version=judge_version,
        evidence=evidence,
        rules=rules,
        lock_reason=lock_reason_for(
            judge_name=judge_name, judge_version=judge_version, prompt_version=prompt_version, rubric_version=rubric_version
        ),
        unlocked_by_hand=lock.reason if lock is not None and lock.overridden and not lock.locked else None,
        prompt_version=prompt_version,
        rubric_version=rubric_version,
    )
    status["scope"] = {"prompt_version": prompt_version or None, "rubric_version": rubric_version or None}
    status["line"] = status_rules.gate_line(status)
    return status


def calibration_for_run(*, run: Run) -> list[dict]:
    """The calibration status of every judge a run relied on, the one its report stands on first."""
    configs = judge_configurations(run=run)
    primary = primary_judge(run=run)
    names = sorted(configs, key=lambda name: (name != primary, name))
    prompt, rubric = run_scope(run=run)
    return [
        status_for(judge_name=name, judge_version=configs[name]["version"], prompt_version=prompt, rubric_version=rubric)
        for name in names
    ]


def gate_calibration(*, run: Run) -> dict:
    """What calibration says to a run's release gate: {status (of the primary judge), statuses, checkup
    (each judge's check-up, see checkup_for), alt_test (each judge's alternative annotator test, see
    alt_test_for_run), reasons, warnings, policy}. Reasons block; warnings are shown ("warning: judge not
    calibrated: …")."""
    statuses = calibration_for_run(run=run)
    checkups = checkups_for_run(run=run)
    alt_tests = alt_test_for_run(run=run)
    slice_floor = slice_floor_for_run(run=run)
    slice_entries = [{**slice_floor, "warns": not slice_floor["blocks"]}] if slice_floor else []
    entries = statuses + checkups + alt_tests + slice_entries
    return {
        "status": statuses[0] if statuses else None,
        "statuses": statuses,
        "checkup": checkups,
        "alt_test": alt_tests,
        "reasons": [e["line"] for e in entries if e["blocks"]],
        "warnings": [e["line"] for e in entries if e["warns"]],
        "policy": policy_current().as_dict(),
    }


# --- The alternative annotator test ---------------------------------------------------------------------


def alt_test_of(result: AgreementResult | None, *, policy: CalibrationPolicy | None = None) -> dict | None:
    """A result's alternative annotator test at the lead's ε, with its `line`; None without a result or
    without an item two people labelled."""
    if result is None:
        return None
    policy = policy or policy_current()
    figures = result.alt_test_at(policy.alt_test_epsilon)
    if figures is None:
        return None
    return {**figures, "line": alt_test_rules.alt_test_line(figures), "sample_id": str(result.sample.uuid)}


def alt_test_result(
    *, judge_name: str, judge_version: str, prompt_version: str = "", rubric_version: str = ""
) -> AgreementResult | None:
    """The newest pooled result of a judge configuration in one scope (prompt and rubric versions) that holds
    the test's counts: people's labels of verdicts given under another prompt or rubric never speak for it."""
    results = _pooled_counting(
        judge_name=judge_name, judge_version=judge_version, prompt_version=prompt_version or "",
        rubric_version=rubric_version or ""
    )
    return next((r for r in results[:50] if (r.details or {}).get("alt_test")), None)


def alt_test_for_run(*, run: Run) -> list[dict]:
    """Each judge's alternative annotator test as the run's gate reads it: [{judge, judge_version, test (the
    figures, or None), passed, blocks, warns, line}]. Under the lead's policy (`alt_test` warn or block) a
    judge that did not pass — failed, not decided for want of annotators or items, or never tested — warns or
    blocks; with the policy off the entries only inform."""
    policy = policy_current()
    configs = judge_configurations(run=run)
    primary = primary_judge(run=run)
    prompt, rubric = run_scope(run=run)
    entries = []
    for name in sorted(configs, key=lambda name: (name != primary, name)):
        version = configs[name]["version"]
        test = alt_test_of(
            alt_test_result(judge_name=name, judge_version=version, prompt_version=prompt, rubric_version=rubric), policy=policy
        )
        passed = bool(test and test["passed"])
        required = policy.alt_test != AltTestRequirement.OFF
        entries.append(
            {
                "judge": name,
                "judge_version": version,
                "test": test,
                "passed": test["passed"] if test else None,
                "blocks": required and not passed and policy.alt_test == AltTestRequirement.BLOCK,
                "warns": required and not passed and policy.alt_test == AltTestRequirement.WARN,
                "line": f"judge {name}: alternative annotator test {alt_test_rules.alt_test_line(test)}",
            }
        )
    return entries


def judge_status(*, judge) -> dict:
    """A judge's status in its current configuration, in the prompt and rubric scope it was last measured in."""
    return status_for(judge_name=judge.name, judge_version=judge.version)


# --- One snapshot ------------------------------------------------------------------------------------


def agreement_fingerprint() -> tuple:
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
        before = agreement_fingerprint()
        with reads_shared():
            answer = read()
        if agreement_fingerprint() == before:
            break
    return answer


# --- The human-corrected mean (PPI++) -----------------------------------------------------------------


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


def corrected_sample_for(*, run: Run) -> Sample | None:
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
    name = primary_judge(run=run)
    if name is None:
        return None
    version = judge_configurations(run=run)[name]["version"]
    for sample in labelled.exclude(run=run).filter(run__kind=run.kind).select_related("run").order_by("-created_at", "-id")[:50]:
        other = judge_configurations(run=sample.run).get(name)
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

    sample = corrected_sample_for(run=run)
    if sample is None:
        return None
    name = primary_judge(run=run)
    scores = {
        (v.case_id, v.criterion): float(v.value)
        for v in judgeapp_selectors.run_verdicts(run=run)
        if v.judge == name and isinstance(v.value, (int, float))
    }
    same_run = sample.run_id == run.pk
    sample_scores = scores if same_run else {
        (v.case_id, v.criterion): float(v.value)
        for v in judgeapp_selectors.run_verdicts(run=sample.run)
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
    result["slices"] = corrected_slices_for(
        run=run, sample=sample, keys=keys, human=human, judge_labelled=judge_labelled,
        unlabelled={key: score for key, score in scores.items() if key not in labelled},
        strata=[strata.get(key, "") for key in keys] if weights is not None else None, sample_scores=sample_scores,
    )
    result.update(
        {
            "judge_mean_unlabelled": sum(judge_unlabelled) / len(judge_unlabelled),
            "human_mean_labelled": sum(human) / len(human),
            "sample_id": str(sample.uuid),
            "sample_run_id": sample.run.run_id,
            "same_run": same_run,
            "weighted": weights is not None,
            "snapshot": sample.snapshot,
        }
    )
    return result


def _verdicts_of(run: Run, judge: str | None) -> dict[str, str]:
    return {v.case_id: str(v.value) for v in judgeapp_selectors.run_verdicts(run=run) if v.judge == judge and not v.criterion}


def corrected_rate_for_run(*, run: Run) -> dict | None:
    """A jury's human-corrected pass rate or a pairwise comparison's human-corrected win rate of version B
    (the report's `corrected_pass_rate` / `corrected_win_rate`, CONTRACT §6): PPI++ on the verdicts as numbers
    (pass 1, fail 0; B 1, tie ½, A 0), from the judge configuration's labelled sample; None without one, or
    with fewer than two labelled or two judged-only items. A case without a verdict (a jury's unjudged case, a
    pair without a both-order verdict) is in neither set."""
    from calibration.core.ppi import PASS_VALUES, WIN_VALUES, corrected_rate, stratum_weights

    if run.kind not in (RunKind.JURY, RunKind.PAIRWISE):
        return None
    sample = corrected_sample_for(run=run)
    if sample is None:
        return None
    values = PASS_VALUES if run.kind == RunKind.JURY else WIN_VALUES
    name = primary_judge(run=run)
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
            "sample_id": str(sample.uuid),
            "sample_run_id": sample.run.run_id,
            "same_run": same_run,
            "weighted": weights is not None,
            "snapshot": sample.snapshot,
        }
    )
    return result


# --- Agreement -----------------------------------------------------------------------------------------


def _figures(result: AgreementResult) -> dict:
    return {
        "n_items": result.n_items,
        "n_unreadable": result.n_unreadable,
        "n_labels": result.n_labels,
        "kappa": result.kappa,
        "agreement": result.agreement,
        "metrics": result.metrics,
        "handling_words": result.handling_words,
    }


def _level_figure(result: AgreementResult, level: AgreementLevel) -> dict:
    return (result.kappa_figure if level.metric == AgreementMetric.KAPPA else result.agreement_figure) or {}


def result_status(result: AgreementResult, level: AgreementLevel) -> str:
    """A sample's figure against the level, on its interval: `calibrated` (lower bound at or above),
    `below level` (upper bound below), `undecided` (across it), `too few items`, `undefined`."""
    value = result.metric_value(level.metric)
    if result.n_items < level.min_items:
        return "too few items"
    if value is None:
        return "undefined"
    position = status_rules.interval_position(value, _level_figure(result, level).get("ci"), level.threshold)
    return {status_rules.ABOVE: "calibrated", status_rules.BELOW: "below level"}.get(position, status_rules.UNDECIDED)


def result_planning(result: AgreementResult, level: AgreementLevel) -> dict | None:
    """An undecided result's planning figure (calibration.core.status.planning), None otherwise."""
    if result_status(result, level) != status_rules.UNDECIDED:
        return None
    name = "kappa" if level.metric == AgreementMetric.KAPPA else "agreement"
    return status_rules.planning(
        result.metric_value(level.metric), _level_figure(result, level)["ci"], result.n_items, threshold=level.threshold,
        metric_name=name
    )


CROSSES = "this choice alone crosses the level"


def result_sensitivity(result: AgreementResult, level: AgreementLevel) -> dict:
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
    name = primary_judge(run=run)
    if name is None:
        return None
    config = judge_configurations(run=run)[name]
    prompt, rubric = run_scope(run=run)
    results = _pooled_counting(judge_name=name, judge_version=config["version"])
    pooled = (
        results.filter(prompt_version=prompt, rubric_version=rubric).first()
        or results.filter(rubric_version=rubric).first()
        or results.first()
    )
    if pooled is None:
        return None
    level = level_current()
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
        "level": {"metric": level.metric, "threshold": level.threshold, "min_items": level.min_items},
        "status": result_status(pooled, level),
        "planning": result_planning(pooled, level),
        "handling": {**(pooled.handling or {}), "words": pooled.handling_words},
        "sensitivity": result_sensitivity(pooled, level)["alternatives"],
        "locked": lock_reason_for(
            judge_name=name, judge_version=config["version"], prompt_version=prompt, rubric_version=rubric
        ) is not None,
        "pending_labels": sample.agreement_stale,
        # The labels these figures stand on: its labels_version is the results' own (read in one statement).
        "snapshot": {**sample.snapshot, "labels_version": pooled.labels_version},
        "scripted_demo": pooled.scripted_demo,
        "slices": slices_shown(pooled, level),
    }


def agreement_reads(*, run: Run, corrected: bool = True) -> dict:
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


def agreement_latest(*, judge: str | None = None) -> list[ConfigurationAgreement]:
    """Per judge configuration and scope (prompt × rubric), its results on the latest sample it was
    compared on, beside the scope's lock."""
    level = level_current()
    policy = policy_current()
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
                status=result_status(pooled, level),
                lock=locks.get(key),
                planning=result_planning(pooled, level),
                sensitivity=result_sensitivity(pooled, level),
                alt_test=alt_test_of(pooled, policy=policy),
                slices=slices_shown(pooled, level),
            )
        )
    rows.sort(key=lambda row: (row.judge_name, -(row.pooled.effective_at or row.pooled.sample.created_at).timestamp()))
    return rows


def result_rows_list(*, results: list[AgreementResult], level: AgreementLevel | None = None) -> list[dict]:
    """Each result with what its row shows beside its figures: {result, alt_test (at the lead's ε, or None),
    slices (worst first by the level's metric)}; the level and the policy read once for all of them."""
    level, policy = level or level_current(), policy_current()
    return [{"result": r, "alt_test": alt_test_of(r, policy=policy), "slices": slices_shown(r, level)} for r in results]


def results_of_sample(*, sample: Sample) -> QuerySet[AgreementResult]:
    """The run's own judges' results on a sample (candidates' are beside them on the candidates page)."""
    return sample.results.filter(candidate__isnull=True).order_by("judge_name", "criterion")


# --- Samples and queues --------------------------------------------------------------------------------


def samples_recent(*, limit: int = 50) -> QuerySet[Sample]:
    # The flags counted in a subquery: a second join (items → notes) would multiply the assignments counted.
    flags = (
        ItemNote.objects.filter(item__sample=OuterRef("pk"), kind=NoteKind.FLAG)
        .order_by()
        .values("item__sample")
        .annotate(n=Count("id"))
        .values("n")
    )
    return (
        Sample.objects.select_related("run", "created_by")
        .annotate(
            n_assignments=Count("items__assignments"),
            n_labelled=Count("items__assignments", filter=Q(items__assignments__state=AssignmentState.LABELLED)),
            n_flags=Coalesce(Subquery(flags, output_field=IntegerField()), 0),
        )
        .order_by("-created_at")[:limit]
    )


def sample_get(*, sample_uuid) -> Sample:
    from django.shortcuts import get_object_or_404

    return get_object_or_404(Sample.objects.select_related("run", "created_by"), uuid=sample_uuid)


@dataclass
class AnnotatorProgress:
    annotator: str
    assigned: int
    done: int
    skipped: int
    remaining: int
    seconds_per_item: float | None

    @property
    def done_words(self) -> str:
        return f"{self.done} of {self.assigned} done"

    @property
    def time_per_item(self) -> str:
        return adjudication_rules.duration_words(self.seconds_per_item)


def sample_progress(*, sample: Sample) -> list[AnnotatorProgress]:
    """Per annotator, over the items in the queues (not those held back on leakage): done (labelled),
    skipped, remaining, and the time per item (calibration/core/adjudication.py: seconds_per_item)."""
    rows: dict[str, dict] = {}
    assignments = (
        Assignment.objects.filter(item__sample=sample, item__leakage_flags=[])
        .values_list("annotator__username", "state", "acted_at")
        .order_by("annotator__username", "acted_at")
    )
    for username, state, acted_at in assignments:
        row = rows.setdefault(username, {"assigned": 0, AssignmentState.LABELLED: 0, AssignmentState.SKIPPED: 0, "acted": []})
        row["assigned"] += 1
        if state in (AssignmentState.LABELLED, AssignmentState.SKIPPED):
            row[state] += 1
        if acted_at is not None and state != AssignmentState.PENDING:
            row["acted"].append(acted_at)
    return [
        AnnotatorProgress(
            annotator=username,
            assigned=row["assigned"],
            done=row[AssignmentState.LABELLED],
            skipped=row[AssignmentState.SKIPPED],
            remaining=row["assigned"] - row[AssignmentState.LABELLED] - row[AssignmentState.SKIPPED],
            seconds_per_item=adjudication_rules.seconds_per_item(row["acted"]),
        )
        for username, row in rows.items()
    ]


# --- Adjudication: the items a lead resolves ------------------------------------------------------------


def _labels_by_item(sample: Sample) -> dict[int, list[tuple[str, str]]]:
    """{item pk: [(annotator, label)]} of the sample's labelled assignments, annotators by name."""
    labels: dict[int, list[tuple[str, str]]] = {}
    for item_id, username, value in (
        Assignment.objects.filter(item__sample=sample, state=AssignmentState.LABELLED)
        .values_list("item_id", "annotator__username", "value")
        .order_by("item_id", "annotator__username")
    ):
        labels.setdefault(item_id, []).append((username, value))
    return labels


def _needs_resolving(sample: Sample, labels: list[tuple[str, str]]) -> bool:
    return adjudication_rules.disagrees(
        [value for _, value in labels], label_kind=sample.label_kind, margin=sample.adjudication_margin
    )


def adjudication_open_count(*, sample: Sample) -> int:
    """Items whose annotators disagree by more than the sample's margin and that no lead resolved yet."""
    resolved = set(Adjudication.objects.filter(item__sample=sample).values_list("item_id", flat=True))
    return sum(
        1 for item_id, labels in _labels_by_item(sample).items() if item_id not in resolved and _needs_resolving(sample, labels)
    )


def _shown_label(value: str, *, label_kind: str) -> str:
    """A stored label in the words the lead's page uses (the replies in A, B order, shown as 1 and 2)."""
    if label_kind == LabelKind.PAIRWISE:
        return {"A": "Reply 1", "B": "Reply 2"}.get(value, "Tie")
    if label_kind == LabelKind.PASS_FAIL:
        return value.capitalize()
    return value


def adjudication_items(*, sample: Sample) -> list[dict]:
    """The items to resolve (annotators disagree by more than the margin), open first, then those already
    resolved; each as the annotators saw it (replies of a pair in A, B order, shown as 1 and 2), with each
    annotator's label and the resolved one: [{item, labels [{annotator, shown}], adjudication, resolved_shown,
    display}]."""
    labels_of = _labels_by_item(sample)
    adjudications = {a.item_id: a for a in Adjudication.objects.filter(item__sample=sample).select_related("decided_by")}
    wanted = [
        item_id for item_id, labels in labels_of.items() if item_id in adjudications or _needs_resolving(sample, labels)
    ]
    items = SampleItem.objects.filter(pk__in=wanted).select_related("sample", "sample__run", "case").order_by("position")
    rows = [_adjudication_row(item, labels_of[item.pk], adjudications.get(item.pk)) for item in items]
    rows.sort(key=lambda row: (row["adjudication"] is not None, row["item"].position))
    return rows


def adjudication_item(*, sample: Sample, position: int) -> dict:
    """One item of `adjudication_items` (404 when the sample has no item at that position)."""
    from django.shortcuts import get_object_or_404

    item = get_object_or_404(SampleItem.objects.select_related("sample", "sample__run", "case"), sample=sample, position=position)
    labels = _labels_by_item(sample).get(item.pk, [])
    return _adjudication_row(item, labels, Adjudication.objects.filter(item=item).select_related("decided_by").first())


def _adjudication_row(item: SampleItem, labels: list[tuple[str, str]], adjudication: Adjudication | None) -> dict:
    kind = item.sample.label_kind
    return {
        "item": item,
        "labels": [{"annotator": annotator, "shown": _shown_label(value, label_kind=kind)} for annotator, value in labels],
        "adjudication": adjudication,
        "resolved_shown": _shown_label(adjudication.value, label_kind=kind) if adjudication else "",
        "display": item_view(item=item, swapped=False),
    }


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
    return _queue(annotator).filter(state=AssignmentState.PENDING).order_by(
        "item__sample__created_at", "item__sample_id", "position"
    ).first()


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


def sample_notes(*, sample: Sample, limit: int = 200) -> list[ItemNote]:
    """The annotators' comments and flags on the sample's items, newest first."""
    return list(
        ItemNote.objects.filter(item__sample=sample)
        .select_related("item", "annotator")
        .order_by("-created_at", "-id")[:limit]
    )


def sample_flag_count(*, sample: Sample) -> int:
    return ItemNote.objects.filter(item__sample=sample, kind=NoteKind.FLAG).count()


def item_notes_for_sample(*, sample: Sample, limit: int = 200) -> dict:
    """The annotators' comments and flags on a sample's items as its page shows them: {rows (the newest
    `limit`), more (older ones left out), flags (how many flags in all)}."""
    rows = sample_notes(sample=sample, limit=limit + 1)
    return {"rows": rows[:limit], "more": len(rows) > limit, "flags": sample_flag_count(sample=sample)}


def item_notes_of(*, assignment: Assignment) -> list[ItemNote]:
    """The annotator's own comments and flags on the item of this assignment, oldest first."""
    return list(ItemNote.objects.filter(assignment=assignment).order_by("created_at", "id"))


def queue_cues(*, assignment: Assignment | None, last: Assignment | None) -> dict:
    """What changed since the annotator's last answered item: the criterion they score (`criterion_was`,
    the previous criterion's name, or ""), and the sample (`new_sample`: its instructions are shown open)."""
    if assignment is None:
        return {"criterion_was": "", "new_sample": False}
    if last is None or last.pk == assignment.pk:
        return {"criterion_was": "", "new_sample": last is None}
    was, now = last.item.criterion, assignment.item.criterion
    return {
        "criterion_was": was if was and now and was != now else "",
        "new_sample": last.item.sample_id != assignment.item.sample_id,
    }


def item_display(*, assignment: Assignment) -> dict:
    """What an annotator sees of an item, and nothing else: the input, the reply (or both replies, as 1
    and 2 in this annotator's order), the rubric with its examples. No run, system, version, judge,
    model or verdict goes into it."""
    return item_view(item=assignment.item, swapped=assignment.swapped)


def item_view(*, item: SampleItem, swapped: bool) -> dict:
    """An item as an annotator sees it (item_display), the replies of a pair in the order `swapped` says."""
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
    display = {
        "input": item.case.input,
        "rubric": rubric,
        "label_kind": sample.label_kind,
        "criterion": item.criterion,
        "instructions": sample.instructions,
    }
    if sample.label_kind == "pairwise":
        first, second = ("B", "A") if swapped else ("A", "B")
        display["replies"] = [outputs.get(first, ""), outputs.get(second, "")]
        display["instruction"] = (run.config.get("imported") or {}).get("instruction") or (
            "Which reply is better against the rubric? The order of the replies means nothing, and a "
            "longer reply is not a better one."
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


# --- Candidates -----------------------------------------------------------------------------------------


def adopted_candidate(*, judge_name: str) -> Candidate | None:
    """The candidate a lead adopted last for this judge (its configuration is the judge's now)."""
    return (
        Candidate.objects.filter(judge_name=judge_name, adopted_at__isnull=False)
        .select_related("run", "run__prompt", "run__rubric", "adopted_by")
        .order_by("-adopted_at", "-id")
        .first()
    )


def adopted_prompt(*, judge_name: str):
    """The prompt text a lead adopted for this judge (a PromptTemplate), or None for the seed's."""
    from judgeapp.judging.prompts import load_prompt

    candidate = adopted_candidate(judge_name=judge_name)
    if candidate is None or candidate.run.prompt is None:
        return None
    if candidate.run.prompt.content_hash == load_prompt("pointwise").content_hash:
        return None
    return candidate.run.prompt


def candidates_of(*, sample: Sample) -> QuerySet[Candidate]:
    return sample.candidates.select_related("run", "run__prompt", "run__rubric", "created_by", "adopted_by").order_by(
        "created_at", "id"
    )


def candidate_get(*, candidate_uuid) -> Candidate:
    from django.shortcuts import get_object_or_404

    return get_object_or_404(
        Candidate.objects.select_related("sample", "sample__run", "run", "run__prompt", "run__rubric"), uuid=candidate_uuid
    )


def labelled_items(*, sample: Sample) -> list[dict]:
    """The items of a sample at least one person labelled: what a candidate judges."""
    rows = (
        sample.items.filter(assignments__state=AssignmentState.LABELLED)
        .distinct()
        .order_by("position")
        .values("case_id", "case_key", "criterion")
    )
    return [{"case": r["case_id"], "case_key": r["case_key"], "criterion": r["criterion"]} for r in rows]


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


def side_by_side(*, sample: Sample) -> dict:
    """The current judge beside every candidate judged on the sample's labelled items: figures with
    intervals, the judge × human table, and the items furthest apart with each judge's reasoning."""
    run = sample.run
    name = primary_judge(run=run)
    current = (
        AgreementResult.objects.filter(sample=sample, judge_name=name, criterion="", candidate__isnull=True).first() if name
        else None
    )
    columns = [
        _column(current, title=f"{name} as it judged run {run.run_id}" if name else "the run's judge", run=run,
                reasonings=judgeapp_selectors.run_reasonings(run=run))
    ]
    for candidate in candidates_of(sample=sample):
        result = candidate.results.filter(criterion="").first()
        columns.append(
            _column(result, title=candidate.title, run=candidate.run, candidate=candidate,
                    reasonings=judgeapp_selectors.run_reasonings(run=candidate.run))
        )
    level = level_current()
    for column in columns:
        # Read on the interval, as the status is: yes (lower bound at the level), undecided, or no.
        result = column["result"]
        column["level_status"] = result_status(result, level) if result is not None else None
        column["planning"] = result_planning(result, level) if result is not None else None
    return {"judge": name, "columns": columns, "level": level, "rules": rules_current()}


def judges_statuses() -> list[dict]:
    """Every configured judge's status in its current configuration, and any judge people compared but no
    longer configured (a jury's pool, an imported judge): the calibration page lists them all."""
    judges, _ = judgeapp_selectors.endpoints_all()
    rows = []
    seen = set()
    for judge in judges:
        rows.append({"judge": judge, "status": judge_status(judge=judge)})
        seen.add(judge.name)
    for name, version in (
        AgreementResult.objects.counting().filter(criterion="").exclude(judge_name__in=seen)
        .order_by("judge_name", "-effective_at").values_list("judge_name", "judge_version")
    ):
        if name not in seen:
            seen.add(name)
            rows.append({"judge": None, "status": status_for(judge_name=name, judge_version=version)})
    return rows


def annotator_panels(*, limit: int = 5) -> list[dict]:
    """The latest samples with overlap and each annotator's agreement with the others there."""
    panels = []
    results = (
        AgreementResult.objects.filter(criterion="", candidate__isnull=True, inter_annotator__isnull=False)
        .select_related("sample", "sample__run")
        .order_by("-sample__created_at", "judge_name")
    )
    seen = set()
    for result in results:
        if result.sample_id in seen:
            continue
        seen.add(result.sample_id)
        inter = result.inter_annotator or {}
        rows = inter.get("per_annotator") or []
        kappas = [r["kappa"] for r in rows if r.get("kappa") is not None]
        typical = sorted(kappas)[len(kappas) // 2] if kappas else None
        alpha = (inter.get("alpha") or {}).get("value")
        for row in rows:
            # Stands out: well below the others' typical agreement, or the others agree better without them.
            row["stands_out"] = bool(
                (typical is not None and row.get("kappa") is not None and row["kappa"] < typical - 0.2)
                or (alpha is not None and row.get("alpha_without") is not None and row["alpha_without"] > alpha + 0.1)
            )
        panels.append({"sample": result.sample, "inter": inter, "rows": rows, "label_kind": result.label_kind})
        if len(panels) >= limit:
            break
    return panels


# --- A judge's record (the scorecard) ---------------------------------------------------------------------


def agreement_history(*, judge_name: str, judge_version: str) -> list[dict]:
    """Every pooled result that speaks for one judge configuration, oldest first, with whether it counts
    (enough items, people reliable enough) and why."""
    level = level_current()
    rules = rules_current(level=level)
    rows = []
    for result in _pooled_counting(judge_name=judge_name, judge_version=judge_version).order_by("effective_at", "id"):
        evidence = evidence_of(result, level)
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


def locks_of(*, judge_name: str, judge_version: str) -> list[JudgeLock]:
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


def calibrated_versions(*, judge_name: str) -> set[str]:
    return set(AgreementResult.objects.filter(judge_name=judge_name).values_list("judge_version", flat=True))


def run_preflight(*, judges, systems=(), pair: tuple | None = None) -> list:
    """The warnings a form shows and a command prints before a run starts (judging/preflight.py), with each
    judge's calibration status in its current configuration."""
    from judgeapp.judging.preflight import run_warnings

    return run_warnings(judges=judges, systems=systems, pair=pair, status_of=lambda judge: judge_status(judge=judge))


def human_majority(*, run: Run) -> dict[str, str | None]:
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


# --- Slices: the figures per tag, worst first (calibration/core/slices.py) ---------------------------------


def slices_shown(result: AgreementResult | None, level: AgreementLevel | None = None) -> list[dict]:
    """A result's per-tag agreement, the worst first by the level's metric, each marked `decides` (it has the
    level's minimum of items; a smaller slice is shown and never decides)."""
    if result is None or not result.slices:
        return []
    level = level or level_current()
    return slice_rules.worst_first(result.slices, figure=level.metric, min_items=level.min_items)


def corrected_slices_for(
    *, run: Run, sample: Sample, keys, human, judge_labelled, unlabelled, strata, sample_scores
) -> list[dict]:
    """The corrected mean per tag (the report's `corrected.slices`), lowest first; the labelled items' tags as
    their sample kept them, the unlabelled ones' from the run's test set."""
    item_tags = {(k, c): tags for k, c, tags in sample.items.values_list("case_key", "criterion", "tags")}
    run_tags = judgeapp_selectors.run_case_tags(run=run)
    sample_tags = run_tags if sample.run_id == run.pk else judgeapp_selectors.run_case_tags(run=sample.run)
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
        min_items=level_current().min_items,
    )


def slice_floor_for_run(*, run: Run) -> dict | None:
    """The lead's floor for the worst slice, read against the primary judge's deciding evidence in the run's
    scope: {line, blocks} when the worst slice with enough items is below it; None otherwise (no floor, no
    deciding evidence, no tags)."""
    policy = policy_current()
    name = primary_judge(run=run)
    if policy.slice_floor is None or name is None:
        return None
    level = level_current()
    prompt, rubric = run_scope(run=run)
    result = decisive_result(
        judge_name=name, judge_version=judge_configurations(run=run)[name]["version"], prompt_version=prompt,
        rubric_version=rubric, level=level, policy=policy,
    )
    if result is None:
        return None
    line = slice_rules.slice_floor_line(
        result.slices, figure=level.metric, figure_label=metric_label(metric=level.metric, label_kind=result.label_kind),
        min_items=level.min_items, floor=policy.slice_floor, judge=name,
    )
    return {"line": line, "blocks": policy.slice_floor_action == PolicyAction.BLOCK} if line else None
