"""Agent-as-a-Judge in the browser: upload a workspace, its trace and the checklist, start the run, watch
each requirement resolve, open a requirement's transcript, download the report."""

from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django_htmx.http import HttpResponseStopPolling

from judgeapp.agent import services as agent_services
from judgeapp.agent.forms import AgentRunForm
from judgeapp.agent.runkind import sandbox_summary
from judgeapp.judging import selectors
from judgeapp.judging.pages import HtmxHttpRequest, preflight_partial, run_form_answer
from judgeapp.models import Judgment, RunKind
from judgeapp.roles import READERS, role_required


def _workspace_source(upload) -> str | bytes:
    """A large upload is already a temporary file: unpack from it instead of reading it into memory."""
    if hasattr(upload, "temporary_file_path"):
        return upload.temporary_file_path()
    upload.seek(0)
    return upload.read()


@role_required(*READERS)
def agent_home(request: HtmxHttpRequest) -> HttpResponse:
    if (warnings := preflight_partial(request, AgentRunForm)) is not None:
        return warnings

    def start(data: dict):
        inputs = agent_services.AgentInputs(
            task=data["task_text"], requirements=data["requirement_list"], trace=data["trace_parsed"],
            trace_name=data["trace"].name if data["trace"] else "",
        )
        return agent_services.agent_run_create(
            inputs=inputs, workspace=_workspace_source(data["workspace"]), workspace_name=data["workspace"].name,
            judge=data["judge"], run_id=data["run_id"] or None, executor="celery", created_by=request.user,
            title=data["title"], budget=data.get("budget"),
        )

    form = AgentRunForm(request.POST or None, request.FILES or None)
    context = {"runs": selectors.run_list(kind=RunKind.AGENT, limit=20), "sandbox": sandbox_summary()}
    return run_form_answer(request, form, start=start, template="judgeapp/agent/home.html", context=context,
                           refused_field=lambda exc: (
                               "run_id" if "run id" in str(exc) else "budget" if "budget" in str(exc) else "workspace"
                           ))


def _agent_run(run_id: str):
    run = selectors.run_get(run_id=run_id)
    if run.kind != RunKind.AGENT:
        raise Http404("not an agent run")
    return run


@role_required(*READERS)
def agent_requirements(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """The requirements table, polled by htmx while the run goes on."""
    run = _agent_run(run_id)
    response = render(
        request, "judgeapp/agent/run.html#agent-requirements", {"run": run, "judgments": selectors.judgments_for_run(run=run)}
    )

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
