"""A judge's calibration status, in the seven words of the contract, from its human-scored evidence. No Django.

The words (CONTRACT §3): `not calibrated` (no person has scored a sample of the judge), `too few labels`
(n of the minimum), `labels unreliable` (the people's own agreement is unknown or below the floor),
`calibrated` (figure, interval, n, date, prompt and rubric versions), `below level — locked`, `undecided`
(the figure's interval straddles the level, with about how many more labelled items would settle it), and
`stale` (the judge's configuration or prompt changed since the sample that calibrated it).

The level is read on the interval, not the point: evidence reaches the level when its 95% interval's lower
bound does, and is below it when the upper bound is; otherwise it is undecided. A figure without an
interval (too few items to resample) is read at its point.

Evidence speaks for the scope it was judged in: a judge configuration × prompt version × rubric version.
In a run's own scope it calibrates or locks; under another configuration or prompt on the same rubric it
makes a calibration `stale`; on another rubric — another task — it is only mentioned, and the judge is
`not calibrated` for this one.

A sample's labels *count* — may lock or unlock a judge — only when the sample is large enough, its figure
defined, and the people's reliability known and high enough: Krippendorff's alpha on the overlapping items
at or above the lead's floor. A sample without overlap counts only if the lead's policy says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

NOT_CALIBRATED = "not calibrated"
TOO_FEW_LABELS = "too few labels"
LABELS_UNRELIABLE = "labels unreliable"
CALIBRATED = "calibrated"
LOCKED = "below level — locked"
STALE = "stale"
UNDECIDED = "undecided"
STATUSES = (NOT_CALIBRATED, TOO_FEW_LABELS, LABELS_UNRELIABLE, CALIBRATED, LOCKED, UNDECIDED, STALE)

# Where a figure's interval lies against the level.
ABOVE, BELOW, STRADDLES = "above", "below", "straddles"

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
    undecided_blocks: bool = False


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
    n_unreadable: int = 0  # labelled items of n_items whose judge reply gave no usable verdict
    handling: str = ""  # how labels, ties and non-answers were counted, in words (core/handling.py)
    non_answers: str = "disagreement"  # what a non-answer among n_unreadable was counted as
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
        return False, (
            f"Krippendorff's alpha among the annotators {alpha} < floor {rules.alpha_floor:.3f} on "
            f"{evidence.alpha_items} overlapping items"
        )
    return True, f"Krippendorff's alpha among the annotators {alpha} ≥ floor {rules.alpha_floor:.3f}"


def counts(evidence: Evidence, rules: Rules) -> bool:
    """May this evidence lock or unlock its judge configuration?"""
    return evidence.n_items >= rules.min_items and evidence.value is not None and reliability(evidence, rules)[0]


def in_scope(evidence: Evidence, *, judge_version: str, prompt_version: str, rubric_version: str) -> bool:
    """Was this evidence judged with this configuration, prompt and rubric?"""
    return (
        evidence.judge_version == judge_version
        and (evidence.prompt_version or "") == (prompt_version or "")
        and (evidence.rubric_version or "") == (rubric_version or "")
    )


def unreadable_text(n_unreadable: int, n_items: int, non_answers: str = "disagreement") -> str:
    """'5 of 20 labelled items had no usable verdict (counted as disagreements)'; '' when none had."""
    if not n_unreadable:
        return ""
    counted = "counted as the judge's ties" if non_answers == "tie" else "counted as disagreements"
    return f"{n_unreadable} of {n_items} labelled items had no usable verdict ({counted})"


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
    unreadable = unreadable_text(evidence.n_unreadable, evidence.n_items, evidence.non_answers)
    return (
        f"{evidence.metric_label} {_figure(evidence.value, evidence.ci)} on {evidence.n_items} items ({evidence.date[:10]}), "
        f"prompt {evidence.prompt_version or '—'}, rubric {evidence.rubric_version or '—'}{source}"
        + (f"; {unreadable}" if unreadable else "")
        + (f"; {evidence.handling}" if evidence.handling else "")
    )


def interval_position(value: float | None, ci: list | None, threshold: float) -> str | None:
    """ABOVE when the interval's lower bound reaches the level, BELOW when its upper bound is below it,
    STRADDLES otherwise; without an interval, the point decides. None for an undefined figure."""
    if value is None:
        return None
    low, high = (ci[0], ci[1]) if ci else (value, value)
    if low >= threshold:
        return ABOVE
    if high < threshold:
        return BELOW
    return STRADDLES


def planning(value: float, ci: list, n_items: int, *, threshold: float, metric_name: str) -> dict:
    """About how many more labelled items would settle an interval that straddles the level, if the figure
    stays where it is: the interval's side facing the level shrinks as 1/√n, so it clears the level at
    n_total ≈ n · (that side's width / |figure − level|)². An estimate, and said as one."""
    distance = abs(value - threshold)
    if distance == 0:
        return {
            "more_items": None, "n_total": None,
            "text": f"cannot be settled at this estimate: the {metric_name} {value:.2f} sits on the level",
        }
    side = value - ci[0] if value > threshold else ci[1] - value
    n_total = n_items * (side / distance) ** 2
    more = max(1, math.ceil(n_total - n_items))
    return {
        "more_items": more, "n_total": n_items + more,
        "text": f"about {more} more labelled items would settle it, if the {metric_name} stays near {value:.2f} — an estimate",
    }


def _position(evidence: Evidence, rules: Rules) -> str | None:
    return interval_position(evidence.value, evidence.ci, rules.threshold)


def _plan(evidence: Evidence, rules: Rules) -> dict:
    return planning(evidence.value, evidence.ci, evidence.n_items, threshold=rules.threshold, metric_name=rules.metric_name)


def _changes(evidence: Evidence, *, judge_version: str, prompt_version: str) -> list[dict]:
    """What differs between the evidence's scope and the run's, on the same rubric."""
    changed = []
    if evidence.judge_version != judge_version:
        changed.append({"what": "judge", "calibrated": evidence.judge_version, "now": judge_version})
    if (evidence.prompt_version or "") != (prompt_version or ""):
        changed.append({"what": "prompt", "calibrated": evidence.prompt_version, "now": prompt_version})
    return changed


def _reaches(evidence: Evidence, rules: Rules) -> bool:
    return _position(evidence, rules) == ABOVE


_FOUND = {ABOVE: "calibrated", BELOW: "below the level", STRADDLES: "undecided"}


def _other_rubric_note(evidence: list[Evidence], rubric_version: str, rules: Rules) -> str:
    """What people found of the judge on another rubric, said as not this rubric's: '' when nothing."""
    others = [e for e in evidence if (e.rubric_version or "") != (rubric_version or "")]
    shown = next((e for e in others if counts(e, rules)), None)
    if shown is None:
        return ""
    found = _FOUND[_position(shown, rules)]
    return f"{found} on rubric {shown.rubric_version or '—'}, not this one ({describe(shown)})"


def calibration_status(
    *,
    judge: str,
    judge_version: str,
    evidence: list[Evidence],
    rules: Rules,
    lock_reason: str | None = None,
    unlocked_by_hand: str | None = None,
    prompt_version: str = "",
    rubric_version: str = "",
) -> dict:
    """The status of one judge configuration as a run uses it: with its prompt and rubric versions.

    `evidence` is every pooled result of the judge, under any configuration, prompt and rubric, newest first.
    `lock_reason` is why the configuration is locked in this scope (the lock rows decide it), or None.
    """
    level = f"{rules.metric_name} ≥ {rules.threshold:.2f} on at least {rules.min_items} items"
    base = {"judge": judge, "judge_version": judge_version, "level": level, "changed": [], "evidence": None, "reliability": None}
    prompt_version, rubric_version = prompt_version or "", rubric_version or ""
    same_rubric = [e for e in evidence if (e.rubric_version or "") == rubric_version]
    own = [
        e for e in same_rubric
        if in_scope(e, judge_version=judge_version, prompt_version=prompt_version, rubric_version=rubric_version)
    ]
    chosen = next((e for e in own if counts(e, rules)), None)

    if lock_reason:
        same_prompt = [e for e in same_rubric if (e.prompt_version or "") == prompt_version]
        shown = chosen or (own[0] if own else (same_prompt[0] if same_prompt else None))
        if chosen is not None and _position(chosen, rules) == STRADDLES:
            # An undecided result neither locks nor unlocks: the lock stays as the last decided sample left it.
            lock_reason += (
                f"; the newest sample is undecided ({describe(chosen)}; {_plan(chosen, rules)['text']}), so the lock stays"
            )
        return _result(base, LOCKED, lock_reason, shown, rules)
    if chosen is not None and _position(chosen, rules) == STRADDLES:
        plan = _plan(chosen, rules)
        summary = f"the interval straddles the level {rules.threshold:.2f}: {plan['text']}; {describe(chosen)}"
        return _result(base, UNDECIDED, summary, chosen, rules, plan=plan)
    if chosen is not None:
        summary = describe(chosen)
        if not _reaches(chosen, rules) and unlocked_by_hand:
            summary += f"; below the level, unlocked by a lead: {unlocked_by_hand}"
        return _result(base, CALIBRATED, summary, chosen, rules)
    # Counting evidence of the same rubric under another configuration or prompt: the calibration is stale
    # when it reached the level; below it, it is said beside this scope's own state.
    elsewhere = next((e for e in same_rubric if counts(e, rules)), None)
    note = ""
    if elsewhere is not None:
        changed = _changes(elsewhere, judge_version=judge_version, prompt_version=prompt_version)
        what = ", ".join(f"{c['what']} {c['calibrated'] or '—'} → {c['now'] or '—'}" for c in changed)
        if _reaches(elsewhere, rules):
            return _result(
                base | {"changed": changed}, STALE,
                f"changed since its calibration sample: {what}; calibrated on {describe(elsewhere)}", elsewhere, rules,
            )
        note = f"{_FOUND[_position(elsewhere, rules)]} before it changed ({what}): {describe(elsewhere)}"
    note = note or _other_rubric_note(evidence, rubric_version, rules)
    latest = own[0] if own else None
    if latest is None:
        summary = f"no person has scored a sample of {judge}'s verdicts"
        if note:
            summary += f" with this configuration, prompt and rubric; {note}"
        return _result(base, NOT_CALIBRATED, summary, None, rules)
    note = f"; {note}" if note else ""
    if latest.n_items < rules.min_items:
        unreadable = unreadable_text(latest.n_unreadable, latest.n_items, latest.non_answers)
        return _result(
            base, TOO_FEW_LABELS,
            f"{latest.n_items} of the {rules.min_items} labelled items the level needs (sample {latest.sample_id[:8]})"
            + (f"; {unreadable}" if unreadable else "") + note, latest, rules,
        )
    reliable, why = reliability(latest, rules)
    if not reliable:
        return _result(base, LABELS_UNRELIABLE, f"{why}; {describe(latest)}{note}", latest, rules)
    return _result(
        base, TOO_FEW_LABELS, f"the figure is undefined on these labels (one category only); {describe(latest)}{note}",
        latest, rules,
    )


def _result(base: dict, status: str, summary: str, evidence: Evidence | None, rules: Rules, plan: dict | None = None) -> dict:
    if status == LOCKED:
        blocks = True
    elif status in UNCHECKED:
        blocks = rules.not_calibrated_blocks
    elif status == STALE:
        blocks = rules.stale_blocks
    elif status == UNDECIDED:
        blocks = rules.undecided_blocks
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
            "alpha": (
                {"value": evidence.alpha, "ci": evidence.alpha_ci, "n_items": evidence.alpha_items} if evidence.overlap else None
            ),
            "single_annotator": not evidence.overlap,
            "labels_count": reliable,
            "candidate": evidence.candidate or None,
            "n_unreadable": evidence.n_unreadable,
            "unreadable": unreadable_text(evidence.n_unreadable, evidence.n_items, evidence.non_answers) or None,
            "handling": evidence.handling or None,
            "interval_position": _position(evidence, rules),
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
        "planning": plan,
    }


def gate_line(status: dict) -> str:
    """The status as one line of a gate's reasons or warnings, its status word first: 'judge locked: …',
    'judge not calibrated: …' (no person has scored it), 'judge has too few labels: …'."""
    judge = f"{status['judge']} (configuration {status['judge_version'][:12]})"
    if status["status"] == LOCKED:
        return status["summary"]  # the lock's own reason starts "judge locked: …"
    if status["status"] == STALE:
        return f"judge calibration stale: {judge} {status['summary']}"
    if status["status"] == CALIBRATED:
        return f"judge calibrated: {judge}: {status['summary']}"
    if status["status"] == UNDECIDED:
        return f"judge calibration undecided: {judge}: {status['summary']}"
    if status["status"] == TOO_FEW_LABELS:
        return f"judge has too few labels: {judge}: {status['summary']}"
    if status["status"] == LABELS_UNRELIABLE:
        return f"judge's labels unreliable: {judge}: {status['summary']}"
    return f"judge not calibrated: {judge}: {status['summary']}"
