"""Pointwise pages: start an evaluation (upload or pick from evals/), the run's judgments, its exports,
the release gate with the leads' decisions, and the releases with their audit log.

The run's report itself is the run page (run_detail) with `templates/judgeapp/pointwise/run.html`.
"""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from judgeapp.judging import selectors
from judgeapp.releases import selectors as selectors_releases
from judgeapp.judging.atomic import json_text
from judgeapp.judging.errors import InputError
from judgeapp.pointwise.forms import GateDecisionForm, PointwiseForm, ReleaseForm
from judgeapp.models import Executor, Purpose, Run, RunKind, UnitStatus
from judgeapp.roles import READERS, Role, has_role, role_required
from judgeapp.pointwise import services as pointwise_services
from judgeapp.releases import services as release_services
from judgeapp.web.views import HtmxHttpRequest, judges_sync_shown

JUDGMENTS_PER_PAGE = 50


def _pointwise_run(run_id: str) -> Run:
    run = selectors.run_get(run_id=run_id)
    if run.kind != RunKind.POINTWISE:
        raise Http404("not a pointwise run")
    return run


@role_required(*READERS)
def evaluation_new(request: HtmxHttpRequest) -> HttpResponse:
    judges_sync_shown(request)
    form = PointwiseForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = pointwise_services.pointwise_create(
                testset=data["testset"],
                rubric=data["rubric"],
                judge=data["judge"],
                system=data["system"],
                generate=data["generate"],
                threshold=data["threshold"],
                baseline_mean=data["baseline_mean"],
                baseline_run=data["baseline_run"] or None,
                executor=Executor.CELERY,
                title=data["title"],
                created_by=request.user,
            )
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Run {run.run_id} queued: {run.testset.case_count} cases × {run.rubric.criteria.count()} criteria.")
            return redirect("run_detail", run_id=run.run_id)
    return render(request, "judgeapp/pointwise/new.html", {"form": form}, status=400 if form.errors else 200)


@role_required(*READERS)
def judgments(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """Every judge verdict of a run, filtered by criterion, score or status, a page at a time."""
    run = _pointwise_run(run_id)
    units = (
        run.judgments.filter(purpose=Purpose.JUDGE)
        .select_related("case", "criterion")
        .only("uuid", "key", "status", "parsed", "parse_error", "error", "attempts", "parse_attempts", "cached",
              "case__case_id", "case__position", "criterion__name", "criterion__position")
        .order_by("case__position", "criterion__position")
    )
    criterion = request.GET.get("criterion") or ""
    score = request.GET.get("score") or ""
    status = request.GET.get("status") or ""
    if criterion:
        units = units.filter(criterion__name=criterion)
    if score.isdigit():
        units = units.filter(status=UnitStatus.DONE, parsed__score=int(score))
    if status in (UnitStatus.DONE, UnitStatus.FAILED):
        units = units.filter(status=status)
    page = Paginator(units, JUDGMENTS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "run": run,
        "page": page,
        "criteria": list(run.rubric.criteria.values_list("name", flat=True)) if run.rubric_id else [],
        "filters": {"criterion": criterion, "score": score, "status": status},
        "scores": [str(point) for point in (run.report or {}).get("histogram", {})] or ["1", "2", "3", "4", "5"],
    }
    template = "judgeapp/pointwise/judgments.html"
    return render(request, f"{template}#judgment-list" if request.htmx else template, context)


@role_required(*READERS)
def export(request: HtmxHttpRequest, run_id: str, fmt: str) -> HttpResponse:
    run = _pointwise_run(run_id)
    if fmt == "csv":
        body, content_type = pointwise_services.judgments_csv(run=run), "text/csv; charset=utf-8"
    elif fmt == "md":
        body, content_type = pointwise_services.report_markdown_of(run=run), "text/markdown; charset=utf-8"
    elif fmt == "json":
        body, content_type = json_text(pointwise_services.report_current(run=run)), "application/json"
    else:
        raise Http404
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{run.run_id}.{fmt}"'
    return response


def _gate_context(request, run: Run, **forms) -> dict:
    return {
        "run": run,
        "gate": selectors_releases.gate_evaluate(run=run),
        "release": selectors_releases.release_of_run(run=run),
        "decisions": selectors_releases.gate_decisions_of(run=run),
        "audit": selectors_releases.audit_release_entries(run=run),
        "can_decide": has_role(request.user, Role.LEAD),
        "decision_form": forms.get("decision_form") or GateDecisionForm(),
        "release_form": forms.get("release_form") or ReleaseForm(),
    }


@role_required(*READERS)
def gate(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """The release gate, computed now; leads approve or block it and mark the run released."""
    run = _pointwise_run(run_id)
    template = "judgeapp/releases/gate.html"
    if request.htmx:
        template += "#gate-panel"
    return render(request, template, _gate_context(request, run))


@require_POST
@role_required(Role.LEAD)
def gate_decide(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = _pointwise_run(run_id)
    form = GateDecisionForm(request.POST)
    if form.is_valid():
        try:
            decision = release_services.gate_decide(
                run=run, actor=request.user, verdict=form.cleaned_data["verdict"], reason=form.cleaned_data["reason"]
            )
        except (InputError, PermissionDenied) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Release of {run.run_id} {decision.verdict}; the decision is in the audit log.")
            return redirect("pointwise:gate", run_id=run.run_id)
    return render(request, "judgeapp/releases/gate.html", _gate_context(request, run, decision_form=form), status=400)


@require_POST
@role_required(Role.LEAD)
def release_mark(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = _pointwise_run(run_id)
    form = ReleaseForm(request.POST)
    if form.is_valid():
        try:
            release = release_services.release_mark(
                run=run, actor=request.user, label=form.cleaned_data["label"], note=form.cleaned_data["note"]
            )
        except (InputError, PermissionDenied) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{release.system.name} released from run {run.run_id} (mean {release.mean:.3f}).")
            return redirect("pointwise:gate", run_id=run.run_id)
    return render(request, "judgeapp/releases/gate.html", _gate_context(request, run, release_form=form), status=400)


@role_required(*READERS)
def releases(request: HtmxHttpRequest) -> HttpResponse:
    context = {
        "releases": selectors_releases.releases_recent(),
        "audit": selectors_releases.audit_release_entries(),
        "runs": selectors.runs_recent(kind=RunKind.POINTWISE, limit=20),
    }
    return render(request, "judgeapp/releases/releases.html", context)
