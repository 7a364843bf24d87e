"""Calibration's pages: the annotator's blind queue; samples, agreement, the level and the locks for
reviewers and leads."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_POST

from calibration.core.agreement import METRIC_LABELS
from calibration.forms import (
    AdjudicationForm,
    AdoptForm,
    AnnotatorAssignForm,
    AnnotatorInviteForm,
    CandidateForm,
    InstructionsForm,
    LevelForm,
    MarginForm,
    PolicyForm,
    SampleForm,
    UnlockForm,
)
from calibration.selectors.adjudication import adjudication_item_get, adjudication_items_for_sample, open_adjudications_for_sample
from calibration.selectors.agreement import (
    latest_agreement_for_judge,
    result_rows_list,
    results_for_sample,
    sensitivity_for_result,
)
from calibration.selectors.annotation import (
    assignment_get,
    cues_for_assignment,
    display_for_assignment,
    item_notes_for_assignment,
    last_action_for_annotator,
    next_item_for_annotator,
    queue_progress_for_annotator,
)
from calibration.selectors.candidates import (
    adopted_candidate_for_judge,
    candidate_get,
    candidates_for_sample,
    side_by_side_for_sample,
)
from calibration.selectors.locks import lock_get, lock_list
from calibration.selectors.policy import level_get, policy_get
from calibration.selectors.run_judges import primary_judge_for_run
from calibration.selectors.samples import (
    annotator_panel_list,
    held_back_for_sample,
    item_notes_for_sample,
    labelled_items_for_sample,
    progress_for_sample,
    sample_get,
    sample_list,
)
from calibration.selectors.status import judge_status_list
from calibration.services import adjudication as adjudication_services
from calibration.services import annotation as annotation_services
from calibration.services import candidates as candidate_services
from calibration.services import labels as label_services
from calibration.services import locks as lock_services
from calibration.services.samples import sample_draw
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.judging.errors import InputError
from judgeapp.judging.pages import HtmxHttpRequest, page_redirect, render_partial, run_form_answer
from judgeapp.roles import READERS, Role, has_role, role_required

# --- The annotator's queue (blind) ---------------------------------------------------------------------


def _queue_page(
    request: HtmxHttpRequest, assignment, *, error: str = "", status: int = 200, skipped_view: bool = False
) -> HttpResponse:
    last = last_action_for_annotator(annotator=request.user)
    context = {
        "assignment": assignment,
        "display": display_for_assignment(assignment=assignment) if assignment else None,
        "progress": queue_progress_for_annotator(annotator=request.user),
        "can_undo": last is not None,
        "cues": cues_for_assignment(assignment=assignment, last=last),
        "notes": item_notes_for_assignment(assignment=assignment) if assignment else [],
        "skipped_view": skipped_view,
        "error": error,
    }
    return render_partial(request, "calibration/queue.html", context, partial="item", status=status)


def _own(request, assignment_uuid):
    assignment = assignment_get(assignment_uuid=assignment_uuid)
    if assignment.annotator_id != request.user.pk:
        raise PermissionDenied  # an annotator reaches only their own queue
    return assignment


def _next(request: HtmxHttpRequest) -> HttpResponse:
    if request.htmx:
        skipped = request.POST.get("skipped_view") == "1"
        assignment = next_item_for_annotator(annotator=request.user, skipped=skipped)
        return _queue_page(request, assignment, skipped_view=skipped and assignment is not None)
    return redirect("calibration:queue")


@role_required(Role.ANNOTATOR)
def queue(request: HtmxHttpRequest) -> HttpResponse:
    skipped = request.GET.get("skipped") == "1"
    return _queue_page(request, next_item_for_annotator(annotator=request.user, skipped=skipped), skipped_view=skipped)


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
            return _queue_page(request, next_item_for_annotator(annotator=request.user), error="Nothing to undo.")
        messages.info(request, "Nothing to undo.")
        return redirect("calibration:queue")
    if request.htmx:
        return _queue_page(request, assignment)
    return redirect("calibration:queue_item", assignment_uuid=assignment.uuid)


@require_POST
@role_required(Role.ANNOTATOR)
def queue_note(request: HtmxHttpRequest, assignment_uuid) -> HttpResponse:
    """The annotator's comment on the item, or their flag with its reason; the item stays where it is."""
    assignment = _own(request, assignment_uuid)
    error = ""
    try:
        note = annotation_services.item_note_create(
            assignment=assignment, kind=request.POST.get("kind", ""), text=request.POST.get("text", "")
        )
    except InputError as exc:
        error = str(exc)
    if not request.htmx:
        if error:
            return _queue_page(request, assignment, error=error, status=400)
        messages.success(request, "Your flag is saved." if note.kind == "flag" else "Your comment is saved.")
        return redirect("calibration:queue_item", assignment_uuid=assignment.uuid)
    context = {
        "assignment": assignment,
        "notes": item_notes_for_assignment(assignment=assignment),
        "note_error": error,
        "note_saved": "" if error else note.kind,
        "note_text": request.POST.get("text", "")[:2000] if error else "",
    }
    return render(request, "calibration/queue.html#notes", context)


