"""The shell every page shares: dashboard of runs with live progress, a run's page, judges, a judgment."""

import os

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.core.exceptions import NON_FIELD_ERRORS
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import select_template
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.text import capfirst
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from judgeapp.judging import runs as run_services
from judgeapp.judging import selectors, tags
from judgeapp.judging.errors import InputError
from judgeapp.judging.judges import judges_sync
from judgeapp.judging.library import PromptRefused, library, library_version_get, library_versions, prompt_template_save
from judgeapp.judging.pages import HtmxHttpRequest, judges_file_notice, page_redirect, render_partial
from judgeapp.judging.prompts import BUILTIN_NAME, library_prompt, prompt_diff
from judgeapp.judging.runkind import handler_for, page_read
from judgeapp.models import AuditLog, Judge, Judgment, PromptMode, RunKind, System
from judgeapp.roles import READERS, Role, has_role, role_required
from judgeapp.throttle import (
    Scope,
    Throttled,
    account_name,
    auth_failure_record,
    auth_failures_check,
    client_address,
    throttle_keys,
    wait_words,
)
from judgeapp.web import glossary as glossary_entries
from judgeapp.web import selectors as web_selectors
from judgeapp.web.forms import PromptForm, RunFiltersForm, TagForm


class LoginView(auth_views.LoginView):
    """Django's login page, throttled per account and per address (judgeapp/throttle.py): a locked account
    or address gets a page saying how long to wait, with status 429 and Retry-After, and its password is not
    checked."""

    def post(self, request, *args, **kwargs):
        try:
            auth_failures_check(keys=self._throttle_keys())
        except Throttled as exc:
            return self._locked_out(exc)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        # A wrong username or password counts; a form sent without one of them guessed nothing.
        if form.has_error(NON_FIELD_ERRORS, "invalid_login"):
            try:
                auth_failure_record(keys=self._throttle_keys())
            except Throttled as exc:
                return self._locked_out(exc)
        return super().form_invalid(form)

    def _throttle_keys(self):
        typed = self.request.POST.get(get_user_model().USERNAME_FIELD, "")
        return throttle_keys(scope=Scope.LOGIN, address=client_address(self.request), account=account_name(typed))

    def _locked_out(self, exc: Throttled) -> HttpResponse:
        response = render(self.request, "registration/locked_out.html", {"wait": wait_words(exc.retry_after)}, status=429)
        response["Retry-After"] = str(exc.retry_after)
        return response


def home(request: HtmxHttpRequest) -> HttpResponse:
    # Annotators work blind: their home is their queue, never the dashboard of runs and judges.
    if not has_role(request.user, *READERS):
        if has_role(request.user, Role.ANNOTATOR):
            return redirect("calibration:queue")
        return render(request, "judgeapp/web/no_role.html", status=403)
    return runs_list(request)


@role_required(*READERS)
def runs_list(request: HtmxHttpRequest) -> HttpResponse:
    """The runs: a search, filters and real paging, all in the query string (a GET form; htmx swaps the list)."""
    form = RunFiltersForm(request.GET or None)
    filters = form.filters()
    paged = web_selectors.run_page_get(filters=filters, page=request.GET.get("page"))
    keep = request.GET.copy()
    keep.pop("page", None)
    context = {
        "form": form,
        "filters": filters,
        "page": paged["page"],
        "rows": paged["rows"],
        "query": keep.urlencode(),
        "kind": filters.kind,
        "kinds": RunKind.choices,
        "systems": list(System.objects.order_by("name").values_list("name", flat=True)),
        "testsets": selectors.testset_names_list(),
        "tags": selectors.tag_names_list(),
    }
    return render_partial(request, "judgeapp/web/dashboard.html", context, partial="runs-list")


