"""Reads of the shell: a judge's scorecard (its record with people, its pairwise position consistency, its
parse failures, cost and the runs and gates relying on it) and the calibration status beside every judge."""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from datetime import date, datetime, time, timedelta

from django.core.paginator import Paginator
from django.db.models import Avg, Count, Q, QuerySet, Sum
from django.utils import timezone

from calibration.selectors.agreement import agreement_history_for_judge, agreement_reads_for_run
from calibration.selectors.alt_test import alt_test_for_result
from calibration.selectors.candidates import adopted_candidate_for_judge
from calibration.selectors.checkups import checkup_for_judge, checkups_for_judges
from calibration.selectors.corrected import human_majority_for_run
from calibration.selectors.locks import calibrated_versions_for_judge, locks_for_judge
from calibration.selectors.policy import level_get
from calibration.selectors.run_judges import scope_for_run
from calibration.selectors.status import status_for_judge, status_for_scope
from judgeapp.judging import selectors as judging_selectors
from judgeapp.judging.accounting import CATEGORIES
from judgeapp.judging.noise import noise_line
from judgeapp.judging.outcomes import run_outcome
from judgeapp.judging.pairs import ORDERS, map_back
from judgeapp.judging.runkind import handlers_all
from judgeapp.models import FINISHED_RUN_STATUSES, AuditLog, Judge, Judgment, Purpose, Run, RunKind, RunStatus, UnitStatus
from judgeapp.releases.selectors import gate_for_run

RUNS_SCANNED = 2000
RUNS_SHOWN = 25
LOCK_ACTIONS = (AuditLog.Action.JUDGE_LOCKED, AuditLog.Action.JUDGE_UNLOCKED, AuditLog.Action.CANDIDATE_ADOPTED)


def statuses_for_judges(judges) -> dict[str, dict]:
    """{judge name: its calibration status in its current configuration}."""
    return {judge.name: status_for_judge(judge=judge) for judge in judges}


def checkup_rows_for_judges(judges, records: dict | None = None) -> dict[str, dict]:
    """{judge name: its latest check-up with its verdict against the lead's floors, and whether it blocks}."""
    return checkups_for_judges(judges=judges, records=records)


def runs_for_judge(*, name: str, version: str) -> list[Run]:
    """The runs that used this judge in this configuration (as a run's judge or a jury's juror), newest first."""
    runs = Run.objects.select_related("system").only(
        "run_id", "kind", "status", "config", "versions", "created_at", "report", "system__name", "title"
    ).order_by("-created_at")[:RUNS_SCANNED]
    return [run for run in runs if (run.config.get("judges") or {}).get(name, {}).get("version") == version]


def judge_versions_for_name(*, name: str) -> list[str]:
    versions = calibrated_versions_for_judge(judge_name=name)
    for run in Run.objects.only("config").order_by("-created_at")[:RUNS_SCANNED]:
        version = (run.config.get("judges") or {}).get(name, {}).get("version")
        if version:
            versions.add(version)
    return sorted(versions)


def _trend(points: list[dict], threshold: float) -> dict:
    """SVG geometry of agreement over time: a dot per sample, its interval as a bar, the level as a line."""
    width, height, pad = 640, 200, 28
    values = [v for p in points for v in (p["value"], *(p["ci"] or [])) if v is not None] + [threshold]
    low, high = min(values + [0.0]), max(values + [1.0])
    span = (high - low) or 1.0

    def y(value: float) -> float:
        return round(height - pad - (value - low) / span * (height - 2 * pad), 1)

    n = len(points)
    shapes = []
    for i, point in enumerate(points):
        x = round(pad + (i + 0.5) * (width - 2 * pad) / max(n, 1), 1)
        shapes.append(
            {
                **point,
                "x": x,
                "y": y(point["value"]) if point["value"] is not None else None,
                "y_low": y(point["ci"][0]) if point["ci"] else None,
                "y_high": y(point["ci"][1]) if point["ci"] else None,
            }
        )
    return {"width": width, "height": height, "points": shapes, "level_y": y(threshold), "low": low, "high": high,
            "axis_low_y": y(low), "axis_high_y": y(high)}


# With the orders' prompts the same, a pair is the same evidence: the key a pair is counted once under.
PAIR_KEY_NOTE = (
    "a prompt pair is the two orders' prompts (the sha-256 of each, sorted): a cache replay or a re-run of the same "
    "pair is counted once, the first time it was judged"
)


