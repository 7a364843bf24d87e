"""Calibration's pages: the annotator's blind queue; samples, agreement, the level and the locks for
reviewers and leads."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from calibration import selectors
from calibration.core.agreement import METRIC_LABELS
from calibration.forms import AdoptForm, CandidateForm, LevelForm, PolicyForm, SampleForm, UnlockForm
from calibration.services import candidates as candidate_services
from calibration.services import labels as label_services
from calibration.services import locks as lock_services
from calibration.services.samples import sample_draw
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.judging.errors import InputError
from judgeapp.judging.pages import HtmxHttpRequest, render_partial
from judgeapp.roles import READERS, Role, has_role, role_required

# --- The annotator's queue (blind) ---------------------------------------------------------------------


def _queue_page(request: HtmxHttpRequest, assignment, *, error: str = "", status: int = 200, skipped_view: bool = False) -> HttpResponse:
    context = {
        "assignment": assignment,
        "display": selectors.item_display(assignment=assignment) if assignment else None,
        "progress": selectors.queue_progress(annotator=request.user),
        "can_undo": selectors.queue_last_action(annotator=request.user) is not None,
        "skipped_view": skipped_view,
        "error": error,
    }
    return render_partial(request, "calibration/queue.html", context, partial="item", status=status)


def _own(request, assignment_uuid):
    assignment = selectors.assignment_get(assignment_uuid=assignment_uuid)
    if assignment.annotator_id != request.user.pk:
        raise PermissionDenied  # an annotator reaches only their own queue
    return assignment


def _next(request: HtmxHttpRequest) -> HttpResponse:
    if request.htmx:
        skipped = request.POST.get("skipped_view") == "1"
        assignment = selectors.queue_next(annotator=request.user, skipped=skipped)
        return _queue_page(request, assignment, skipped_view=skipped and assignment is not None)
    return redirect("calibration:queue")


@role_required(Role.ANNOTATOR)
def queue(request: HtmxHttpRequest) -> HttpResponse:
    skipped = request.GET.get("skipped") == "1"
    return _queue_page(request, selectors.queue_next(annotator=request.user, skipped=skipped), skipped_view=skipped)


@role_required(Role.ANNOTATOR)
def queue_item(request: HtmxHttpRequest, assignment_uuid) -> HttpResponse:
    return _queue_page(request, _own(request, assignment_uuid))


@require_POST
@role_required(Role.ANNOTATOR)
def queue_label(request: HtmxHttpRequest, assignment_uuid) -> HttpResponse:
    assignment = _own(request, assignment_uuid)
    try:
        label_services.label_record(assignment=assignment, answer=request.POST.get("answer", ""))
    except InputError as exc:
        return _queue_page(request, assignment, error=str(exc), status=400)
    return _next(request)


@require_POST
@role_required(Role.ANNOTATOR)
def queue_skip(request: HtmxHttpRequest, assignment_uuid) -> HttpResponse:
    label_services.label_skip(assignment=_own(request, assignment_uuid))
    return _next(request)


@require_POST
@role_required(Role.ANNOTATOR)
def queue_undo(request: HtmxHttpRequest) -> HttpResponse:
    assignment = label_services.label_undo(annotator=request.user)
    if assignment is None:
        if request.htmx:
            return _queue_page(request, selectors.queue_next(annotator=request.user), error="Nothing to undo.")
        messages.info(request, "Nothing to undo.")
        return redirect("calibration:queue")
    if request.htmx:
        return _queue_page(request, assignment)
    return redirect("calibration:queue_item", assignment_uuid=assignment.uuid)


# --- Samples, agreement, level and locks (reviewers and leads) -----------------------------------------


@role_required(*READERS)
def overview(request: HtmxHttpRequest) -> HttpResponse:
    level = selectors.level_current()
    policy = selectors.policy_current()
    context = {
        "level": level,
        "level_form": LevelForm(initial={"metric": level.metric, "threshold": level.threshold, "min_items": level.min_items}),
        "policy": policy,
        "policy_form": PolicyForm(initial=policy.as_dict()),
        "judges": selectors.judges_statuses(),
        "annotator_panels": selectors.annotator_panels(),
        "agreements": selectors.agreement_latest(),
        "locks": selectors.locks_all(),
        "samples": selectors.samples_recent(),
        "metric_labels": METRIC_LABELS,
        "audit": judgeapp_selectors.audit_recent(action_prefix="calibration."),
        "unlock_form": UnlockForm(),
        "is_lead": has_role(request.user, Role.LEAD),
    }
    return render(request, "calibration/overview.html", context)


@role_required(*READERS)
def sample_new(request: HtmxHttpRequest) -> HttpResponse:
    form = SampleForm(request.POST or None, initial={"run": request.GET.get("run")})
    if request.method == "POST" and form.is_valid():
        run = judgeapp_selectors.run_get(run_id=form.cleaned_data["run"])
        asked_at = timezone.now()
        try:
            sample = sample_draw(
                run=run,
                size=form.cleaned_data["size"],
                seed=form.cleaned_data["seed"],
                overlap=form.cleaned_data["overlap"],
                annotators=list(form.cleaned_data["annotators"]),
                created_by=request.user,
            )
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            if sample.created_at < asked_at:
                messages.info(
                    request,
                    f"Sample {sample.short_id} of this run, size and seed was drawn on {sample.created_at:%Y-%m-%d %H:%M} UTC: "
                    "here it is, with its annotators. Another seed draws another sample.",
                )
                return redirect("calibration:sample_detail", sample_uuid=sample.uuid)
            held = len(selectors.sample_held_back(sample=sample))
            note = f"; {held} held back on leakage (see below)" if held else ""
            messages.success(request, f"Sample {sample.short_id} drawn: {sample.size - held} items in the annotators' queues{note}.")
            return redirect("calibration:sample_detail", sample_uuid=sample.uuid)
    return render(request, "calibration/sample_new.html", {"form": form}, status=400 if form.errors else 200)


@role_required(*READERS)
def sample_detail(request: HtmxHttpRequest, sample_uuid) -> HttpResponse:
    sample = selectors.sample_get(sample_uuid=sample_uuid)
    strata: dict[str, int] = {}
    for stratum in sample.items.values_list("stratum", flat=True):
        strata[stratum or "—"] = strata.get(stratum or "—", 0) + 1
    results = list(selectors.results_of_sample(sample=sample))
    level = selectors.level_current()
    context = {
        "sample": sample,
        "run": sample.run,
        "progress": selectors.sample_progress(sample=sample),
        "results": results,
        "strata": sorted(strata.items()),
        "held_back": selectors.sample_held_back(sample=sample),
        "metric_labels": METRIC_LABELS,
        "candidates": selectors.candidates_of(sample=sample),
        "level": level,
        "sensitivities": [
            {"result": r, "sens": selectors.result_sensitivity(r, level)} for r in results if r.criterion == ""
        ],
        "panels": [p for p in selectors.annotator_panels(limit=1000) if p["sample"].pk == sample.pk],
    }
    return render(request, "calibration/sample_detail.html", context)


@require_POST
@role_required(Role.LEAD)
def level_set(request: HtmxHttpRequest) -> HttpResponse:
    form = LevelForm(request.POST)
    if form.is_valid():
        try:
            level = lock_services.level_set(actor=request.user, **form.cleaned_data)
        except InputError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Level set: {level}.")
    else:
        messages.error(request, "Level not changed: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    return redirect("calibration:overview")


@require_POST
@role_required(Role.LEAD)
def lock_unlock(request: HtmxHttpRequest, judge_name: str, judge_version: str) -> HttpResponse:
    form = UnlockForm(request.POST)
    form.is_valid()  # the scope fields are optional; the reason is checked below
    scope = {"prompt_version": form.cleaned_data.get("prompt_version", ""), "rubric_version": form.cleaned_data.get("rubric_version", "")}
    lock = selectors.lock_get(judge_name=judge_name, judge_version=judge_version, **scope)
    named = f"Judge {judge_name} ({judge_version}) with prompt {lock.prompt_version or '—'}, rubric {lock.rubric_version or '—'}"
    if form.errors:
        messages.error(request, "Say why the judge may be trusted without a recalibration.")
    else:
        try:
            if lock_services.lock_unlock(lock=lock, actor=request.user, reason=form.cleaned_data["reason"]):
                messages.success(request, f"{named} unlocked.")
            else:
                messages.info(request, f"{named} was not locked.")
        except InputError as exc:
            messages.error(request, str(exc))
    return redirect("calibration:overview")


@require_POST
@role_required(Role.LEAD)
def policy_set(request: HtmxHttpRequest) -> HttpResponse:
    form = PolicyForm(request.POST)
    if form.is_valid():
        try:
            policy = lock_services.policy_set(actor=request.user, **form.cleaned_data)
        except InputError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Policy set: {policy}.")
    else:
        messages.error(request, "Policy not changed: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    return redirect("calibration:overview")


# --- Candidates: recalibration without new labels -------------------------------------------------------


@role_required(*READERS)
def candidates(request: HtmxHttpRequest, sample_uuid) -> HttpResponse:
    """The current judge beside every candidate judged on the sample's labelled items."""
    sample = selectors.sample_get(sample_uuid=sample_uuid)
    context = {
        "sample": sample,
        "run": sample.run,
        "board": selectors.side_by_side(sample=sample),
        "metric_labels": METRIC_LABELS,
        "is_lead": has_role(request.user, Role.LEAD),
        "adopt_form": AdoptForm(),
        "adopted": selectors.adopted_candidate(judge_name=selectors.primary_judge(run=sample.run) or ""),
    }
    template = "calibration/candidates.html#board" if request.htmx else "calibration/candidates.html"
    return render(request, template, context)


