"""Agent-as-a-Judge in the browser: upload a workspace, its trace and the checklist, start the run, watch
each requirement resolve, open a requirement's transcript, download the report."""

from django import forms
from django.conf import settings
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django_htmx.http import HttpResponseStopPolling

from judgeapp.judging import selectors
from judgeapp.agent.core import parse_requirements, parse_task, parse_trace
from judgeapp.judging.errors import InputError
from judgeapp.models import Judge, Judgment, RunKind
from judgeapp.roles import READERS, role_required
from judgeapp.agent import services as agent_services
from judgeapp.judging.runs import run_enqueue
from judgeapp.web.views import HtmxHttpRequest

app_name = "agent"


class AgentRunForm(forms.Form):
    task = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}), help_text="What the agent was asked to do.")
    task_file = forms.FileField(required=False, help_text="…or a task file (text, Markdown, or a DevAI task JSON).")
    requirements = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "placeholder": "1. saves the plot to out/accuracy.png\n2. writes the metrics to out/metrics.json"}),
        help_text="A numbered checklist, one requirement a line, each specific enough to check.",
    )
    requirements_file = forms.FileField(required=False, help_text="…or a checklist file (numbered lines, JSON/JSONL, or a DevAI task JSON).")
    workspace = forms.FileField(help_text="The agent's final workspace as an archive: .zip, .tar.gz, .tgz or .tar.")
    trace = forms.FileField(required=False, help_text="The agent's trace (optional): JSONL, one step a line, or a JSON array of steps.")
    judge = forms.ModelChoiceField(queryset=Judge.objects.order_by("name"), empty_label=None)
    run_id = forms.CharField(required=False, max_length=100, help_text="Optional; default <utc>_<short-uuid>.")
    title = forms.CharField(required=False, max_length=300)

    def _text_or_file(self, text_field: str, file_field: str, what: str) -> tuple[bytes, str] | None:
        upload = self.cleaned_data.get(file_field)
        if upload is not None:
            return self._read(upload, file_field), upload.name
        text = (self.cleaned_data.get(text_field) or "").strip()
        if text:
            return text.encode("utf-8"), what
        self.add_error(text_field, f"Write the {what} or upload a file.")
        return None

    def _read(self, upload, field: str) -> bytes:
        if upload.size > settings.UPLOAD_MAX_BYTES:
            raise forms.ValidationError({field: f"{upload.name} is {upload.size:,} bytes, over the limit of {settings.UPLOAD_MAX_BYTES:,}."})
        return upload.read()

    def clean(self):
        cleaned = super().clean()
        task = self._text_or_file("task", "task_file", "task")
        requirements = self._text_or_file("requirements", "requirements_file", "requirements")
        try:
            if task is not None:
                cleaned["task_text"] = parse_task(*task)
        except InputError as exc:
            self.add_error("task_file" if cleaned.get("task_file") else "task", str(exc))
        try:
            if requirements is not None:
                cleaned["requirement_list"] = parse_requirements(*requirements)
        except InputError as exc:
            self.add_error("requirements_file" if cleaned.get("requirements_file") else "requirements", str(exc))
        trace_upload = cleaned.get("trace")
        cleaned["trace_parsed"] = None
        if trace_upload is not None:
            try:
                cleaned["trace_parsed"] = parse_trace(self._read(trace_upload, "trace"), trace_upload.name, max_bytes=settings.AGENT_TRACE_MAX_BYTES)
            except InputError as exc:
                self.add_error("trace", str(exc))
        workspace = cleaned.get("workspace")
        if workspace is not None and workspace.size > settings.UPLOAD_MAX_BYTES:
            self.add_error("workspace", f"{workspace.name} is {workspace.size:,} bytes, over the limit of {settings.UPLOAD_MAX_BYTES:,}.")
        return cleaned


def _workspace_source(upload) -> str | bytes:
    """A large upload is already a temporary file: unpack from it instead of reading it into memory."""
    if hasattr(upload, "temporary_file_path"):
        return upload.temporary_file_path()
    upload.seek(0)
    return upload.read()


@role_required(*READERS)
def agent_home(request: HtmxHttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = AgentRunForm(request.POST, request.FILES)
        if form.is_valid():
            data = form.cleaned_data
            inputs = agent_services.AgentInputs(
                task=data["task_text"], requirements=data["requirement_list"], trace=data["trace_parsed"],
                trace_name=data["trace"].name if data["trace"] else "",
            )
            try:
                run = agent_services.agent_run_create(
                    inputs=inputs, workspace=_workspace_source(data["workspace"]), workspace_name=data["workspace"].name,
                    judge=data["judge"], run_id=data["run_id"] or None, executor="celery", created_by=request.user,
                    title=data["title"],
                )
            except InputError as exc:
                form.add_error("run_id" if "run id" in str(exc) else "workspace", str(exc))
            else:
                run_enqueue(run=run)
                return redirect("run_detail", run_id=run.run_id)
    else:
        form = AgentRunForm()
    from judgeapp.judging.judges import judges_sync

    try:
        judges_sync()
    except InputError as exc:
        form.add_error(None, f"Judges file: {exc}")
    context = {"form": form, "runs": selectors.runs_recent(kind=RunKind.AGENT, limit=20), "sandbox": agent_services.sandbox_summary()}
    return render(request, "judgeapp/agent/home.html", context, status=400 if form.errors else 200)


def _agent_run(run_id: str):
    run = selectors.run_get(run_id=run_id)
    if run.kind != RunKind.AGENT:
        raise Http404("not an agent run")
    return run


@role_required(*READERS)
def agent_requirements(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """The requirements table, polled by htmx while the run goes on."""
    run = _agent_run(run_id)
    response = render(request, "judgeapp/agent/run.html#agent-requirements", {"run": run, "judgments": selectors.judgments_of(run=run)})
    if run.is_finished and request.htmx:
        return HttpResponseStopPolling(response.content)
    return response


@role_required(*READERS)
def agent_transcript(request: HtmxHttpRequest, run_id: str, judgment_uuid) -> HttpResponse:
    run = _agent_run(run_id)
    judgment = get_object_or_404(Judgment.objects.select_related("judge"), run=run, uuid=judgment_uuid)
    return render(request, "judgeapp/agent/transcript.html", {"run": run, "judgment": judgment})


@role_required(*READERS)
def agent_report(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = _agent_run(run_id)
    if not run.report:
        raise Http404("the run has no report yet")
    response = JsonResponse(run.report, json_dumps_params={"indent": 2, "ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="{run.run_id}.report.json"'
    return response


urlpatterns = [
    path("", agent_home, name="home"),
    path("<str:run_id>/requirements/", agent_requirements, name="requirements"),
    path("<str:run_id>/requirements/<uuid:judgment_uuid>/", agent_transcript, name="transcript"),
    path("<str:run_id>/report.json", agent_report, name="report"),
]
