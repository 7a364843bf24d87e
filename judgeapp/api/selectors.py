"""Reads of the API: a user's tokens, runs by system, stored test sets and rubrics by version, and what a
run's status, report and gate say now."""

from __future__ import annotations

import re
from dataclasses import replace

from django.db.models import QuerySet
from django.http import Http404

from calibration.selectors.agreement import agreement_reads_for_run
from judgeapp.judging.errors import InputError
from judgeapp.judging.selectors import report_for_unfinished_run
from judgeapp.models import ApiToken, Rubric, Run, RunKind, RunStatus, System, TestSet
from judgeapp.pointwise.services import report_current
from judgeapp.releases.selectors import decided_gate_for_run
from judgeapp.web.selectors import RunFilters, runs_for_filters

RUNS_LIMIT_MAX = 200
OFFSET_MAX = 1_000_000
VERSION_PATTERN = re.compile(r"^(?:(?P<name>.+)@)?(?P<hash>[0-9a-f]{6,64})$")


def token_list_for_user(*, user) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-id")


def token_for_user(*, user, uuid) -> ApiToken:
    token = ApiToken.objects.select_related("user").filter(user=user, uuid=uuid).first()
    if token is None:
        raise Http404("no such token")
    return token


def token_for_prefix(*, prefix: str) -> ApiToken | None:
    """A token by its public prefix, as `api-token list` shows it (`ja_<prefix>_…` or the bare prefix)."""
    prefix = prefix.strip().removeprefix("ja_").removesuffix("_…").removesuffix("_")
    return ApiToken.objects.select_related("user").filter(prefix=prefix).first()


def token_list(*, username: str | None = None) -> QuerySet[ApiToken]:
    tokens = ApiToken.objects.select_related("user")
    if username:
        tokens = tokens.filter(user__username=username)
    return tokens.order_by("user__username", "-created_at")


# --- Runs --------------------------------------------------------------------------------------------


def run_get(*, run_id: str) -> Run:
    run = Run.objects.select_related("judge", "system", "testset", "rubric", "created_by").filter(run_id=run_id).first()
    if run is None:
        raise Http404(f"no run {run_id!r}")
    return run


def pointwise_run_get(*, run_id: str) -> Run:
    run = run_get(run_id=run_id)
    if run.kind != RunKind.POINTWISE:
        raise Http404(f"run {run_id} is a {run.get_kind_display()} run; the release gate and its summary are a pointwise run's")
    return run


def system_get(*, name: str) -> System:
    system = System.objects.filter(name=name).first()
    if system is None:
        raise Http404(f"no system {name!r}")
    return system


def run_list_for_filters(
    *, system: System | None = None, kind: str | None = None, status: str | None = None, filters: RunFilters | None = None
):
    """Runs newest first, matching the runs page's filters (`web/selectors.py: runs_for_filters`, the same
    search, outcome and tag) and, besides, one system's runs and a status. A query, or a list when the outcome
    is one a report or a gate decides."""
    filters = filters or RunFilters()
    if system is not None:
        filters = replace(filters, system=system.name)
    if kind:
        filters = replace(filters, kind=kind)
    runs = runs_for_filters(filters=filters)
    if status:
        runs = runs.filter(status=status) if hasattr(runs, "filter") else [run for run in runs if run.status == status]
    return runs


CORRECTED_RATE_KEYS = {RunKind.JURY: "corrected_pass_rate", RunKind.PAIRWISE: "corrected_win_rate"}


def report_get(*, run: Run) -> dict:
    """The run's report (CONTRACT §4); a pointwise run's with its gate and agreement as they are now. A run
    without one (not finished, failed, cancelled) has its id, kind, status, reason and counts."""
    if run.kind == RunKind.POINTWISE:
        return report_current(run=run)
    if not run.report:
        return report_for_unfinished_run(run=run)
    report = dict(run.report)
    corrected_key = CORRECTED_RATE_KEYS.get(run.kind)
    if corrected_key and run.report and run.status in (RunStatus.DONE, RunStatus.INVALID):
        # As the run page: from the agreement as it is now (a sample is drawn from a finished run), the
        # statuses beside it from the same snapshot.
        reads = agreement_reads_for_run(run=run)
        report[corrected_key] = reads["corrected"]
        report["calibration"] = reads["calibration"]
        report["agreement_snapshot"] = reads["snapshot"]
    report["status"] = run.status
    if run.error:
        report["error"] = run.error
    return report


def gate_get(*, run: Run) -> dict:
    """The release gate, with the run it is about: `passed`, the reasons, the calibration lock. For a released
    run, the gate as it was decided when it was released, with `now` apart (releases.selectors.decided_gate_for_run)."""
    gate = decided_gate_for_run(run=run)
    return {
        "run_id": run.run_id,
        "status": run.status,
        "finished": run.is_finished,
        "mean": (run.report or {}).get("mean"),
        **gate,
    }


# --- Stored versions ---------------------------------------------------------------------------------


def _stored_version(model, reference: str, what: str):
    """A stored test set or rubric by its content hash: the whole sha256, its first 6 or more hex digits
    (the 12 that reports show), optionally after `name@`."""
    match = VERSION_PATTERN.match((reference or "").strip().lower()) if reference else None
    if match is None and reference and model.objects.filter(name=reference.strip().split("@v")[0]).exists():
        from judgeapp.judging.content import stored_by_name

        return stored_by_name(model, reference, what)  # a stored name: NAME (its newest) or NAME@v2
    if match is None:
        raise InputError(
            f"{what} version {reference!r}: give its content hash (12 hex digits or more), NAME@HASH, or a stored name"
        )
    rows = model.objects.filter(content_hash__startswith=match["hash"])
    if match["name"]:
        rows = rows.filter(name=reference.strip().rsplit("@", 1)[0])
    found = list(rows.order_by("-created_at")[:2])
    if not found:
        raise InputError(f"{what} version {reference!r}: no stored {what} has that content hash")
    if len(found) > 1:
        names = ", ".join(str(r) for r in found)
        raise InputError(f"{what} version {reference!r} is ambiguous ({names}); give more digits or NAME@HASH")
    return found[0]


def testset_for_reference(*, reference: str) -> TestSet:
    return _stored_version(TestSet, reference, "test set")


def rubric_for_reference(*, reference: str) -> Rubric:
    return _stored_version(Rubric, reference, "rubric")


def testset_list(*, limit: int = 100, offset: int = 0) -> QuerySet[TestSet]:
    return TestSet.objects.order_by("-created_at", "-id")[offset : offset + limit]


def rubric_list(*, limit: int = 100, offset: int = 0) -> QuerySet[Rubric]:
    return Rubric.objects.order_by("-created_at", "-id")[offset : offset + limit]
