"""Pairwise A/B in the browser: start a run (it goes to Celery), and read one case side by side."""

from django.http import HttpResponse
from django.shortcuts import redirect, render

from judgeapp.judging import selectors
from judgeapp.judging.errors import InputError
from judgeapp.judging.pages import HtmxHttpRequest, judges_file_notice, preflight_partial, render_partial, run_started_response
from judgeapp.models import Executor, RunKind
from judgeapp.pairwise.forms import PairwiseForm
from judgeapp.pairwise.selectors import pairwise_case_get
from judgeapp.pairwise.services import pairwise_run_create
from judgeapp.roles import READERS, role_required


@role_required(*READERS)
def pairwise_new(request: HtmxHttpRequest) -> HttpResponse:
    if (warnings := preflight_partial(request, PairwiseForm)) is not None:
        return warnings
    form = PairwiseForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = pairwise_run_create(
                testset=data["testset_input"],
                rubric=data["rubric_input"],
                judge=data["judge"],
                version_a=data["version_a"],
                version_b=data["version_b"],
                sample=data["sample"],
                seed=data["seed"],
                trials=data.get("trials"),
                run_id=data["run_id"] or None,
                title=data["title"],
                executor=Executor.CELERY,
                created_by=request.user,
            )
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            return run_started_response(request, run)
    judges_file_notice(request)
    context = {"form": form, "recent": selectors.runs_recent(kind=RunKind.PAIRWISE, limit=10)}
    # A refused form is 400 to a plain post; htmx swaps only 2xx replies, so it gets its partial as 200.
    status = 400 if form.errors and not request.htmx else 200
    return render_partial(request, "judgeapp/pairwise/new.html", context, partial="run-form", status=status)


@role_required(*READERS)
def pairwise_case(request: HtmxHttpRequest, run_id: str, case_id: str) -> HttpResponse:
    run = selectors.run_get(run_id=run_id)
    if run.kind != RunKind.PAIRWISE:
        return redirect("run_detail", run_id=run.run_id)
    return render(request, "judgeapp/pairwise/case.html", {"run": run, **pairwise_case_get(run=run, case_id=case_id)})
