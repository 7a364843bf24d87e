"""The baseline of a pointwise run, compared like for like, and any two runs side by side.

The baseline is the system's last release marked *before the run was created* (a release that came later
never judges an earlier run), or the run named by --baseline-run. The comparison is made on the cases both
test sets share (the same id and the same input), judged the same way:

- the same rubric, prompt and judge configuration: the two runs' stored judgments, paired by case (`same`);
- anything of those differs: the baseline's stored replies on the shared cases are judged again with this
  run's rubric, prompt and judge, in the run's baseline stage (`rejudged`; the response cache makes a repeat
  free), and paired with this run's own scores;
- no shared case, or no reply kept to judge again: no comparison, one sentence why (`skipped`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from judgeapp.judging.batches import ROWS_AT_ONCE, batched
from judgeapp.models import Judgment, Output, Purpose, Release, Run, RunKind, RunStatus, UnitStatus
from judgeapp.releases.core import GIVEN, REJUDGED, SAME, SKIPPED, ScorePair, paired_difference

# What must be equal for two runs' scores to be on one scale: a test set may differ (its shared cases are
# compared), these may not.
JUDGED_THE_SAME_WAY = ("rubric", "prompt", "judge")


@dataclass
class BaselinePlan:
    """What a run is compared with, and how. `how` is None when there is nothing to compare with (no system,
    no earlier release): `reason` says so."""

    how: str | None
    source: str = ""
    run: Run | None = None
    release: Release | None = None
    reason: str = ""
    mean: float | None = None  # a mean given by hand (GIVEN)
    shared: set[str] | None = field(default=None, repr=False)


def baseline_release_for_run(*, run: Run) -> Release | None:
    """The system's last release marked before `run` was created: a release marked later never becomes the
    baseline of an earlier run (nor the run's own release its baseline)."""
    if run.system_id is None:
        return None
    return (
        Release.objects.filter(system_id=run.system_id, created_at__lt=run.created_at)
        .exclude(run=run)
        .select_related("run", "run__testset")
        .order_by("-created_at", "-id")
        .first()
    )


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def shared_case_ids_for_testsets(*, testset, other) -> set[str]:
    """The ids of the cases both test sets hold with the same input: a case of one id that asks something
    else is a different case. Read a batch at a time; what is kept is one digest per case of `other`."""
    if testset.pk == other.pk:
        return set(testset.cases.values_list("case_id", flat=True).iterator(chunk_size=ROWS_AT_ONCE))
    theirs = {
        case_id: _digest(text) for case_id, text in other.cases.values_list("case_id", "input").iterator(chunk_size=ROWS_AT_ONCE)
    }
    return {
        case_id
        for case_id, text in testset.cases.values_list("case_id", "input").iterator(chunk_size=ROWS_AT_ONCE)
        if theirs.get(case_id) == _digest(text)
    }


def judged_differently(run: Run, other: Run) -> list[str]:
    """What of the rubric, prompt and judge configuration differs between two runs ([] when none does)."""
    return [what for what in JUDGED_THE_SAME_WAY if run.versions.get(what) != other.versions.get(what)]


def _release_source(release: Release) -> str:
    label = f" {release.label}" if release.label else ""
    return f"{release.system.name}'s release{label} (run {release.run.run_id}, marked {release.created_at:%Y-%m-%d})"


def _like_for_like(run: Run, base: Run, *, source: str, release: Release | None = None) -> BaselinePlan:
    plan = BaselinePlan(how=None, source=source, run=base, release=release)
    if base.kind != RunKind.POINTWISE or base.status not in (RunStatus.DONE, RunStatus.INVALID) or base.testset_id is None:
        plan.how, plan.reason = SKIPPED, f"{source} is not a finished pointwise run, so there is nothing to compare with"
        return plan
    plan.shared = shared_case_ids_for_testsets(testset=run.testset, other=base.testset)
    if not plan.shared:
        plan.how = SKIPPED
        plan.reason = (
            f"no case of this run's test set {run.testset.name} is in the test set {base.testset.name} of {source} "
            "with the same id and input, so the two are not compared"
        )
        return plan
    if not judged_differently(run, base):
        plan.how = SAME
        return plan
    if not Output.objects.filter(run=base, slot="").exists():
        plan.how = SKIPPED
        plan.reason = (
            f"{source} was judged with another {', '.join(judged_differently(run, base))} and kept no replies to judge "
            "again this run's way, so the two are not compared"
        )
        return plan
    plan.how = REJUDGED
    return plan


def baseline_plan_for_run(*, run: Run) -> BaselinePlan:
    """What the run's gate compares it with (--baseline-run, --baseline-mean, else the system's last release
    marked before the run was created), and how."""
    options = run.options
    if options.get("baseline_run"):
        source = f"run {options['baseline_run']} (--baseline-run)"
        base = Run.objects.select_related("testset").filter(run_id=options["baseline_run"]).first()
        if base is None:
            return BaselinePlan(how=SKIPPED, source=source, reason=f"{source} no longer exists")
        return _like_for_like(run, base, source=source)
    if options.get("baseline_mean") is not None:
        return BaselinePlan(how=GIVEN, source="the given baseline mean (--baseline-mean)", mean=options["baseline_mean"])
    if run.system_id is None:
        return BaselinePlan(
            how=None, reason="no system under test, so no earlier release to compare with: the baseline check is skipped"
        )
    release = baseline_release_for_run(run=run)
    if release is None:
        return BaselinePlan(
            how=None, reason=f"{run.system.name} has no release marked before this run: the baseline check is skipped"
        )
    return _like_for_like(run, release.run, source=_release_source(release), release=release)


def baseline_replies_for_run(*, run: Run, plan: BaselinePlan) -> Iterator[tuple[int, str, str]]:
    """(this run's case pk, case id, the baseline's reply) of each shared case the baseline kept a reply
    for, in the test set's order, read a batch at a time: what the baseline stage judges again."""
    if plan.how != REJUDGED:
        return
    cases = run.testset.cases.order_by("position").values_list("pk", "case_id")
    for batch in batched(cases.iterator(chunk_size=ROWS_AT_ONCE)):
        ours = {case_id: pk for pk, case_id in batch if case_id in plan.shared}
        if not ours:
            continue
        replies = dict(
            Output.objects.filter(run=plan.run, slot="", case__case_id__in=list(ours)).values_list("case__case_id", "text")
        )
        for case_id, pk in ours.items():
            if case_id in replies:
                yield pk, case_id, replies[case_id]


def scores_for_units(units, *, shared: set[str] | None = None) -> dict[tuple[str, str], tuple[float, str]]:
    """{(case id, criterion): (score, judgment id)} of the scored units, in the test set's order."""
    scores = {}
    rows = (
        units.filter(status=UnitStatus.DONE)
        .order_by("case__position", "criterion__position", "id")
        .values_list("case__case_id", "criterion__name", "parsed", "uuid")
    )
    for case_id, criterion, parsed, uuid in rows.iterator(chunk_size=ROWS_AT_ONCE):
        if shared is not None and case_id not in shared:
            continue
        score = (parsed or {}).get("score")
        if isinstance(score, (int, float)) and not isinstance(score, bool):
            scores[(case_id, criterion)] = (float(score), str(uuid))
    return scores


def _baseline_units(run: Run, plan: BaselinePlan):
    """The units whose scores stand for the baseline: its own judgments, or this run's baseline stage."""
    if plan.how == REJUDGED:
        return run.judgments.filter(purpose=Purpose.BASELINE)
    return plan.run.judgments.filter(purpose=Purpose.JUDGE)


def score_pairs_for_runs(candidate: dict, baseline: dict) -> list[ScorePair]:
    return [
        ScorePair(case_id=case_id, criterion=criterion, candidate=score, baseline=baseline[(case_id, criterion)][0])
        for (case_id, criterion), (score, _) in candidate.items()
        if (case_id, criterion) in baseline
    ]


def baseline_for_run(*, run: Run, mean: float | None = None) -> dict | None:
    """The report's `baseline`: {run_id, how, source, release, reason, cases, pairs, mean, candidate_mean,
    diff, ci95, worse, better, n_worse, n_better, n_unchanged, shared}; None when there is no baseline.
    `mean` is the run's own mean (compared with a mean given by hand)."""
    plan = baseline_plan_for_run(run=run)
    if plan.how is None:
        return None
    result = {
        "run_id": plan.run.run_id if plan.run is not None else None,
        "how": plan.how,
        "source": plan.source,
        "release": {"label": plan.release.label, "marked_at": plan.release.created_at.isoformat()} if plan.release else None,
        "reason": plan.reason,
        "judged_differently": judged_differently(run, plan.run) if plan.run is not None else [],
        "shared": len(plan.shared) if plan.shared is not None else None,
    }
    if plan.how == GIVEN:
        diff = None if mean is None else mean - plan.mean
        return {**result, **paired_difference([]), "mean": plan.mean, "candidate_mean": mean, "diff": diff}
    if plan.how == SKIPPED:
        return {**result, **paired_difference([])}
    candidate = scores_for_units(run.judgments.filter(purpose=Purpose.JUDGE), shared=plan.shared)
    baseline = scores_for_units(_baseline_units(run, plan), shared=plan.shared)
    compared = paired_difference(score_pairs_for_runs(candidate, baseline))
    if not compared["pairs"]:
        result["how"] = SKIPPED
        result["reason"] = f"none of the {len(plan.shared)} shared cases was scored on both sides, so the two are not compared"
    return {**result, **compared}


# --- Any two runs side by side (the comparison page and `compare-runs`) ----------------------------------


def comparison_for_runs(*, run: Run, other: Run, criterion: str | None = None) -> dict:
    """`run` beside `other` on the cases they share: per (case, criterion) both scores, the difference
    (run − other) and each judgment's id, regressions first; the paired difference with its interval.

    When `other` is the run's baseline and its replies were judged again the run's way, those scores stand
    for `other` (the comparison the gate made); otherwise each run's stored judgments, and `judged_differently`
    says what makes them not on one scale.
    """
    for each in (run, other):
        if each.kind != RunKind.POINTWISE or each.testset_id is None:
            raise ValueError(f"run {each.run_id} is not a pointwise run")
    shared = shared_case_ids_for_testsets(testset=run.testset, other=other.testset)
    baseline = (run.report or {}).get("baseline") or {}
    rejudged = baseline.get("how") == REJUDGED and baseline.get("run_id") == other.run_id
    ours = scores_for_units(run.judgments.filter(purpose=Purpose.JUDGE), shared=shared)
    theirs = scores_for_units(
        run.judgments.filter(purpose=Purpose.BASELINE) if rejudged else other.judgments.filter(purpose=Purpose.JUDGE),
        shared=shared
    )
    criteria = sorted({c for _, c in ours} | {c for _, c in theirs})
    if criterion:
        ours = {key: value for key, value in ours.items() if key[1] == criterion}
        theirs = {key: value for key, value in theirs.items() if key[1] == criterion}
    rows = []
    for key in list(ours) + [key for key in theirs if key not in ours]:
        mine, their = ours.get(key), theirs.get(key)
        rows.append({
            "case_id": key[0],
            "criterion": key[1],
            "score": mine[0] if mine else None,
            "other_score": their[0] if their else None,
            "diff": mine[0] - their[0] if mine and their else None,
            "judgment": mine[1] if mine else None,
            "other_judgment": their[1] if their else None,
        })
    # Regressions first, the worst at the top; then unchanged and better; rows scored on one side only last.
    order = {key: i for i, key in enumerate(ours)}
    rows.sort(
        key=lambda r: (r["diff"] is None, r["diff"] if r["diff"] is not None else 0, order.get((r["case_id"], r["criterion"]), 0))
    )
    return {
        "run": run,
        "other": other,
        "rejudged": rejudged,
        # Where the other side's judgments live: the run's own baseline stage when they were judged again.
        "other_judgments_run": run.run_id if rejudged else other.run_id,
        "judged_differently": [] if rejudged else judged_differently(run, other),
        "shared": len(shared),
        "criteria": criteria,
        "criterion": criterion or "",
        "summary": paired_difference(score_pairs_for_runs(ours, theirs)),
        "rows": rows,
    }


def reasonings_for_judgments(*, judgment_ids) -> dict[str, str]:
    """{judgment id: the judge's reasoning} of the judgments a page shows (never every row's)."""
    return {
        str(uuid): (parsed or {}).get("reasoning", "")
        for uuid, parsed in Judgment.objects.filter(uuid__in=[j for j in judgment_ids if j]).values_list("uuid", "parsed")
    }