def _pair_key(hashes: dict[str, str], fallback: tuple) -> tuple:
    """The two orders' prompt hashes, in either order (a run with A and B swapped asks the same pair)."""
    if all(hashes.get(order) for order in ORDERS):
        return tuple(sorted(hashes[order] for order in ORDERS))
    return fallback  # a unit stored without its prompt's hash: evidence of its own run only


def _both_order_pairs(*, name: str, runs: list[Run]) -> dict[int, list[tuple[tuple, dict[str, str]]]]:
    """{run pk: [(pair key, {order: the judge's "1" | "2" | "tie"})]} of the pairs this judge answered in both
    orders, in the runs of the kinds that judge pairs in both orders (pairwise, the check-up)."""
    pair_kinds = [kind for kind in {run.kind for run in runs} if getattr(_handler(kind), "position_evidence", False)]
    units = Judgment.objects.filter(
        run__in=[run.pk for run in runs if run.kind in pair_kinds], judge__name=name, purpose=Purpose.JUDGE,
        status=UnitStatus.DONE, order__in=list(ORDERS),
    ).values_list("run_id", "case_id", "key", "order", "prompt_hash", "parsed__winner").order_by("id")
    pairs: dict[tuple, dict] = {}
    for run_pk, case_pk, key, order, prompt_hash, winner in units.iterator(chunk_size=2000):
        # The unit's key less its order ("c001/ab" -> "c001"): a case asked more than once in a run stays apart.
        item = (run_pk, case_pk, "/".join(part for part in key.split("/") if part != order))
        pair = pairs.setdefault(item, {"hashes": {}, "winners": {}})
        # str(): SQLite's JSON extraction reads the stored "1" back as the number 1.
        pair["hashes"][order], pair["winners"][order] = prompt_hash, None if winner is None else str(winner)
    by_run: dict[int, list] = {}
    for item, pair in pairs.items():
        if len(pair["winners"]) == len(ORDERS):
            by_run.setdefault(item[0], []).append((_pair_key(pair["hashes"], item), pair["winners"]))
    return by_run


def _handler(kind: str):
    """The run kind's handler, which knows how its units count; None for a kind with no handler in this build."""
    from judgeapp.judging.runkind import handler_for

    try:
        return handler_for(kind)
    except LookupError:
        return None


def _position_of(winners: dict[str, str]) -> tuple[bool, int, int] | None:
    """(the two orders agreed, how often it chose the reply shown first, shown second), None when unreadable."""
    try:
        ab, ba = map_back("ab", winners["ab"]), map_back("ba", winners["ba"])
    except ValueError:  # an unreadable winner
        return None
    if ab == ba:
        return True, 0, 0
    return False, (winners["ab"] == "1") + (winners["ba"] == "1"), (winners["ab"] == "2") + (winners["ba"] == "2")


def _position_consistency(*, name: str, runs: list[Run]) -> dict:
    """From every pair the judge judged in both orders (pairwise runs and check-ups), each distinct prompt pair
    once, the first time it was judged: the share whose two orders agreed and, where they did not, which
    position it favoured (the reply shown first or second)."""
    by_run = _both_order_pairs(name=name, runs=runs)
    seen: set[tuple] = set()
    rows = []
    totals = {"both": 0, "agreed": 0, "first": 0, "second": 0, "repeated": 0}
    for run in sorted((r for r in runs if r.pk in by_run), key=lambda r: (r.created_at, r.pk)):
        row = {"run": run, "both": 0, "agreed": 0, "first": 0, "second": 0, "repeated": 0}
        for pair_key, winners in by_run[run.pk]:
            position = _position_of(winners)
            if position is None:
                continue
            if pair_key in seen:
                row["repeated"] += 1
                continue
            seen.add(pair_key)
            agreed, first, second = position
            row["both"] += 1
            row["agreed"] += agreed
            row["first"] += first
            row["second"] += second
        row["share"] = row["agreed"] / row["both"] if row["both"] else None
        rows.append(row)
        for key in totals:
            totals[key] += row[key]
    favours = None
    if totals["first"] != totals["second"]:
        favours = "first" if totals["first"] > totals["second"] else "second"
    return {
        "runs": rows[::-1],  # newest first, as the page lists runs
        **totals,
        "share": totals["agreed"] / totals["both"] if totals["both"] else None,
        "favours": favours,
        "distinct": PAIR_KEY_NOTE,
    }


def _accounting_of(kind: str):
    from judgeapp.judging.runkind import RunHandler

    return (_handler(kind) or RunHandler()).unit_accounting()


