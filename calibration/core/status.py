"""A judge's calibration status, in the six words of the contract, from its human-scored evidence. No Django.

The words (CONTRACT §3): `not calibrated` (no person has scored a sample of the judge), `too few labels`
(n of the minimum), `labels unreliable` (the people's own agreement is unknown or below the floor),
`calibrated` (figure, interval, n, date, prompt and rubric versions), `below level — locked`, and `stale`
(the judge's configuration, prompt or rubric changed since the sample that calibrated it).

A sample's labels *count* — may lock or unlock a judge — only when the sample is large enough, its figure
defined, and the people's reliability known and high enough: Krippendorff's alpha on the overlapping items
at or above the lead's floor. A sample without overlap counts only if the lead's policy says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NOT_CALIBRATED = "not calibrated"
TOO_FEW_LABELS = "too few labels"
LABELS_UNRELIABLE = "labels unreliable"
CALIBRATED = "calibrated"
LOCKED = "below level — locked"
STALE = "stale"
STATUSES = (NOT_CALIBRATED, TOO_FEW_LABELS, LABELS_UNRELIABLE, CALIBRATED, LOCKED, STALE)

# The statuses the lead's "not calibrated" policy covers: a judge with three labels, or with labels nobody
# can vouch for, is no better calibrated than one with none (else adding a few labels would open a gate
# that the blocking policy keeps closed for an unchecked judge).
UNCHECKED = (NOT_CALIBRATED, TOO_FEW_LABELS, LABELS_UNRELIABLE)

SINGLE_ANNOTATOR = "single-annotator sample"


@dataclass(frozen=True)
class Rules:
    """The lead's level and policy, as the status needs them."""

    threshold: float
    min_items: int
    alpha_floor: float
    single_annotator_locks: bool = False
    metric_name: str = "kappa"  # "kappa" or "agreement"
    not_calibrated_blocks: bool = False
    stale_blocks: bool = False


@dataclass(frozen=True)
class Evidence:
    """One sample's pooled agreement with one configuration of the judge (or an adopted candidate's)."""

    judge_version: str
    prompt_version: str
    rubric_version: str
    n_items: int
    value: float | None  # the level's metric
    ci: list | None
    metric_label: str  # "quadratic-weighted kappa", "Cohen's kappa", …
    date: str  # ISO date the evidence came into force
    sample_id: str
    overlap: bool  # some items were labelled by two or more people
    alpha: float | None = None
    alpha_ci: list | None = None
    alpha_items: int = 0
    candidate: str = ""  # the adopted candidate's title, if the figures came from a candidate run
    extra: dict = field(default_factory=dict)


def reliability(evidence: Evidence, rules: Rules) -> tuple[bool, str]:
    """(whether the people's labels may lock or unlock, in words why)."""
    if not evidence.overlap:
        if rules.single_annotator_locks:
            return True, f"{SINGLE_ANNOTATOR} (the lead's policy lets it lock)"
        return False, f"{SINGLE_ANNOTATOR}: the people's own agreement is unknown, so it warns but cannot lock"
    alpha = _figure(evidence.alpha, evidence.alpha_ci)
    if evidence.alpha is None:
        return False, f"Krippendorff's alpha among the annotators is undefined on {evidence.alpha_items} overlapping items"
    if evidence.alpha < rules.alpha_floor:
        return False, f"Krippendorff's alpha among the annotators {alpha} < floor {rules.alpha_floor:.3f} on {evidence.alpha_items} overlapping items"
    return True, f"Krippendorff's alpha among the annotators {alpha} ≥ floor {rules.alpha_floor:.3f}"


def counts(evidence: Evidence, rules: Rules) -> bool:
    """May this evidence lock or unlock its judge configuration?"""
    return evidence.n_items >= rules.min_items and evidence.value is not None and reliability(evidence, rules)[0]


def decisive(evidence: list[Evidence], judge_version: str, rules: Rules) -> Evidence | None:
    """The evidence that decides a configuration's lock: its newest that counts (`evidence` newest first)."""
    return next((e for e in evidence if e.judge_version == judge_version and counts(e, rules)), None)


def _figure(value: float | None, ci: list | None) -> str:
    if value is None:
        return "—"
    text = f"{value:.3f}"
    if ci:
        text += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return text


def describe(evidence: Evidence) -> str:
    """'quadratic-weighted kappa 0.912 [0.85, 0.97] on 30 items (2025-01-02), prompt a1b2, rubric c3d4'."""
    source = f", from candidate {evidence.candidate}" if evidence.candidate else ""
    return (
        f"{evidence.metric_label} {_figure(evidence.value, evidence.ci)} on {evidence.n_items} items ({evidence.date[:10]}), "
        f"prompt {evidence.prompt_version or '—'}, rubric {evidence.rubric_version or '—'}{source}"
    )


def _changes(evidence: Evidence, *, judge_version: str, prompt_version: str | None, rubric_version: str | None) -> list[dict]:
    changed = []
    if evidence.judge_version != judge_version:
        changed.append({"what": "judge", "calibrated": evidence.judge_version, "now": judge_version})
    if prompt_version and evidence.prompt_version and evidence.prompt_version != prompt_version:
        changed.append({"what": "prompt", "calibrated": evidence.prompt_version, "now": prompt_version})
    if rubric_version and evidence.rubric_version and evidence.rubric_version != rubric_version:
        changed.append({"what": "rubric", "calibrated": evidence.rubric_version, "now": rubric_version})
    return changed


