"""Pairwise A/B in the browser: start a run (it goes to Celery), and read one case side by side."""

from django import forms
from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django_htmx.http import HttpResponseClientRedirect

from judgeapp.judging import selectors
from judgeapp.judging.errors import InputError
from judgeapp.models import Executor, Judge, Rubric, RunKind, System, TestSet
from judgeapp.roles import READERS, role_required
from judgeapp.pairwise.selectors import pairwise_case_get
from judgeapp.pairwise.services import FileInput, VersionSource, pairwise_run_create
from judgeapp.judging.runs import run_enqueue

from judgeapp.web.views import HtmxHttpRequest, judges_sync_shown


class VersionedChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj):
        count = f", {obj.case_count} cases" if isinstance(obj, TestSet) else ""
        return f"{obj.name} (v{obj.version}{count})"


class EndpointChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj):
        demo = ", scripted demo" if obj.scripted_demo else ""
        return f"{obj.name} ({obj.model}, {obj.effective_family}{demo})"


def upload_of(upload) -> FileInput | None:
    if upload is None:
        return None
    if upload.size > settings.UPLOAD_MAX_BYTES:
        raise forms.ValidationError(f"{upload.name}: {upload.size:,} bytes is over the limit of {settings.UPLOAD_MAX_BYTES:,}")
    return FileInput(data=upload.read(), name=upload.name)


class InputsForm(forms.Form):
    """A stored test set and rubric, or uploaded ones (exactly one of each)."""

    title = forms.CharField(required=False, max_length=300)
    run_id = forms.CharField(required=False, max_length=100, label="Run id", help_text="Optional; default <utc>_<short-uuid>.")
    testset = VersionedChoiceField(queryset=TestSet.objects.order_by("-created_at"), required=False, label="Test set")
    testset_file = forms.FileField(required=False, label="…or upload a test set", help_text="JSONL or CSV: id, input (output optional).")
    rubric = VersionedChoiceField(queryset=Rubric.objects.order_by("-created_at"), required=False)
    rubric_file = forms.FileField(required=False, label="…or upload a rubric", help_text="TOML or JSON.")

    def _one_of(self, cleaned, stored: str, upload: str, what: str):
        if bool(cleaned.get(stored)) == bool(cleaned.get(upload)):
            self.add_error(stored, f"Choose a stored {what} or upload one (not both).")
            return None
        try:
            return cleaned.get(stored) or upload_of(cleaned.get(upload))
        except forms.ValidationError as exc:
            self.add_error(upload, exc)
            return None

    def clean(self):
        cleaned = super().clean()
        cleaned["testset_input"] = self._one_of(cleaned, "testset", "testset_file", "test set")
        cleaned["rubric_input"] = self._one_of(cleaned, "rubric", "rubric_file", "rubric")
        return cleaned


class PairwiseForm(InputsForm):
    judge = EndpointChoiceField(queryset=Judge.objects.order_by("name"))
    system_a = EndpointChoiceField(queryset=System.objects.order_by("name"), required=False, label="Version A: a system generates its replies")
    a_file = forms.FileField(required=False, label="…or version A's outputs", help_text="JSONL {id, output}.")
    system_b = EndpointChoiceField(queryset=System.objects.order_by("name"), required=False, label="Version B: a system generates its replies")
    b_file = forms.FileField(required=False, label="…or version B's outputs", help_text="JSONL {id, output}.")
    sample = forms.IntegerField(required=False, min_value=1, help_text="Compare only this many cases, drawn with the seed.")
    seed = forms.IntegerField(required=False, initial=0, help_text="Same seed, same cases: both versions see identical inputs.")

    field_order = ["title", "testset", "testset_file", "rubric", "rubric_file", "judge", "system_a", "a_file",
                   "system_b", "b_file", "sample", "seed", "run_id"]

    def clean(self):
        cleaned = super().clean()
        for slot in ("a", "b"):
            system, upload = cleaned.get(f"system_{slot}"), cleaned.get(f"{slot}_file")
            if bool(system) == bool(upload):
                self.add_error(f"system_{slot}", f"Version {slot.upper()}: choose a system or upload its outputs (not both).")
                continue
            try:
                cleaned[f"version_{slot}"] = VersionSource(system=system, outputs=upload_of(upload))
            except forms.ValidationError as exc:
                self.add_error(f"{slot}_file", exc)
        if cleaned.get("sample") is None:
            cleaned["seed"] = None
        return cleaned


def start_run_response(request: HtmxHttpRequest, run) -> HttpResponse:
    run_enqueue(run=run)
    url = reverse("run_detail", args=[run.run_id])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@role_required(*READERS)
def pairwise_new(request: HtmxHttpRequest) -> HttpResponse:
    judges_sync_shown(request)
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
                run_id=data["run_id"] or None,
                title=data["title"],
                executor=Executor.CELERY,
                created_by=request.user,
            )
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            return start_run_response(request, run)
    template = "judgeapp/pairwise/new.html#run-form" if request.htmx else "judgeapp/pairwise/new.html"
    return render(request, template, {"form": form, "recent": selectors.runs_recent(kind=RunKind.PAIRWISE, limit=10)})


@role_required(*READERS)
def pairwise_case(request: HtmxHttpRequest, run_id: str, case_id: str) -> HttpResponse:
    run = selectors.run_get(run_id=run_id)
    if run.kind != RunKind.PAIRWISE:
        return redirect("run_detail", run_id=run.run_id)
    return render(request, "judgeapp/pairwise/case.html", {"run": run, **pairwise_case_get(run=run, case_id=case_id)})


app_name = "pairwise"
urlpatterns = [
    path("new/", pairwise_new, name="new"),
    path("runs/<str:run_id>/cases/<str:case_id>/", pairwise_case, name="case"),
]