def _calls(*, name: str, runs: list[Run]) -> dict:
    """Per call of the judge: parse failures, truncations and no-replies counted from every unit it answered in
    these runs — every kind, each as its own report counts it (the agent's unread verdicts too) — and latency
    and tokens of the calls made."""
    finished = Judgment.objects.filter(
        run__in=[r.pk for r in runs], judge__name=name, status__in=[UnitStatus.DONE, UnitStatus.FAILED]
    )
    tally = dict.fromkeys(CATEGORIES, 0)
    by_kind: dict[str, dict[str, int]] = {}
    for kind in sorted({run.kind for run in runs}):
        of_kind = finished.filter(run__in=[r.pk for r in runs if r.kind == kind])
        for category, n in of_kind.annotate(category=_accounting_of(kind)).values("category").annotate(n=Count("id")).values_list(
            "category", "n"
        ):
            tally[category] += n
            by_kind.setdefault(kind, dict.fromkeys(CATEGORIES, 0))[category] += n
    calls = sum(tally.values())
    called = finished.filter(cached=False, latency_ms__gt=0).aggregate(
        mean_latency_ms=Avg("latency_ms"), mean_prompt_tokens=Avg("prompt_tokens"),
        mean_completion_tokens=Avg("completion_tokens"),
        tokens_in=Sum("prompt_tokens"), tokens_out=Sum("completion_tokens"), measured=Count("id"),
    )
    return {
        **tally,
        **called,
        "calls": calls,
        "cached": finished.filter(cached=True).count(),
        "parse_failure_rate": tally["parse_failures"] / calls if calls else None,
        "truncation_rate": tally["truncated"] / calls if calls else None,
        "by_kind": [{"kind": RunKind(kind).label, **counts, "units": sum(counts.values())} for kind, counts in by_kind.items()],
    }


def scorecard_exists_for_judge(*, name: str, version: str) -> bool:
    """A scorecard exists for a configured judge, a configuration some run used, or one people measured (a
    jury's pooled verdict, "jury", is measured but has no Judge row)."""
    return (
        Judge.objects.filter(name=name).exists()
        or version in judge_versions_for_name(name=name)
        or bool(agreement_history_for_judge(judge_name=name, judge_version=version))
    )


def scorecard_get(*, name: str, version: str) -> dict:
    """Everything the scorecard page of one judge configuration shows."""
    level = level_get()
    history = agreement_history_for_judge(judge_name=name, judge_version=version)
    runs = runs_for_judge(name=name, version=version)
    shown = []
    for run in runs[:RUNS_SHOWN]:
        gate = gate_for_run(run=run) if run.kind == RunKind.POINTWISE else None
        shown.append({"run": run, "gate": gate})
    locks = AuditLog.objects.filter(action__in=LOCK_ACTIONS, detail__judge=name, detail__judge_version=version).select_related(
        "run"
    ).order_by("-created_at", "-id")
    return {
        "name": name,
        "version": version,
        "judge": Judge.objects.filter(name=name).first(),
        "status": status_for_scope(judge_name=name, judge_version=version),
        "checkup": checkup_for_judge(judge_name=name, judge_version=version),
        "history": history,
        "trend": _trend(history, level.threshold) if history else None,
        "level": level,
        "position": _position_consistency(name=name, runs=runs),
        "calls": _calls(name=name, runs=runs),
        "noise": _noise_latest(name=name, runs=runs),
        "runs": shown,
        "runs_total": len(runs),
        "locks": locks_for_judge(judge_name=name, judge_version=version),
        "lock_history": list(locks[:50]),
        "versions": judge_versions_for_name(name=name),
        "adopted": adopted_candidate_for_judge(judge_name=name),
        # The latest evidence beside the people: a pass/fail judge's TPR/TNR, the alternative annotator test.
        "latest_result": history[-1]["result"] if history else None,
        "latest_alt_test": alt_test_for_result(history[-1]["result"]) if history else None,
    }


def _noise_latest(*, name: str, runs: list[Run]) -> dict | None:
    """The judge's latest noise figures: of its newest finished run asked with --trials K >= 2 (a juror's own
    figures from a jury's panel), with the run they come from."""
    for run in runs:
        noise = (run.report or {}).get("noise") if run.is_finished else None
        if not noise:
            continue
        figures = (noise.get("per_judge") or {}).get(name) or noise
        return {"run": run, "figures": figures, "line": noise_line(figures)}
    return None


# --- The dashboard: each run's outcome in words ---------------------------------------------------------

def systems_for_run(run: Run) -> list[str]:
    """The systems a run judged: its system under test, or both sides of a pairwise comparison."""
    names = [run.system.name] if run.system_id else []
    for version in (run.options.get("versions") or {}).values():
        if isinstance(version, dict) and version.get("system"):
            names.append(version["system"])
    return names


