"""Pairwise A/B in the browser: start a run (it goes to Celery), and read one case side by side."""

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from judgeapp.judging import selectors
from judgeapp.judging.forms import run_arguments
from judgeapp.judging.pages import HtmxHttpRequest, estimate_answer, preflight_partial, run_form_answer
from judgeapp.models import Run, RunKind
from judgeapp.pairwise.forms import PairwiseForm
from judgeapp.pairwise.selectors import pairwise_case_get
from judgeapp.pairwise.services import pairwise_run_create
from judgeapp.roles import READERS, role_required


@role_required(*READERS)
def pairwise_new(request: HtmxHttpRequest) -> HttpResponse:
    if (warnings := preflight_partial(request, PairwiseForm)) is not None:
        return warnings

    def start(data: dict) -> Run:
        return pairwise_run_create(
            **run_arguments(data, created_by=request.user),
            judge=data["judge"],
            version_a=data["version_a"],
            version_b=data["version_b"],
            sample=data["sample"],
            seed=data["seed"],
        )

    form = PairwiseForm(request.POST or None, request.FILES or None)
    context = {"recent": selectors.run_list(kind=RunKind.PAIRWISE, limit=10)}
    return run_form_answer(request, form, start=start, template="judgeapp/pairwise/new.html", context=context, partial="run-form")


@require_POST
@role_required(*READERS)
def run_estimate(request: HtmxHttpRequest) -> HttpResponse:
    """The "Estimate" button: the comparison's judge calls, tokens and cost from the form's inputs, no judge
    asked and nothing stored (the form's own checks say what is missing)."""
    context = {"recent": selectors.run_list(kind=RunKind.PAIRWISE, limit=10)}
    return estimate_answer(request, PairwiseForm(request.POST, request.FILES or None), template="judgeapp/pairwise/new.html",
                           context=context)


@role_required(*READERS)
def pairwise_case(request: HtmxHttpRequest, run_id: str, case_id: str) -> HttpResponse:
    run = selectors.run_get(run_id=run_id)
    if run.kind != RunKind.PAIRWISE:
        return redirect("run_detail", run_id=run.run_id)
    return render(request, "judgeapp/pairwise/case.html", {"run": run, **pairwise_case_get(run=run, case_id=case_id)})
