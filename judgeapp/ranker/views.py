"""The ranker's pages: start a batch rank or a direct compare, watch a ranklist, insert one more."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from judgeapp.judging.errors import InputError
from judgeapp.judging.pages import HtmxHttpRequest, preflight_partial, run_form_answer
from judgeapp.ranker import selectors as selectors_ranker
from judgeapp.ranker.forms import CompareForm, InsertForm, RankForm
from judgeapp.ranker.services import compare_run_create, insertion_create, rank_run_create
from judgeapp.ranker.services import queue as ranker_queue
from judgeapp.roles import READERS, role_required


@role_required(*READERS)
def index(request: HtmxHttpRequest) -> HttpResponse:
    return render(
        request,
        "judgeapp/ranker/index.html",
        {"rank_form": RankForm(), "compare_form": CompareForm(), "ranklists": selectors_ranker.ranklist_list()},
    )


@role_required(*READERS)
def rank_new(request: HtmxHttpRequest) -> HttpResponse:
    if (warnings := preflight_partial(request, RankForm)) is not None:
        return warnings

    def start(data: dict):
        run = rank_run_create(
            candidates=data["candidates"],
            goal=data["goal"],
            judge=data["judge"],
            set_name=data["set_name"],
            max_size=data["max_size"],
            both_orders=data["both_orders"],
            strategy=data["strategy"],
            budget=data["budget"],
            spend_budget=data.get("spend_budget"),
            created_by=request.user,
        )
        messages.success(request, f"Batch rank {run.run_id} started: {len(data['candidates'])} candidates.")
        return run

    form = RankForm(request.POST or None, request.FILES or None)
    return run_form_answer(request, form, start=start, template="judgeapp/ranker/rank_new.html", partial="rank-form",
                           form_name="rank_form")


@role_required(*READERS)
def compare_new(request: HtmxHttpRequest) -> HttpResponse:
    if (warnings := preflight_partial(request, CompareForm)) is not None:
        return warnings

    def start(data: dict):
        return compare_run_create(
            a=data["file_a"], b=data["file_b"], judge=data["judge"], goal=data["goal"], both_orders=data["both_orders"],
            created_by=request.user,
        )

    form = CompareForm(request.POST or None, request.FILES or None)
    return run_form_answer(request, form, start=start, template="judgeapp/ranker/compare_new.html", partial="compare-form",
                           form_name="compare_form")


@role_required(*READERS)
def ranklist_state(request: HtmxHttpRequest, ranklist_uuid) -> HttpResponse:
    """The ranklist and its insertions, polled by htmx while it changes."""
    ranklist = selectors_ranker.ranklist_get(uuid=ranklist_uuid)
    state = selectors_ranker.state_for_ranklist(ranklist=ranklist)
    response = render(request, "judgeapp/ranker/_state.html", {"state": state, "run": ranklist.run})
    if request.htmx and not state.active:
        return HttpResponseStopPolling(response.content)
    return response


@role_required(*READERS)
def ranklist_insert(request: HtmxHttpRequest, ranklist_uuid) -> HttpResponse:
    ranklist = selectors_ranker.ranklist_get(uuid=ranklist_uuid)
    def start(data: dict):
        candidate = data["file"]
        _insertion, queued = insertion_create(
            ranklist=ranklist, candidate=candidate, requested_by=request.user.get_username()
        )

        if queued:
            messages.success(request, f"{candidate.artifact_id} is queued for insertion.")
        else:
            messages.info(request, f"{candidate.artifact_id} is already registered in this ranklist: skipped, nothing compared.")
        return ranklist.run

    form = InsertForm(request.POST or None, request.FILES or None)
    return run_form_answer(request, form, start=start, template="judgeapp/ranker/insert.html", partial="insert-form",
                           form_name="insert_form", context={"ranklist": ranklist, "run": ranklist.run}, judges_notice=False)


@require_POST
@role_required(*READERS)
def ranklist_resume(request: HtmxHttpRequest, ranklist_uuid) -> HttpResponse:
    ranklist = selectors_ranker.ranklist_get(uuid=ranklist_uuid)
    try:
        messages.success(request, ranker_queue.ranklist_resume(ranklist=ranklist))
    except InputError as exc:
        messages.info(request, str(exc))
    return redirect("run_detail", run_id=ranklist.run.run_id)


@role_required(*READERS)
def artifact_detail(request: HtmxHttpRequest, run_id: str, artifact_pk: int) -> HttpResponse:
    from judgeapp.judging import selectors
    run = selectors.run_get(run_id=run_id)
    artifact = selectors_ranker.artifact_get(ranklist_or_run=run, pk=artifact_pk)
    return render(request, "judgeapp/ranker/artifact.html", {"run": run, "artifact": artifact})