def _run_judge_status(run: Run, cache: dict) -> dict | None:
    """The calibration status of the judge a run's report stands on, in the configuration, prompt and rubric
    it used."""
    judges = run.config.get("judges") or {}
    if not judges:
        return None
    name = run.judge.name if run.judge_id and run.judge.name in judges else min(judges)
    version = (judges.get(name) or {}).get("version")
    if not version:
        return None
    prompt, rubric = scope_for_run(run=run)
    key = (name, version, prompt, rubric)
    if key not in cache:
        cache[key] = status_for_scope(
            judge_name=name, judge_version=version, prompt_version=prompt, rubric_version=rubric
        )
    return cache[key]


RUNS_PER_PAGE = 50
JUDGED = (RunStatus.DONE, RunStatus.INVALID)


@functools.cache
def _outcome_filters() -> tuple[dict[str, Q], dict[str, Q]]:
    """(read, stored): the stored fields that narrow the runs for an outcome a report or a gate decides,
    read run by run (a pointwise gate moves with the calibration and the leads' decisions, so it is not
    stored); and the filters of the outcomes the stored fields decide alone. From each kind's `outcomes`."""
    handlers = handlers_all()
    with_report = [h.kind for h in handlers if h.outcomes]
    read = {
        key: Q(kind__in=[h.kind for h in handlers if key in h.outcomes], status__in=JUDGED)
        for key in ("passed", "blocked", "winner", "inconclusive")
    }
    stored = {
        "running": ~Q(status__in=FINISHED_RUN_STATUSES),
        "failed": Q(status__in=[RunStatus.FAILED, RunStatus.CANCELLED]) | (
            Q(status=RunStatus.INVALID) & ~Q(kind__in=with_report)
        ),
        "result": Q(kind__in=[h.kind for h in handlers if h.outcomes == ("result",)], status__in=JUDGED)
        | (Q(status=RunStatus.DONE) & ~Q(kind__in=with_report)),
    }
    return read, stored


