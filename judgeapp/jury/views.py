"""The jury in the browser: start a run with a panel (refused with a form error when it breaks the rules),
and read one output with every juror's verdict and reasoning."""

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from judgeapp.judging import selectors
from judgeapp.judging.forms import run_arguments
from judgeapp.judging.pages import HtmxHttpRequest, estimate_answer, preflight_partial, run_form_answer
from judgeapp.jury.forms import JuryForm
from judgeapp.jury.selectors import jury_case_get
from judgeapp.jury.services import jury_run_create
from judgeapp.models import Run, RunKind
from judgeapp.roles import READERS, role_required


@role_required(*READERS)
def jury_new(request: HtmxHttpRequest) -> HttpResponse:
    if (warnings := preflight_partial(request, JuryForm)) is not None:
        return warnings

    def start(data: dict) -> Run:
        return jury_run_create(
            **run_arguments(data, created_by=request.user),
            # In the order the form lists them; the panel's order is the report's column order.
            judges=list(data["judges"]),
            system=data["system"],
            generate=data["generate"],
            outputs=data["outputs"],
            output_set=data["output_set"],
        )

    form = JuryForm(request.POST or None, request.FILES or None)
    context = {"recent": selectors.run_list(kind=RunKind.JURY, limit=10)}
    return run_form_answer(request, form, start=start, template="judgeapp/jury/new.html", context=context, partial="run-form",
                           refused_field=lambda exc: "judges" if str(exc).startswith("jury:") else None)


@require_POST
@role_required(*READERS)
def run_estimate(request: HtmxHttpRequest) -> HttpResponse:
    """The "Estimate" button: every juror's calls, tokens and cost from the form's inputs, no juror asked and
    nothing stored (the form's own checks say what is missing)."""
    context = {"recent": selectors.run_list(kind=RunKind.JURY, limit=10)}
    form = JuryForm(request.POST, request.FILES or None)
    return estimate_answer(request, form, template="judgeapp/jury/new.html", context=context)


@role_required(*READERS)
def jury_case(request: HtmxHttpRequest, run_id: str, case_id: str) -> HttpResponse:
    run = selectors.run_get(run_id=run_id)
    if run.kind != RunKind.JURY:
        return redirect("run_detail", run_id=run.run_id)
    return render(request, "judgeapp/jury/case.html", {"run": run, **jury_case_get(run=run, case_id=case_id)})
