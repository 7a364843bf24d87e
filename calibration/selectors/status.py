"""The calibration status (CONTRACT §3: six words), and what the gate and a run's start ask of it."""

from __future__ import annotations

from calibration.core import status as status_rules
from calibration.models import AgreementResult, JudgeLock
from calibration.selectors.alt_test import alt_test_for_run
from calibration.selectors.checkups import checkups_for_run
from calibration.selectors.evidence import evidence_for_judge
from calibration.selectors.locks import lock_reason_for_scope
from calibration.selectors.policy import level_get, policy_get, rules_get
from calibration.selectors.run_judges import judge_configurations_for_run, primary_judge_for_run, scope_for_run
from calibration.selectors.slices import slice_floor_for_run
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.judging.memo import shared_read
from judgeapp.models import Run


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
def status_for_scope(
    *, judge_name: str, judge_version: str, prompt_version: str | None = None, rubric_version: str | None = None
) -> dict:
    """The calibration status of one judge configuration as a run used it: with its prompt and rubric
    versions (its scope; "" for a run without one). None for both: the scope it was last measured in (a
    judge's page, where no run says which prompt and rubric)."""
    level = level_get()
    rules = rules_get(level=level)
    evidence = evidence_for_judge(judge_name=judge_name, level=level)
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
        lock_reason=lock_reason_for_scope(
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
    configs = judge_configurations_for_run(run=run)
    primary = primary_judge_for_run(run=run)
    names = sorted(configs, key=lambda name: (name != primary, name))
    prompt, rubric = scope_for_run(run=run)
    return [
        status_for_scope(judge_name=name, judge_version=configs[name]["version"], prompt_version=prompt, rubric_version=rubric)
        for name in names
    ]


def calibration_for_gate(*, run: Run) -> dict:
    """What calibration says to a run's release gate: {status (of the primary judge), statuses, checkup
    (each judge's check-up, see checkup_for_judge), alt_test (each judge's alternative annotator test, see
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
        "policy": policy_get().as_dict(),
    }


def status_for_judge(*, judge) -> dict:
    """A judge's status in its current configuration, in the prompt and rubric scope it was last measured in."""
    return status_for_scope(judge_name=judge.name, judge_version=judge.version)


def judge_status_list() -> list[dict]:
    """Every configured judge's status in its current configuration, and any judge people compared but no
    longer configured (a jury's pool, an imported judge): the calibration page lists them all."""
    judges, _ = judgeapp_selectors.endpoint_list()
    rows = []
    seen = set()
    for judge in judges:
        rows.append({"judge": judge, "status": status_for_judge(judge=judge)})
        seen.add(judge.name)
    for name, version in (
        AgreementResult.objects.counting().filter(criterion="").exclude(judge_name__in=seen)
        .order_by("judge_name", "-effective_at").values_list("judge_name", "judge_version")
    ):
        if name not in seen:
            seen.add(name)
            rows.append({"judge": None, "status": status_for_scope(judge_name=name, judge_version=version)})
    return rows


def preflight_for_run(*, judges, systems=(), pair: tuple | None = None) -> list:
    """The warnings a form shows and a command prints before a run starts (judging/preflight.py), with each
    judge's calibration status in its current configuration."""
    from judgeapp.judging.preflight import run_warnings

    return run_warnings(judges=judges, systems=systems, pair=pair, status_of=lambda judge: status_for_judge(judge=judge))