@role_required(*READERS)
def candidate_new(request: HtmxHttpRequest, sample_uuid) -> HttpResponse:
    sample = selectors.sample_get(sample_uuid=sample_uuid)
    run = sample.run
    judge = run.judge
    rubric_name = run.rubric.source_path.rsplit("/", 1)[-1] if run.rubric_id and run.rubric.source_path else "rubric.toml"
    initial = {
        "model": judge.model if judge else "",
        "structured_output": judge.structured_output if judge else "none",
        "prompt_text": run.prompt.text if run.prompt_id else "",
        "rubric_text": run.rubric.raw if run.rubric_id else "",
    }
    items = len(selectors.labelled_items(sample=sample))
    form = CandidateForm(request.POST or None, initial=initial, rubric_name=rubric_name, items=items)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            candidate = candidate_services.candidate_create(
                sample=sample,
                label=data["label"],
                model=data["model"],
                structured_output=data["structured_output"],
                prompt_text=data["prompt_text"],
                rubric=data["rubric_text"],
                trials=data.get("trials"),
                created_by=request.user,
            )
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Candidate {candidate.title} queued: {candidate.run.run_id} judges the sample's labelled items.")
            if candidate.run.broker_notice:
                messages.warning(request, f"{candidate.run.run_id}: {candidate.run.broker_notice}.")
            return redirect("calibration:candidates", sample_uuid=sample.uuid)
    context = {"sample": sample, "run": run, "form": form, "items": items}
    return render(request, "calibration/candidate_new.html", context, status=400 if form.errors else 200)


@require_POST
@role_required(Role.LEAD)
def candidate_adopt(request: HtmxHttpRequest, candidate_uuid) -> HttpResponse:
    candidate = selectors.candidate_get(candidate_uuid=candidate_uuid)
    form = AdoptForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    try:
        candidate_services.candidate_adopt(candidate=candidate, actor=request.user, reason=reason)
    except (InputError, PermissionDenied) as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Candidate {candidate.title} adopted: it is judge {candidate.judge_name}'s configuration now.")
    return redirect("calibration:candidates", sample_uuid=candidate.sample.uuid)
