"""The judge check-up (judgeapp/checkup/, docs/checkup.md) against the lead's floors."""

from __future__ import annotations

from calibration.core import checkup as checkup_rules
from calibration.models import CalibrationPolicy, PolicyAction
from calibration.selectors.policy import policy_get
from calibration.selectors.run_judges import POOLED_JURY, judge_configurations_for_run, primary_judge_for_run
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.judging.memo import shared_read
from judgeapp.models import Run


def _when(record: judgeapp_selectors.CheckupRecord) -> str:
    return f" on {record.finished_at:%Y-%m-%d}" if record.finished_at else ""


def checkup_entry_for_judge(
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


def checkup_verdict_for_report(*, report: dict) -> dict:
    """A check-up report's verdict against the lead's floors in force (the report's `verdict`, which
    `judge-checkup` prints): {passed, text ("passed" or "failed: …"), failures, notes, floors}."""
    policy = policy_get()
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
def checkup_for_judge(*, judge_name: str, judge_version: str) -> dict:
    """The check-up of one judge configuration, judged against the lead's floors (see checkup_entry_for_judge)."""
    return checkup_entry_for_judge(
        judge_name=judge_name,
        judge_version=judge_version,
        record=judgeapp_selectors.latest_checkup_for_judge(judge_name, judge_version),
        policy=policy_get(),
    )


def checkups_for_judges(*, judges, records: dict | None = None) -> dict[str, dict]:
    """{judge name: its check-up in its configuration now (see checkup_entry_for_judge)}, for a page of judges;
    `records` are the judges' check-ups if the page read them already (judging.selectors.latest_checkups_for_judges)."""
    judges = list(judges)
    if records is None:
        records = judgeapp_selectors.latest_checkups_for_judges(judges=judges)
    policy = policy_get()
    return {
        judge.name: checkup_entry_for_judge(
            judge_name=judge.name, judge_version=judge.version, record=records[judge.name], policy=policy
        )
        for judge in judges
    }


def checkups_for_run(*, run: Run) -> list[dict]:
    """The check-up of every judge a run relied on, in the configuration it used, the one its report
    stands on first. A jury's pooled verdict is no judge of its own to check up."""
    configs = judge_configurations_for_run(run=run)
    primary = primary_judge_for_run(run=run)
    names = sorted((name for name in configs if name != POOLED_JURY), key=lambda name: (name != primary, name))
    return [checkup_for_judge(judge_name=name, judge_version=configs[name]["version"]) for name in names]
