"""The "Check up" button on the judges page: start a check-up of one judge on the workers (Celery)."""

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from judgeapp.checkup.forms import CheckupForm
from judgeapp.checkup.selectors import checkup_judge_get
from judgeapp.checkup.services import checkup_run_create
from judgeapp.judging.errors import InputError
from judgeapp.judging.pages import HtmxHttpRequest, page_redirect, run_started_response
from judgeapp.models import Executor
from judgeapp.roles import READERS, role_required


@require_POST
@role_required(*READERS)
def checkup_start(request: HtmxHttpRequest, judge_name: str) -> HttpResponse:
    judge = checkup_judge_get(name=judge_name)
    if judge is None:
        raise Http404(f"no judge {judge_name!r}")
    form = CheckupForm(request.POST, request.FILES)
    if not form.is_valid():
        errors = "; ".join(e for field_errors in form.errors.values() for e in field_errors)
        messages.error(request, f"Check-up of {judge.name} not started: {errors}")
        return page_redirect(request, reverse("judges"))
    data = form.cleaned_data
    try:
        run = checkup_run_create(
            judge=judge,
            sets=data["sets"] or None,
            sample=data["sample"],
            seed=data["seed"],
            trials=data.get("trials"),
            budget=data.get("budget"),
            own=[data["own_set"]] if data["own_set"] else None,
            executor=Executor.CELERY,
            created_by=request.user,
        )
    except InputError as exc:
        messages.error(request, f"Check-up of {judge.name} not started: {exc}")
        return page_redirect(request, reverse("judges"))
    return run_started_response(request, run)