@role_required(*READERS)
def run_detail(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = selectors.run_get(run_id=run_id)
    # An imported run (published verdicts, not judged here) has its own page: its report has another shape.
    extra = {}
    if run.config.get("imported"):
        names = ["judgeapp/pairwise/run_imported.html"]
        extra["imported_view"] = web_selectors.imported_pairwise_for_run(run=run, page=request.GET.get("page"))
    else:
        try:
            names = [handler_for(run.kind).page_template]
        except LookupError:
            names = []
        # What the kind's page shows beside the report, read here: no template tag queries the database.
        extra.update(page_read(run.kind, "run", run=run))
    kind_template = select_template([*names, "judgeapp/web/run_generic.html"])
    return render(
        request,
        "judgeapp/web/run_detail.html",
        {
            "run": run,
            "kind_template": kind_template.template.name,
            "judgments": selectors.judgments_for_run(run=run)[:200],
            "units": web_selectors.unit_counts_for_run(run=run),
            "run_tags": tags.run_tag_names(run=run),
            # The judges' calibration status, agreement and corrected figures now, from one snapshot (the
            # report holds them at the run's end; people may label a sample after the run finished).
            **web_selectors.people_for_run(run=run),
            **extra,
        },
    )


@role_required(*READERS)
def run_progress(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """The progress bar, polled by htmx every 2 s; the answer that shows a finished run stops the polling."""
    run = selectors.run_get(run_id=run_id)
    # Keep ?reload=1 in the swapped-in partial's own hx-get, or only the first poll could reload the page.
    context = {"run": run, "reload": request.GET.get("reload"), "units": web_selectors.unit_counts_for_run(run=run)}
    response = render(request, "judgeapp/_run_progress.html", context)
    if run.is_finished and request.htmx:
        stop = HttpResponseStopPolling(response.content)
        # A finished run changes what the rest of its page shows: reload it once.
        if request.GET.get("reload"):
            stop["HX-Refresh"] = "true"
        return stop
    return response


@require_POST
@role_required(*READERS)
def run_cancel(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = selectors.run_get(run_id=run_id)
    if run_services.run_cancel(run=run, actor=request.user, reason=request.POST.get("reason", "")):
        messages.success(request, f"Run {run.run_id} cancelled.")
    else:
        messages.info(request, f"Run {run.run_id} had already finished.")
    return page_redirect(request, reverse("run_detail", args=[run.run_id]))


def _tags_answer(request: HtmxHttpRequest, run, *, error: str = "") -> HttpResponse:
    """The run's tags: the htmx form swaps its part of the run page, its error in it (a 200, as every form
    answers htmx: htmx swaps no 4xx answer); without JavaScript, back to the page, the error said there."""
    if request.htmx:
        context = {"run": run, "run_tags": tags.run_tag_names(run=run), "tag_error": error}
        return render(request, "judgeapp/web/run_detail.html#run-tags", context)
    if error:
        messages.error(request, error)
    return redirect("run_detail", run_id=run.run_id)


@require_POST
@role_required(*READERS)
def run_tag_add(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = selectors.run_get(run_id=run_id)
    form = TagForm(request.POST)
    if not form.is_valid():
        return _tags_answer(request, run, error="Type a tag to add.")
    try:
        tags.run_tag_add(run=run, name=form.cleaned_data["name"], actor=request.user)
    except InputError as exc:
        return _tags_answer(request, run, error=capfirst(str(exc)) + ".")
    return _tags_answer(request, run)


@require_POST
@role_required(*READERS)
def run_tag_remove(request: HtmxHttpRequest, run_id: str, name: str) -> HttpResponse:
    run = selectors.run_get(run_id=run_id)
    tags.run_tag_remove(run=run, name=name)
    return _tags_answer(request, run)


@role_required(*READERS)
def judgment_detail(request: HtmxHttpRequest, run_id: str, judgment_uuid) -> HttpResponse:
    run = selectors.run_get(run_id=run_id)
    judgment = get_object_or_404(
        Judgment.objects.select_related("case", "criterion", "judge", "system", "prompt"), run=run, uuid=judgment_uuid
    )
    # The texts the verdict is about: the case's input and the replies judged (both, for a pairwise case).
    outputs = run.outputs.filter(case=judgment.case).order_by("slot") if judgment.case_id else []
    return render(request, "judgeapp/web/judgment_detail.html", {"run": run, "judgment": judgment, "outputs": outputs})


def glossary(request: HtmxHttpRequest) -> HttpResponse:
    """The words and figures the pages use, in plain words; every role reads it (an annotator too)."""
    return render(request, "judgeapp/web/glossary.html", {"entries": glossary_entries.ENTRIES})


@role_required(*READERS)
def judges_list(request: HtmxHttpRequest) -> HttpResponse:
    judges_file_notice(request)
    judges, systems = selectors.endpoint_list()
    # Only whether the key's variable is set, never its value.
    key_set = {name: bool(os.environ.get(name)) for name in {e.api_key_env for e in [*judges, *systems]}}
    statuses = web_selectors.statuses_for_judges(judges)
    records = selectors.latest_checkups_for_judges(judges=judges)
    checkups = web_selectors.checkup_rows_for_judges(judges, records)
    context = {
        "judges": judges,
        "systems": systems,
        "key_set": key_set,
        "loads": selectors.audit_list(action_prefix=AuditLog.Action.JUDGES_LOADED, limit=10),
        # Each judge's latest check-up on public human-labelled pairs (judgeapp/checkup/) with its verdict
        # against the lead's floors, and one under way.
        "checkups": records,
        "checkup_verdicts": checkups,
        "checkups_running": selectors.checkups_in_progress_for_judges(judges=judges),
        # The question each "Check up" button asks first (its cost at the judge's prices), read by the check-up.
        **page_read("checkup", "judges", judges=judges),
        "statuses": statuses,
        "readiness": web_selectors.readiness_for_judges(judges, statuses, checkups=checkups),
    }
    return render(request, "judgeapp/web/judges.html", context)


@require_POST
@role_required(*READERS)
def judges_reload(request: HtmxHttpRequest) -> HttpResponse:
    """Load the judges file now (the button on the judges page and on every page that lists judges)."""
    try:
        names = judges_sync(actor=request.user)
    except InputError as exc:
        messages.error(request, f"Judges file not loaded: {exc}. The judges of the last good load stay.")
    else:
        messages.success(request, f"Judges file loaded: {', '.join(names) or 'no judge or system'}.")
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return redirect("judges")
    return redirect(target)


@role_required(*READERS)
def judge_scorecard(request: HtmxHttpRequest, name: str, version: str | None = None) -> HttpResponse:
    """One judge configuration's record: agreement with people over time, position consistency, parse
    failures and truncation, latency and tokens, the runs and gates relying on it, its lock history."""
    if version is None:
        judge = get_object_or_404(Judge, name=name)
        return redirect("judge_scorecard_version", name=name, version=judge.version)
    if not web_selectors.scorecard_exists_for_judge(name=name, version=version):
        raise Http404(f"no judge {name!r} in configuration {version!r}")
    return render(request, "judgeapp/web/scorecard.html", {"card": web_selectors.scorecard_get(name=name, version=version)})


# --- The prompt library: readers (reviewers and leads) read and add prompts; annotators never see them,
# since a prompt tells how the judging is set up. ----------------------------------------------------------


def _library_mode(mode: str) -> str:
    if mode not in PromptMode.values:
        raise Http404("no such mode in the prompt library")
    return mode


@role_required(*READERS)
def prompts_list(request: HtmxHttpRequest) -> HttpResponse:
    modes = [{"mode": mode, "label": label, "prompts": library(mode=mode)} for mode, label in PromptMode.choices]
    return render(request, "judgeapp/web/prompts.html", {"modes": modes})


@role_required(*READERS)
def prompt_builtin(request: HtmxHttpRequest, mode: str) -> HttpResponse:
    prompt = library_prompt(_library_mode(mode))
    context = {"mode": mode, "mode_label": PromptMode(mode).label, "name": BUILTIN_NAME, "label": "built-in",
               "hash": prompt.version, "text": prompt.text, "builtin": True}
    return render(request, "judgeapp/web/prompt_detail.html", context)


@role_required(*READERS)
def prompt_detail(request: HtmxHttpRequest, prompt_uuid) -> HttpResponse:
    template = library_version_get(uuid=prompt_uuid)
    if template is None:
        raise Http404("no such prompt version")
    versions = list(library_versions(mode=template.mode, name=template.name))
    earlier = [v for v in versions if v.number < template.number]
    previous = earlier[-1] if earlier else None
    old_text = previous.text if previous else library_prompt(template.mode).text
    context = {
        "mode": template.mode, "mode_label": PromptMode(template.mode).label, "name": template.name, "label": template.label,
        "hash": template.version, "text": template.text, "builtin": False, "template": template, "versions": versions,
        "previous": previous, "diff": prompt_diff(old=old_text, new=template.text),
        "next_label": f"v{versions[-1].number + 1}",
    }
    return render(request, "judgeapp/web/prompt_detail.html", context)


@role_required(*READERS)
def prompt_new(request: HtmxHttpRequest) -> HttpResponse:
    """Add a prompt, or a prompt's next version (`?from=<uuid>` starts from that version's text, `?mode=`
    from the mode's built-in one). A version is never changed: saving always stores a new one."""
    initial = {"mode": PromptMode.POINTWISE}
    source = request.GET.get("from", "")
    if source:
        start = library_version_get(uuid=source)
        if start is not None:
            initial = {"mode": start.mode, "name": start.name, "text": start.text}
    elif request.GET.get("mode") in PromptMode.values:
        initial = {"mode": request.GET["mode"], "text": library_prompt(request.GET["mode"]).text}
    form = PromptForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            template = prompt_template_save(mode=data["mode"], name=data["name"], text=data["text"], actor=request.user)
        except PromptRefused as exc:
            for problem in exc.problems:
                form.add_error("text", problem)
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Saved {template.mode} prompt {template.name} {template.label}.")
            return redirect("prompt_detail", prompt_uuid=template.uuid)
    return render(request, "judgeapp/web/prompt_new.html", {"form": form}, status=400 if form.errors else 200)
