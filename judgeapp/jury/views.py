"""The jury in the browser: start a run with a panel (refused with a form error when it breaks the rules),
and read one output with every juror's verdict and reasoning."""

from django import forms
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path

from judgeapp.judging import selectors
from judgeapp.judging.errors import InputError
from judgeapp.models import Executor, Judge, RunKind, System
from judgeapp.roles import READERS, role_required
from judgeapp.pairwise.selectors import jury_case_get
from judgeapp.jury.services import jury_run_create

from judgeapp.pairwise.views import EndpointChoiceField, InputsForm, start_run_response
from judgeapp.web.views import HtmxHttpRequest, judges_sync_shown


class PanelField(forms.ModelMultipleChoiceField):
    widget = forms.CheckboxSelectMultiple

    def label_from_instance(self, obj):
        demo = ", scripted demo" if obj.scripted_demo else ""
        return f"{obj.name} ({obj.model}, {obj.effective_family} family{demo})"


class JuryForm(InputsForm):
    judges = PanelField(
        queryset=Judge.objects.order_by("name"),
        help_text="Three or more, an odd number, each of a different model family and none of the system's.",
    )
    system = EndpointChoiceField(
        queryset=System.objects.order_by("name"), required=False, label="System under test",
        help_text="No juror may share its family. Without it, the report says the rule was not checked.",
    )
    generate = forms.BooleanField(required=False, label="Have the system answer the test set (instead of its output column)")

    field_order = ["title", "testset", "testset_file", "rubric", "rubric_file", "judges", "system", "generate", "run_id"]


@role_required(*READERS)
def jury_new(request: HtmxHttpRequest) -> HttpResponse:
    judges_sync_shown(request)
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
                run_id=data["run_id"] or None,
                title=data["title"],
                executor=Executor.CELERY,
                created_by=request.user,
            )
        except InputError as exc:
            form.add_error("judges" if str(exc).startswith("jury:") else None, str(exc))
        else:
            return start_run_response(request, run)
    template = "judgeapp/jury/new.html#run-form" if request.htmx else "judgeapp/jury/new.html"
    return render(request, template, {"form": form, "recent": selectors.runs_recent(kind=RunKind.JURY, limit=10)})


@role_required(*READERS)
def jury_case(request: HtmxHttpRequest, run_id: str, case_id: str) -> HttpResponse:
    run = selectors.run_get(run_id=run_id)
    if run.kind != RunKind.JURY:
        return redirect("run_detail", run_id=run.run_id)
    return render(request, "judgeapp/jury/case.html", {"run": run, **jury_case_get(run=run, case_id=case_id)})


app_name = "jury"
urlpatterns = [
    path("new/", jury_new, name="new"),
    path("runs/<str:run_id>/cases/<str:case_id>/", jury_case, name="case"),
]