# --- Samples, agreement, level and locks (reviewers and leads) -----------------------------------------


@role_required(*READERS)
def overview(request: HtmxHttpRequest) -> HttpResponse:
    return render(request, "calibration/overview.html", _overview_context(request))


def _overview_context(request: HtmxHttpRequest, **forms) -> dict:
    level = level_get()
    policy = policy_get()
    is_lead = has_role(request.user, Role.LEAD)
    return {
        "level": level,
        "level_form": LevelForm(initial=level.as_dict()),
        "policy": policy,
        "policy_form": PolicyForm(initial=policy.as_dict()),
        "judges": judge_status_list(),
        "annotator_panels": annotator_panel_list(),
        "agreements": latest_agreement_for_judge(),
        "locks": lock_list(),
        "samples": sample_list(),
        "metric_labels": METRIC_LABELS,
        "audit": judgeapp_selectors.audit_list(action_prefix="calibration."),
        "unlock_form": UnlockForm(),
        "is_lead": is_lead,
        **(_annotators_context(**forms) if is_lead else {}),
    }


def _annotators_context(*, invite_form=None, assign_form=None, invitation=None, assigned=None) -> dict:
    return {
        "invite_form": invite_form or AnnotatorInviteForm(),
        "assign_form": assign_form or AnnotatorAssignForm(),
        "invitation": invitation,
        "assigned": assigned,
    }


def _annotators_answer(request: HtmxHttpRequest, *, status: int = 200, **forms) -> HttpResponse:
    """The lead's annotators card: its own partial for htmx, else the whole overview."""
    if request.htmx:
        response = render(request, "calibration/overview.html#annotators", _annotators_context(**forms))
    else:
        response = render(request, "calibration/overview.html", _overview_context(request, **forms), status=status)
    # It may hold a password shown once: no cache keeps a copy.
    patch_cache_control(response, no_store=True, private=True)
    return response


@require_POST
@role_required(Role.LEAD)
def annotator_invite(request: HtmxHttpRequest) -> HttpResponse:
    form = AnnotatorInviteForm(request.POST)
    if form.is_valid():
        try:
            invitation = annotation_services.annotator_invite(
                username=form.cleaned_data["username"],
                email=form.cleaned_data["email"],
                sample=form.cleaned_data["sample"],
                actor=request.user,
            )
        except InputError as exc:
            form.add_error("username", str(exc))
        else:
            return _annotators_answer(request, invitation=invitation)
    return _annotators_answer(request, invite_form=form, status=200 if request.htmx else 400)


@require_POST
@role_required(Role.LEAD)
def annotator_assign(request: HtmxHttpRequest) -> HttpResponse:
    form = AnnotatorAssignForm(request.POST)
    if form.is_valid():
        try:
            added = annotation_services.sample_annotator_add(actor=request.user, **form.cleaned_data)
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            assigned = {"annotator": form.cleaned_data["annotator"], "sample": form.cleaned_data["sample"], "items": added}
            return _annotators_answer(request, assigned=assigned)
    return _annotators_answer(request, assign_form=form, status=200 if request.htmx else 400)


