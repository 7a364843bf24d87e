"""The release gate of a pointwise run with the leads' decisions, and the releases with their audit log."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from judgeapp.judging import selectors as judging_selectors
from judgeapp.judging.errors import InputError
from judgeapp.judging.pages import HtmxHttpRequest, render_partial
from judgeapp.models import Run, RunKind
from judgeapp.releases import selectors, services
from judgeapp.releases.forms import GateDecisionForm, ReleaseForm
from judgeapp.roles import READERS, Role, has_role, role_required


def _gate_run(run_id: str) -> Run:
    run = judging_selectors.run_get(run_id=run_id)
    if run.kind != RunKind.POINTWISE:
        raise Http404("not a pointwise run: the release gate reads pointwise runs")
    return run


def _gate_context(request, run: Run, **forms) -> dict:
    return {
        "run": run,
        "gate": selectors.gate_evaluate(run=run),
        "release": selectors.release_of_run(run=run),
        "decisions": selectors.gate_decisions_of(run=run),
        "audit": selectors.audit_release_entries(run=run),
        "can_decide": has_role(request.user, Role.LEAD),
        "decision_form": forms.get("decision_form") or GateDecisionForm(),
        "release_form": forms.get("release_form") or ReleaseForm(),
    }


@role_required(*READERS)
def gate(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """The release gate, computed now; leads approve or block it and mark the run released."""
    run = _gate_run(run_id)
    return render_partial(request, "judgeapp/releases/gate.html", _gate_context(request, run), partial="gate-panel")


@require_POST
@role_required(Role.LEAD)
def gate_decide(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = _gate_run(run_id)
    form = GateDecisionForm(request.POST)
    if form.is_valid():
        try:
            decision = services.gate_decide(
                run=run, actor=request.user, verdict=form.cleaned_data["verdict"], reason=form.cleaned_data["reason"]
            )
        except (InputError, PermissionDenied) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Release of {run.run_id} {decision.verdict}; the decision is in the audit log.")
            return redirect("releases:gate", run_id=run.run_id)
    return render(request, "judgeapp/releases/gate.html", _gate_context(request, run, decision_form=form), status=400)


@require_POST
@role_required(Role.LEAD)
def release_mark(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = _gate_run(run_id)
    form = ReleaseForm(request.POST)
    if form.is_valid():
        try:
            release = services.release_mark(
                run=run, actor=request.user, label=form.cleaned_data["label"], note=form.cleaned_data["note"]
            )
        except (InputError, PermissionDenied) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{release.system.name} released from run {run.run_id} (mean {release.mean:.3f}).")
            return redirect("releases:gate", run_id=run.run_id)
    return render(request, "judgeapp/releases/gate.html", _gate_context(request, run, release_form=form), status=400)


@role_required(*READERS)
def releases(request: HtmxHttpRequest) -> HttpResponse:
    rows = selectors.releases_overview()
    context = {
        "releases": rows,
        "trend": selectors.releases_trend(rows),
        "audit": selectors.audit_release_entries(),
        "runs": selectors.runs_with_gate(runs=judging_selectors.runs_recent(kind=RunKind.POINTWISE, limit=20)),
    }
    return render(request, "judgeapp/releases/releases.html", context)
