"""The release gate of a pointwise run with the leads' decisions, the releases with their audit log and the
lead's release policy, and any two pointwise runs side by side."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from judgeapp.judging import selectors as judging_selectors
from judgeapp.judging.errors import InputError
from judgeapp.judging.pages import HtmxHttpRequest, page_redirect, render_partial
from judgeapp.models import Run, RunKind
from judgeapp.releases import selectors, services
from judgeapp.releases.core import releases_trend
from judgeapp.releases.forms import CompareForm, GateDecisionForm, ReleaseForm, ReleasePolicyForm
from judgeapp.roles import READERS, Role, has_role, role_required


def _gate_run(run_id: str) -> Run:
    run = judging_selectors.run_get(run_id=run_id)
    if run.kind != RunKind.POINTWISE:
        raise Http404("not a pointwise run: the release gate reads pointwise runs")
    return run


def _gate_context(request, run: Run, **forms) -> dict:
    return {
        "run": run,
        "gate": selectors.decided_gate_for_run(run=run),
        "release": selectors.release_for_run(run=run),
        "decisions": selectors.gate_decisions_for_run(run=run),
        "audit": selectors.release_audit_for_run(run=run),
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
            return page_redirect(request, reverse("releases:gate", args=[run.run_id]))
    # A refused form is 400 to a plain post; htmx swaps only 2xx replies, so it gets the page as 200 (the form
    # selects its own card from it).
    status = 200 if request.htmx else 400
    return render(request, "judgeapp/releases/gate.html", _gate_context(request, run, release_form=form), status=status)


def _releases_context(policy_form=None) -> dict:
    rows = selectors.release_overview_list()
    policy = selectors.release_policy_get()
    return {
        "releases": rows,
        "trend": releases_trend(rows),
        "audit": selectors.release_audit_for_run(),
        "runs": selectors.gates_for_runs(runs=judging_selectors.run_list(kind=RunKind.POINTWISE, limit=20)),
        "policy": policy,
        "large_run": judging_selectors.large_run_limits_get(),
        "policy_form": policy_form or ReleasePolicyForm(initial={**policy.as_dict()}),
    }


@role_required(*READERS)
def releases(request: HtmxHttpRequest) -> HttpResponse:
    return render(request, "judgeapp/releases/releases.html", _releases_context())


@require_POST
@role_required(Role.LEAD)
def release_policy_set(request: HtmxHttpRequest) -> HttpResponse:
    form = ReleasePolicyForm(request.POST)
    if form.is_valid():
        try:
            services.release_policy_set(actor=request.user, **form.cleaned_data)
        except (InputError, PermissionDenied) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Release policy saved; it is in the audit log.")
            return redirect("releases:releases")
    return render(request, "judgeapp/releases/releases.html", _releases_context(policy_form=form), status=400)


COMPARED_PER_PAGE = 50


@role_required(*READERS)
def runs_compare(request: HtmxHttpRequest) -> HttpResponse:
    """Two pointwise runs side by side on their shared cases, regressions first (`?run=&baseline=`)."""
    if not request.GET.get("run") and not request.GET.get("baseline"):
        return render(request, "judgeapp/releases/compare.html", {"form": CompareForm()})
    form = CompareForm(request.GET)
    if not form.is_valid():
        return render(request, "judgeapp/releases/compare.html", {"form": form}, status=400)
    run, other, criterion = form.cleaned_data["run"], form.cleaned_data["baseline"], form.cleaned_data["criterion"]
    comparison = selectors.comparison_for_runs(run=run, other=other, criterion=criterion or None)
    if criterion and criterion not in comparison["criteria"]:
        form.add_error("criterion", f"Neither run has a criterion {criterion!r}.")
        return render(request, "judgeapp/releases/compare.html", {"form": form}, status=400)
    page = Paginator(comparison["rows"], COMPARED_PER_PAGE).get_page(request.GET.get("page"))
    shown = [judgment for row in page for judgment in (row["judgment"], row["other_judgment"])]
    reasons = selectors.reasonings_for_judgments(judgment_ids=shown)
    rows = [
        {**row, "reason": reasons.get(row["judgment"] or "", ""), "other_reason": reasons.get(row["other_judgment"] or "", "")}
        for row in page
    ]
    context = {"form": form, "comparison": comparison, "page": page, "rows": rows}
    return render_partial(request, "judgeapp/releases/compare.html", context, partial="compare-rows")
