"""The jury in the browser: start a run with a panel (refused with a form error when it breaks the rules),
and read one output with every juror's verdict and reasoning."""

from django.http import HttpResponse
from django.shortcuts import redirect, render

from judgeapp.judging import selectors
from judgeapp.judging.errors import InputError
from judgeapp.judging.pages import HtmxHttpRequest, judges_file_notice, preflight_partial, render_partial, run_started_response
from judgeapp.jury.forms import JuryForm
from judgeapp.jury.selectors import jury_case_get
from judgeapp.jury.services import jury_run_create
from judgeapp.models import Executor, RunKind
from judgeapp.roles import READERS, role_required


@role_required(*READERS)
def jury_new(request: HtmxHttpRequest) -> HttpResponse:
    if (warnings := preflight_partial(request, JuryForm)) is not None:
        return warnings
    form = JuryForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = jury_run_create(
                testset=data["testset_input"],
                rubric=data["rubric_input"],
                # In the order the form lists them; the panel's order is the report's column order.
                judges=list(data["judges"]),
                system=data["system"],
                generate=data["generate"],
                trials=data.get("trials"),
                run_id=data["run_id"] or None,
                title=data["title"],
                executor=Executor.CELERY,
                created_by=request.user,
            )
        except InputError as exc:
            form.add_error("judges" if str(exc).startswith("jury:") else None, str(exc))
        else:
            return run_started_response(request, run)
    judges_file_notice(request)
    context = {"form": form, "recent": selectors.runs_recent(kind=RunKind.JURY, limit=10)}
    # A refused form is 400 to a plain post; htmx swaps only 2xx replies, so it gets its partial as 200.
    status = 400 if form.errors and not request.htmx else 200
    return render_partial(request, "judgeapp/jury/new.html", context, partial="run-form", status=status)


@role_required(*READERS)
def jury_case(request: HtmxHttpRequest, run_id: str, case_id: str) -> HttpResponse:
    run = selectors.run_get(run_id=run_id)
    if run.kind != RunKind.JURY:
        return redirect("run_detail", run_id=run.run_id)
    return render(request, "judgeapp/jury/case.html", {"run": run, **jury_case_get(run=run, case_id=case_id)})