@role_required(Role.LEAD)
def sample_instructions(request: HtmxHttpRequest, sample_uuid) -> HttpResponse:
    """The lead writes what the sample's annotators read at the top of their queue and on each item."""
    sample = sample_get(sample_uuid=sample_uuid)
    form = InstructionsForm(request.POST or None, initial={"instructions": sample.instructions})
    if request.method == "POST" and form.is_valid():
        try:
            annotation_services.sample_instructions_set(
                sample=sample, instructions=form.cleaned_data["instructions"], actor=request.user
            )
        except InputError as exc:
            form.add_error("instructions", str(exc))
        else:
            messages.success(
                request, f"Instructions of sample {sample.short_id} saved: its annotators read them from their next item."
            )
            return redirect("calibration:sample_instructions", sample_uuid=sample.uuid)
    context = {"sample": sample, "form": form}
    return render(request, "calibration/sample_instructions.html", context, status=400 if form.errors else 200)


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
                instructions=form.cleaned_data["instructions"],
            )
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            if sample.created_at < asked_at:
                messages.info(
                    request,
                    f"Sample {sample.short_id} of this run, size and draw number "
                    f"was drawn on {sample.created_at:%Y-%m-%d %H:%M} UTC: "
                    "here it is, with its annotators. Another draw number draws another sample.",
                )
                return redirect("calibration:sample_detail", sample_uuid=sample.uuid)
            held = len(held_back_for_sample(sample=sample))
            note = f"; {held} held back on leakage (see below)" if held else ""
            messages.success(
                request, f"Sample {sample.short_id} drawn: {sample.size - held} items in the annotators' queues{note}."
            )
            return redirect("calibration:sample_detail", sample_uuid=sample.uuid)
    return render(request, "calibration/sample_new.html", {"form": form}, status=400 if form.errors else 200)


@role_required(*READERS)
def sample_detail(request: HtmxHttpRequest, sample_uuid) -> HttpResponse:
    sample = sample_get(sample_uuid=sample_uuid)
    strata: dict[str, int] = {}
    for stratum in sample.items.values_list("stratum", flat=True):
        strata[stratum or "—"] = strata.get(stratum or "—", 0) + 1
    results = list(results_for_sample(sample=sample))
    level = level_get()
    context = {
        "sample": sample,
        "run": sample.run,
        "progress": progress_for_sample(sample=sample),
        "results": results,
        # Each result's alternative annotator test and slices, and the annotators' notes: read here, not by a tag.
        "result_rows": result_rows_list(results=results, level=level),
        "item_notes": item_notes_for_sample(sample=sample),
        "strata": sorted(strata.items()),
        "held_back": held_back_for_sample(sample=sample),
        "metric_labels": METRIC_LABELS,
        "candidates": candidates_for_sample(sample=sample),
        "level": level,
        "sensitivities": [
            {"result": r, "sens": sensitivity_for_result(r, level)} for r in results if r.criterion == ""
        ],
        "panels": [p for p in annotator_panel_list(limit=1000) if p["sample"].pk == sample.pk],
        "to_resolve": open_adjudications_for_sample(sample=sample),
        "is_lead": has_role(request.user, Role.LEAD),
    }
    return render(request, "calibration/sample_detail.html", context)


# --- Adjudication: a lead resolves the items annotators disagree on --------------------------------------


@role_required(Role.LEAD)
def adjudication(request: HtmxHttpRequest, sample_uuid) -> HttpResponse:
    sample = sample_get(sample_uuid=sample_uuid)
    rows = adjudication_items_for_sample(sample=sample)
    context = {
        "sample": sample,
        "rows": rows,
        "open": sum(1 for row in rows if row["adjudication"] is None),
        "margin_form": MarginForm(initial={"margin": sample.adjudication_margin}),
        "form": AdjudicationForm(),
    }
    return render(request, "calibration/adjudication.html", context)


