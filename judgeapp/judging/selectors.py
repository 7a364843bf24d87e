"""Reads. Other apps (calibration) read judgeapp's data through these functions only."""

from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from judgeapp.models import AuditLog, Case, Criterion, Judge, Judgment, Output, Run, RunStatus, System


def runs_recent(*, kind: str | None = None, limit: int = 50) -> QuerySet[Run]:
    runs = Run.objects.select_related("judge", "system", "created_by")
    if kind:
        runs = runs.filter(kind=kind)
    return runs.order_by("-created_at")[:limit]


def run_get(*, run_id: str) -> Run:
    return get_object_or_404(Run.objects.select_related("judge", "system", "testset", "rubric", "prompt"), run_id=run_id)


def run_find(*, run_id: str) -> Run | None:
    return Run.objects.select_related("judge", "system", "testset", "rubric", "prompt").filter(run_id=run_id).first()


def judgments_of(*, run: Run) -> QuerySet[Judgment]:
    return run.judgments.select_related("case", "criterion", "judge", "system").order_by("stage", "id")


def endpoints_all() -> tuple[QuerySet[Judge], QuerySet[System]]:
    return Judge.objects.order_by("name"), System.objects.order_by("name")


def run_outputs(*, run: Run) -> QuerySet[Output]:
    """The replies a run judged, beside their inputs: slot '' (pointwise, jury) or 'A'/'B' (pairwise)."""
    return run.outputs.select_related("case").order_by("case__position", "slot")


def run_verdicts(*, run: Run):
    """Every judge verdict of a finished run (judgeapp.judging.runkind.Verdict), for calibration."""
    from judgeapp.judging.runkind import Verdict, handler_for

    imported = run.config.get("imported")
    if imported:
        # A run judged elsewhere (PandaLM's GPT-3.5 verdicts): its verdicts are the ones in its report.
        return [
            Verdict(case_id=c["case_id"], criterion="", judge=imported["judge"], value=c["verdict"])
            for c in (run.report or {}).get("cases", [])
            if c.get("verdict") is not None
        ]
    return handler_for(run.kind).verdicts(run)


def run_label_kind(*, run: Run) -> str | None:
    from judgeapp.judging.runkind import handler_for

    imported = run.config.get("imported")
    if imported:
        return imported["label_kind"]
    try:
        return handler_for(run.kind).label_kind
    except LookupError:  # a kind with no handler in this build labels nothing
        return None


def run_criteria(*, run: Run) -> list[Criterion]:
    """The rubric criteria a run judged on, in rubric order (empty for a run without a rubric)."""
    return list(run.rubric.criteria.order_by("position")) if run.rubric_id else []


def runs_finished(*, kinds: list[str] | None = None, limit: int = 200) -> QuerySet[Run]:
    """Finished runs with a report, newest first (the runs a calibration sample can be drawn from)."""
    runs = Run.objects.filter(status__in=[RunStatus.DONE, RunStatus.INVALID]).select_related("judge", "system")
    if kinds is not None:
        runs = runs.filter(kind__in=kinds)
    return runs.order_by("-created_at")[:limit]


def audit_recent(*, action_prefix: str = "", limit: int = 20) -> QuerySet[AuditLog]:
    """The latest audit entries, optionally of one family of actions ("calibration.")."""
    entries = AuditLog.objects.select_related("actor", "run")
    if action_prefix:
        entries = entries.filter(action__startswith=action_prefix)
    return entries.order_by("-created_at", "-id")[:limit]


def case_of_run(run: Run, case_id: str) -> Case:
    """A case of the run's test set by its id; 404 when the test set has none."""
    case = Case.objects.filter(testset_id=run.testset_id, case_id=case_id).first()
    if case is None:
        raise Http404(f"no case {case_id!r} in run {run.run_id}")
    return case


def report_neighbours(report: dict | None, case_id: str) -> tuple[str | None, str | None]:
    """The case ids before and after `case_id` in the report's case list (the page's previous / next)."""
    ids = [c["case_id"] for c in (report or {}).get("cases", [])]
    if case_id not in ids:
        return None, None
    i = ids.index(case_id)
    return (ids[i - 1] if i > 0 else None), (ids[i + 1] if i + 1 < len(ids) else None)


def run_reasonings(*, run: Run) -> dict[tuple[str, str], str]:
    """{(case id, criterion name or ""): the judge's reasoning} of a run's scored judgments."""
    rows = run.judgments.filter(purpose="judge", status="done").values_list("case__case_id", "criterion__name", "parsed")
    return {(case_id, criterion or ""): (parsed or {}).get("reasoning", "") for case_id, criterion, parsed in rows}