def calibration_status(
    *,
    judge: str,
    judge_version: str,
    evidence: list[Evidence],
    rules: Rules,
    lock_reason: str | None = None,
    unlocked_by_hand: str | None = None,
    prompt_version: str | None = None,
    rubric_version: str | None = None,
) -> dict:
    """The status of one judge configuration as used by a run (its prompt and rubric versions; None: any).

    `evidence` is every pooled result of the judge, under any configuration, newest first. `lock_reason` is
    why the configuration is locked (the lock rows decide it), or None.
    """
    level = f"{rules.metric_name} ≥ {rules.threshold:.2f} on at least {rules.min_items} items"
    base = {"judge": judge, "judge_version": judge_version, "level": level, "changed": [], "evidence": None, "reliability": None}
    own = [e for e in evidence if e.judge_version == judge_version]
    chosen = decisive(evidence, judge_version, rules)

    if lock_reason:
        shown = chosen or (own[0] if own else (evidence[0] if evidence else None))
        return _result(base, LOCKED, lock_reason, shown, rules)
    if chosen is not None:
        changed = _changes(chosen, judge_version=judge_version, prompt_version=prompt_version, rubric_version=rubric_version)
        if changed:
            what = ", ".join(f"{c['what']} {c['calibrated']} → {c['now']}" for c in changed)
            return _result(base | {"changed": changed}, STALE, f"changed since its calibration sample: {what}; calibrated on {describe(chosen)}", chosen, rules)
        summary = describe(chosen)
        if chosen.value is not None and chosen.value < rules.threshold and unlocked_by_hand:
            summary += f"; below the level, unlocked by a lead: {unlocked_by_hand}"
        return _result(base, CALIBRATED, summary, chosen, rules)
    elsewhere = next((e for e in evidence if e.judge_version != judge_version and counts(e, rules)), None)
    if elsewhere is not None:
        changed = _changes(elsewhere, judge_version=judge_version, prompt_version=prompt_version, rubric_version=rubric_version)
        what = ", ".join(f"{c['what']} {c['calibrated']} → {c['now']}" for c in changed)
        return _result(
            base | {"changed": changed}, STALE,
            f"changed since its calibration sample: {what}; calibrated on {describe(elsewhere)}", elsewhere, rules,
        )
    latest = own[0] if own else (evidence[0] if evidence else None)
    if latest is None:
        return _result(base, NOT_CALIBRATED, f"no person has scored a sample of {judge}'s verdicts", None, rules)
    if latest.n_items < rules.min_items:
        return _result(
            base, TOO_FEW_LABELS,
            f"{latest.n_items} of the {rules.min_items} labelled items the level needs (sample {latest.sample_id[:8]})", latest, rules,
        )
    reliable, why = reliability(latest, rules)
    if not reliable:
        return _result(base, LABELS_UNRELIABLE, f"{why}; {describe(latest)}", latest, rules)
    return _result(base, TOO_FEW_LABELS, f"the figure is undefined on these labels (one category only); {describe(latest)}", latest, rules)


def _result(base: dict, status: str, summary: str, evidence: Evidence | None, rules: Rules) -> dict:
    if status == LOCKED:
        blocks = True
    elif status in UNCHECKED:
        blocks = rules.not_calibrated_blocks
    elif status == STALE:
        blocks = rules.stale_blocks
    else:
        blocks = False
    shown = None
    reliability_text = None
    if evidence is not None:
        reliable, reliability_text = reliability(evidence, rules)
        shown = {
            "metric": evidence.metric_label,
            "value": evidence.value,
            "ci": evidence.ci,
            "n_items": evidence.n_items,
            "min_items": rules.min_items,
            "date": evidence.date,
            "sample_id": evidence.sample_id,
            "judge_version": evidence.judge_version,
            "prompt_version": evidence.prompt_version or None,
            "rubric_version": evidence.rubric_version or None,
            "alpha": {"value": evidence.alpha, "ci": evidence.alpha_ci, "n_items": evidence.alpha_items} if evidence.overlap else None,
            "single_annotator": not evidence.overlap,
            "labels_count": reliable,
            "candidate": evidence.candidate or None,
            **evidence.extra,
        }
    return {
        **base,
        "status": status,
        "summary": summary,
        "blocks": blocks,
        "warns": not blocks and status != CALIBRATED,
        "evidence": shown,
        "reliability": reliability_text,
    }


def gate_line(status: dict) -> str:
    """The status as one line of a gate's reasons or warnings: 'judge not calibrated: …'."""
    judge = f"{status['judge']} (configuration {status['judge_version'][:12]})"
    if status["status"] == LOCKED:
        return status["summary"]  # the lock's own reason starts "judge not calibrated: …"
    if status["status"] == STALE:
        return f"judge calibration stale: {judge} {status['summary']}"
    if status["status"] == CALIBRATED:
        return f"judge calibrated: {judge}: {status['summary']}"
    return f"judge not calibrated: {judge} is {status['status']}: {status['summary']}"