@require_POST
@role_required(Role.LEAD)
def adjudication_resolve(request: HtmxHttpRequest, sample_uuid, position: int) -> HttpResponse:
    sample = sample_get(sample_uuid=sample_uuid)
    row = adjudication_item_get(sample=sample, position=position)
    form = AdjudicationForm(request.POST)
    error = ""
    if form.is_valid():
        try:
            adjudication_services.adjudication_record(
                item=row["item"], answer=form.cleaned_data["answer"], note=form.cleaned_data["note"], actor=request.user
            )
        except InputError as exc:
            error = str(exc)
    else:
        error = " ".join(form.errors.get("answer", []) + form.errors.get("note", []))
    if error:
        if not request.htmx:
            messages.error(request, f"Item {position + 1} not resolved: {error}")
            return redirect(reverse("calibration:adjudication", args=[sample.uuid]) + f"#item-{position}")
        return render(
            request, "calibration/adjudication.html#row", {"sample": sample, "row": row, "form": form, "error": error}, status=400
        )
    if not request.htmx:
        messages.success(request, f"Item {position + 1} resolved.")
        return redirect(reverse("calibration:adjudication", args=[sample.uuid]) + f"#item-{position}")
    row = adjudication_item_get(sample=sample, position=position)
    context = {"sample": sample, "row": row, "form": AdjudicationForm(), "just_resolved": True,
               "open": open_adjudications_for_sample(sample=sample)}
    return render(request, "calibration/adjudication.html#row", context)


@require_POST
@role_required(Role.LEAD)
def adjudication_margin(request: HtmxHttpRequest, sample_uuid) -> HttpResponse:
    sample = sample_get(sample_uuid=sample_uuid)
    form = MarginForm(request.POST)
    if form.is_valid():
        try:
            adjudication_services.sample_margin_set(sample=sample, margin=form.cleaned_data["margin"], actor=request.user)
        except InputError as exc:
            messages.error(request, f"Margin not changed: {exc}")
        else:
            messages.success(
                request, f"Margin set: items whose scores differ by more than {form.cleaned_data['margin']} are resolved here."
            )
    else:
        messages.error(request, "Margin not changed: " + " ".join(form.errors.get("margin", [])))
    return page_redirect(request, reverse("calibration:adjudication", args=[sample.uuid]))


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
    scope = {
        "prompt_version": form.cleaned_data.get("prompt_version", ""),
        "rubric_version": form.cleaned_data.get("rubric_version", ""),
    }
    lock = lock_get(judge_name=judge_name, judge_version=judge_version, **scope)
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
    sample = sample_get(sample_uuid=sample_uuid)
    context = {
        "sample": sample,
        "run": sample.run,
        "board": side_by_side_for_sample(sample=sample),
        "metric_labels": METRIC_LABELS,
        "is_lead": has_role(request.user, Role.LEAD),
        "adopt_form": AdoptForm(),
        "adopted": adopted_candidate_for_judge(judge_name=primary_judge_for_run(run=sample.run) or ""),
    }
    template = "calibration/candidates.html#board" if request.htmx else "calibration/candidates.html"
    return render(request, template, context)


@role_required(*READERS)
def candidate_new(request: HtmxHttpRequest, sample_uuid) -> HttpResponse:
    sample = sample_get(sample_uuid=sample_uuid)
    run = sample.run
    judge = run.judge
    rubric_name = run.rubric.source_path.rsplit("/", 1)[-1] if run.rubric_id and run.rubric.source_path else "rubric.toml"
    initial = {
        "model": judge.model if judge else "",
        "structured_output": judge.structured_output if judge else "none",
        "prompt_text": run.prompt.text if run.prompt_id else "",
        "rubric_text": run.rubric.raw if run.rubric_id else "",
    }
    items = len(labelled_items_for_sample(sample=sample))
    def start(data: dict):
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
        messages.success(
            request, f"Candidate {candidate.title} queued: {candidate.run.run_id} judges the sample's labelled items."
        )
        if candidate.run.broker_notice:
            messages.warning(request, f"{candidate.run.run_id}: {candidate.run.broker_notice}.")
        return redirect("calibration:candidates", sample_uuid=sample.uuid)

    form = CandidateForm(request.POST or None, initial=initial, rubric_name=rubric_name, items=items)
    return run_form_answer(request, form, start=start, template="calibration/candidate_new.html",
                           context={"sample": sample, "run": run, "items": items}, judges_notice=False)


@require_POST
@role_required(Role.LEAD)
def candidate_adopt(request: HtmxHttpRequest, candidate_uuid) -> HttpResponse:
    candidate = candidate_get(candidate_uuid=candidate_uuid)
    form = AdoptForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    try:
        candidate_services.candidate_adopt(candidate=candidate, actor=request.user, reason=reason)
    except (InputError, PermissionDenied) as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Candidate {candidate.title} adopted: it is judge {candidate.judge_name}'s configuration now.")
    return redirect("calibration:candidates", sample_uuid=candidate.sample.uuid)