@dataclass(frozen=True)
class RunFilters:
    """What the runs page and the API's run list filter by (every field optional)."""

    q: str = ""
    kind: str | None = None
    outcome: str | None = None
    system: str | None = None
    testset: str | None = None
    tag: str | None = None
    since: date | None = None
    until: date | None = None  # inclusive: runs created that day count

    @property
    def active(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def runs_for_filters(*, filters: RunFilters) -> QuerySet[Run] | list[Run]:
    """The runs that match, newest first: a query when the stored fields decide, else a list read run by run
    from the newest RUNS_SCANNED that the stored fields let through (the outcomes a report or gate decides)."""
    runs = judging_selectors.run_list_for_search(
        q=filters.q, kind=filters.kind, system=filters.system, testset=filters.testset, tag=filters.tag,
        since=_day_start(filters.since) if filters.since else None,
        until=_day_start(filters.until + timedelta(days=1)) if filters.until else None,
    )
    read, stored = _outcome_filters()
    if filters.outcome in stored:
        return runs.filter(stored[filters.outcome])
    if filters.outcome in read:
        return [run for run in runs.filter(read[filters.outcome])[:RUNS_SCANNED] if run_outcome(run)["key"] == filters.outcome]
    return runs


def run_rows_for_runs(runs) -> list[dict]:
    """The runs page's rows: each run with its outcome, its judge's badge, its systems and its tags."""
    cache: dict = {}
    rows = []
    for run in runs:
        judges = run.config.get("judges") or {}
        rows.append({"run": run, "outcome": run_outcome(run), "systems": systems_for_run(run),
                     "judge_status": _run_judge_status(run, cache), "tags": [tag.name for tag in run.tags.all()],
                     "judge_names": sorted(judges) if not run.judge_id else [run.judge.name]})
    return rows


def run_page_get(*, filters: RunFilters, page: str | int | None = None, per_page: int = RUNS_PER_PAGE) -> dict:
    """One page of the matching runs (a page past the last is the last, a word the first), with its rows."""
    page_obj = Paginator(runs_for_filters(filters=filters), per_page).get_page(page)
    return {"page": page_obj, "rows": run_rows_for_runs(page_obj.object_list)}


def readiness_for_judges(judges, statuses: dict[str, dict], *, checkups: dict[str, dict] | None = None) -> dict[str, dict]:
    """{judge name: {word, tone, problems}}: whether each judge can judge a run now, in one word, and why not."""
    from judgeapp.judging.preflight import endpoint_warnings, is_imported

    readiness = {}
    for judge in judges:
        status = (statuses.get(judge.name) or {}).get("status")
        checkup = (checkups or {}).get(judge.name) or {}
        problems = endpoint_warnings(judge)
        if is_imported(judge):
            word, tone, problems = "imported, no endpoint", "neutral", ["its verdicts were brought in; it cannot judge a new run"]
        elif problems:
            word, tone = "key not set", "bad"
        elif status == "below level — locked":
            word, tone = "locked", "bad"
            problems = ["locked by calibration: its runs cannot pass a gate until it is recalibrated"]
        elif checkup.get("blocks"):
            word, tone = "check-up failed", "bad"
            problems = ["its latest check-up failed: its runs cannot pass a gate until it passes one"]
        elif status == "calibrated":
            word, tone = "ready", "ok"
        else:
            word, tone = "ready, not calibrated" if status == "not calibrated" else f"ready, {status}", "warn"
        readiness[judge.name] = {"word": word, "tone": tone, "problems": problems}
    return readiness


VERDICTS_PER_PAGE = 50
VERDICT_LABELS = (("A", "A"), ("B", "B"), ("tie", "tie"), (None, "none"))


def imported_pairwise_for_run(*, run: Run, page: str | None) -> dict:
    """An imported pairwise run's page: the sign test on its wins, the judge x human-majority confusion
    matrix over the labelled cases, and one page of verdicts beside the people's majority, each a link to
    the judgment that holds both replies."""
    report = run.report or {}
    cases = report.get("cases") or []
    majority = human_majority_for_run(run=run)
    counts: dict[tuple, int] = {}
    for case in cases:
        if case["case_id"] in majority:
            key = (case.get("verdict"), majority[case["case_id"]])
            counts[key] = counts.get(key, 0) + 1
    labelled = sum(counts.values())
    agreed = sum(n for (judge, human), n in counts.items() if judge is not None and judge == human)
    matrix = [
        {"judge": label if value else "no usable verdict",
         "cells": [{"n": counts.get((value, h_value), 0), "agree": value is not None and value == h_value}
                   for h_value, _ in VERDICT_LABELS]}
        for value, label in VERDICT_LABELS
    ]
    page_obj = Paginator(cases, VERDICTS_PER_PAGE).get_page(page)
    ids = [case["case_id"] for case in page_obj.object_list]
    links = dict(Judgment.objects.filter(run=run, case__case_id__in=ids).values_list("case__case_id", "uuid"))
    rows = [{**case, "human": majority.get(case["case_id"], ""), "labelled": case["case_id"] in majority,
             "judgment": links.get(case["case_id"])} for case in page_obj.object_list]
    return {
        "outcome": run_outcome(run),
        "matrix": matrix,
        "human_labels": [label for _, label in VERDICT_LABELS[:-1]] + ["no majority"],
        "labelled": labelled,
        "agreed": agreed,
        "agreement": agreed / labelled if labelled else None,
        "page": page_obj,
        "rows": rows,
    }


def unit_counts_for_run(*, run: Run) -> dict | None:
    """A run's units by state, counted now (the run's own counters move only as units are recorded and its
    total is set when the worker plans it): what the run page shows while it is under way."""
    if run.is_finished:
        return None
    counts = dict(Judgment.objects.filter(run=run).values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    units = {
        state: counts.get(state, 0) for state in (UnitStatus.PENDING, UnitStatus.CLAIMED, UnitStatus.DONE, UnitStatus.FAILED)
    }
    units["total"] = sum(counts.values())
    units["started"] = bool(run.started_at) or units[UnitStatus.CLAIMED] + units[UnitStatus.DONE] + units[UnitStatus.FAILED] > 0
    return units


def people_for_run(*, run: Run) -> dict:
    """What a run's page shows of people's labels as it is now (the report holds it at the run's end), from
    one agreement snapshot: {calibration, agreement_now (a finished pointwise run's), corrected_now (a finished
    run's corrected mean or rate), agreement_snapshot}."""
    if not (run.config.get("judges") or {}):
        return {"calibration": [], "agreement_now": None, "corrected_now": None, "agreement_snapshot": None}
    finished = run.status in (RunStatus.DONE, RunStatus.INVALID)
    reads = agreement_reads_for_run(run=run, corrected=finished)
    return {
        "calibration": reads["calibration"],
        "agreement_now": reads["agreement"] if run.is_finished else None,
        "corrected_now": reads["corrected"],
        "agreement_snapshot": reads["snapshot"],
    }
