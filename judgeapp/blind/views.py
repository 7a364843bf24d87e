"""The blind comparator's pages: start a comparison, the leakage page, reveal the mapping, download
comparison.json. The run itself is shown on the run page (templates/judgeapp/blind/run.html)."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from judgeapp.blind import selectors as selectors_blind
from judgeapp.blind import services as blind_services
from judgeapp.blind.forms import MAX_UPLOAD_ROWS, BlindCompareForm, upload_rows_of
from judgeapp.judging.errors import InputError
from judgeapp.judging.pages import HtmxHttpRequest, preflight_partial, run_form_answer
from judgeapp.models import BlindComparison, BlindVersion, Executor
from judgeapp.roles import READERS, role_required


def _prefill(uuid) -> dict:
    """The inputs of a comparison that stopped on leakage, to start again once they are sanitized."""
    try:
        previous = selectors_blind.blind_comparison_get(uuid=uuid)
    except (Http404, ValidationError, ValueError):  # a bad or stale link gives an empty form
        return {}
    keys = {c.path.as_posix(): c.key for c in blind_services.browse_choices()}
    initial = {
        "prompt": previous.eval_prompt,
        "expectations": "\n".join(previous.expectations),
        "judge": previous.judge_id,
        "directories": [
            keys[v.source_path] for v in previous.versions.all()
            if v.source == BlindVersion.Source.BROWSE and v.source_path in keys
        ],

    }
    uploads = [v.real_name for v in previous.versions.all() if v.source == BlindVersion.Source.UPLOAD]
    for i, name in enumerate(uploads):
        initial[f"upload_name_{i}"] = name
    return initial | {"_uploads": len(uploads)}


@role_required(*READERS)
def blind_index(request: HtmxHttpRequest) -> HttpResponse:
    return render(request, "judgeapp/blind/index.html", {"comparisons": selectors_blind.blind_comparison_list()})


@role_required(*READERS)
def blind_new(request: HtmxHttpRequest) -> HttpResponse:
    if (warnings := preflight_partial(request, BlindCompareForm)) is not None:
        return warnings
    if request.method == "POST":
        form = BlindCompareForm(request.POST, request.FILES, upload_rows=upload_rows_of(request.POST.get("upload_rows")))
    else:
        initial = _prefill(request.GET["from"]) if request.GET.get("from") else {}
        rows = upload_rows_of(request.GET.get("uploads") or initial.pop("_uploads", 0))
        initial.pop("_uploads", None)
        form = BlindCompareForm(initial=initial, upload_rows=rows)

    def start(data: dict):
        outcome = blind_services.blind_run_create(
            versions=form.versions,
            eval_prompt=data["prompt"].strip(),
            expectations=data["expectation_list"],
            judge=data["judge"],
            origin=BlindComparison.Origin.WEB,
            executor=Executor.CELERY,
            created_by=request.user,
            budget=data.get("budget"),
        )
        if outcome.leaked:
            return redirect("blind:leakage", uuid=outcome.comparison.uuid)
        messages.success(request, f"Blind comparison {outcome.run.run_id} started: labels drawn, no leakage found.")
        return outcome.run

    context = {"next_rows": min(MAX_UPLOAD_ROWS, form.upload_rows + 1)}
    return run_form_answer(request, form, start=start, template="judgeapp/blind/new.html", context=context)


@role_required(*READERS)
def blind_upload_row(request: HtmxHttpRequest) -> HttpResponse:
    """One more upload row (htmx); without htmx, the whole form with one row more."""
    rows = upload_rows_of(request.GET.get("uploads"))
    if not request.htmx:
        return redirect(f"{reverse('blind:new')}?uploads={rows}")
    form = BlindCompareForm(upload_rows=rows)
    name, files = form.upload_fields()[-1]
    context = {"name": name, "files": files, "rows": rows, "next_rows": min(MAX_UPLOAD_ROWS, rows + 1), "oob": True}
    return render(request, "judgeapp/blind/new.html#upload-row", context)


@role_required(*READERS)
def blind_leakage(request: HtmxHttpRequest, uuid) -> HttpResponse:
    comparison = selectors_blind.blind_comparison_get(uuid=uuid)
    if comparison.status != BlindComparison.Status.LEAKED:
        return redirect("run_detail", run_id=comparison.run.run_id)
    return render(request, "judgeapp/blind/leakage.html", {"comparison": comparison, "flags": comparison.leakage_flags})


@require_POST
@role_required(*READERS)
def blind_reveal(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    comparison = selectors_blind.blind_comparison_for_run(run_id=run_id)
    try:
        if blind_services.blind_mapping_reveal(comparison=comparison, actor=request.user):
            messages.success(request, "Mapping revealed; the reveal is in the audit log.")
    except InputError as exc:
        messages.error(request, str(exc))
    return redirect("run_detail", run_id=run_id)


@role_required(*READERS)
def blind_comparison_json(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    comparison = selectors_blind.blind_comparison_for_run(run_id=run_id)
    doc = (comparison.run.report or {}).get("comparison")
    if not doc:
        raise Http404("this comparison has no result")
    response = JsonResponse(doc, json_dumps_params={"indent": 2, "ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="comparison-{run_id}.json"'
    return response
