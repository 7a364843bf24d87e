"""Pointwise pages: start an evaluation (upload or pick from evals/), the run's judgments and its exports.
The release gate and the releases are judgeapp/releases.

The run's report itself is the run page (run_detail) with `templates/judgeapp/pointwise/run.html`.
"""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from judgeapp.judging import selectors
from judgeapp.judging.atomic import json_text
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import MAX_SKELETON_CRITERION
from judgeapp.judging.files import rubric_skeleton as rubric_skeleton_text
from judgeapp.judging.forms import run_arguments
from judgeapp.judging.pages import HtmxHttpRequest, estimate_answer, preflight_partial, render_partial, run_form_answer
from judgeapp.models import Run, RunKind
from judgeapp.pointwise import services as pointwise_services
from judgeapp.pointwise.forms import JudgmentFilterForm, PointwiseForm
from judgeapp.pointwise.selectors import judgments_for_filters
from judgeapp.roles import READERS, role_required

JUDGMENTS_PER_PAGE = 50


def _pointwise_run(run_id: str) -> Run:
    run = selectors.run_get(run_id=run_id)
    if run.kind != RunKind.POINTWISE:
        raise Http404("not a pointwise run")
    return run


@role_required(*READERS)
def evaluation_new(request: HtmxHttpRequest) -> HttpResponse:
    if (warnings := preflight_partial(request, PointwiseForm)) is not None:
        return warnings

    def start(data: dict) -> Run:
        run = pointwise_services.pointwise_run_create(
            **run_arguments(data, created_by=request.user),
            judge=data["judge"],
            system=data["system"],
            outputs=data["outputs"],
            output_set=data["output_set"],
            generate=data["generate"],
            threshold=data["threshold"],
            baseline_mean=data["baseline_mean"],
            baseline_run=data["baseline_run"] or None,
        )
        messages.success(
            request, f"Run {run.run_id} queued: {run.testset.case_count} cases × {run.rubric.criteria.count()} criteria."
        )
        return run

    form = PointwiseForm(request.POST or None, request.FILES or None, outputs_uuid=request.GET.get("outputs", ""))
    return run_form_answer(request, form, start=start, template="judgeapp/pointwise/new.html")


@require_POST
@role_required(*READERS)
def evaluation_estimate(request: HtmxHttpRequest) -> HttpResponse:
    """The "Estimate" button: the run's judge calls, tokens and cost from the form's inputs, no judge asked
    and nothing stored (the form's own checks say what is missing)."""
    return estimate_answer(request, PointwiseForm(request.POST, request.FILES or None), template="judgeapp/pointwise/new.html")


@role_required(*READERS)
def rubric_skeleton(request: HtmxHttpRequest) -> HttpResponse:
    """The rubric helper: a rubric drafted from the one-sentence criterion in `?rubric_criterion=`, in the
    form's rubric box (htmx swaps just the box; without JavaScript, the whole form comes back with it). It
    writes nothing: the draft is refused as a rubric until every FILL IN is replaced."""
    criterion = request.GET.get("rubric_criterion", "")
    initial, problem = {"rubric_criterion": criterion}, None
    try:
        initial["rubric_text"] = rubric_skeleton_text(criterion[: MAX_SKELETON_CRITERION + 1])
    except InputError as exc:
        problem = str(exc)
    form = PointwiseForm(initial=initial)
    # The form's warnings region asks the form's own page, not this one.
    context = {"form": form, "draft_problem": problem, "preflight_url": reverse("pointwise:new")}
    return render_partial(request, "judgeapp/pointwise/new.html", context, partial="rubric-text")


@role_required(*READERS)
def judgments(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """Every judge verdict of a run, filtered by criterion, score or status, a page at a time."""
    run = _pointwise_run(run_id)
    filters = JudgmentFilterForm(request.GET).filters
    units = judgments_for_filters(run=run, **filters)
    page = Paginator(units, JUDGMENTS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "run": run,
        "page": page,
        "criteria": list(run.rubric.criteria.values_list("name", flat=True)) if run.rubric_id else [],
        "filters": {name: str(value) for name, value in filters.items()},
        "scores": [str(point) for point in (run.report or {}).get("histogram", {})] or ["1", "2", "3", "4", "5"],
    }
    return render_partial(request, "judgeapp/pointwise/judgments.html", context, partial="judgment-list")


@role_required(*READERS)
def export(request: HtmxHttpRequest, run_id: str, fmt: str) -> HttpResponse:
    run = _pointwise_run(run_id)
    if fmt == "csv":
        # Streamed: a run of 100,000 judgments is sent as it is read, never held whole.
        response = StreamingHttpResponse(pointwise_services.judgments_csv_chunks(run=run), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{run.run_id}.csv"'
        return response
    if fmt == "md":
        body, content_type = pointwise_services.report_markdown_of(run=run), "text/markdown; charset=utf-8"
    elif fmt == "json":
        body, content_type = json_text(pointwise_services.report_current(run=run)), "application/json"
    else:
        raise Http404
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{run.run_id}.{fmt}"'
    return response
