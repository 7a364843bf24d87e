"""What every mode's views share: the htmx request type, rendering a page or its swapped part, the notice
that the judges file changed since it was loaded, the answer to a form that started a run, and to its
Estimate button."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from judgeapp.judging.errors import InputError
from judgeapp.judging.judges import judges_file_status

# The message tag base.html shows with the "Reload the judges file" button.
JUDGES_FILE_TAG = "judges-file"


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def render_partial(request: HtmxHttpRequest, template: str, context: dict, *, partial: str, status: int = 200) -> HttpResponse:
    """The whole page, or for an htmx request only its `partial` (the region the request swaps)."""
    return render(request, f"{template}#{partial}" if request.htmx else template, context, status=status)


def judges_file_notice(request: HtmxHttpRequest) -> None:
    """On a page that lists judges or systems: when the judges file (or JUDGE_MODEL) differs from what was
    last loaded, say so, with the reload button. Reads only: a GET writes nothing. Not on an htmx swap,
    whose part of the page shows no messages (the notice would wait for the next page)."""
    if request.htmx:
        return
    status = judges_file_status()
    if not status.changed:
        return
    if status.never_loaded:
        text = f"The judges file {status.path} has not been loaded yet: its judges are not listed here."
    else:
        when = timezone.localtime(status.loaded_at).strftime("%Y-%m-%d %H:%M")
        text = f"The judges file {status.path} (or JUDGE_MODEL) changed since it was last loaded ({when}, by {status.loaded_by})."
    if status.error:
        text += f" As it is now it does not load: {status.error}"
    messages.warning(request, text, extra_tags=JUDGES_FILE_TAG)


def page_redirect(request: HtmxHttpRequest, url: str) -> HttpResponse:
    """To `url` after a post: a client-side redirect for an htmx form (htmx would otherwise swap the whole
    next page into the form), a plain redirect otherwise."""
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def run_started_response(request: HtmxHttpRequest, run) -> HttpResponse:
    """To the new run's page: a client-side redirect for an htmx form, a plain redirect otherwise."""
    return page_redirect(request, reverse("run_detail", args=[run.run_id]))


def run_form_answer(request: HtmxHttpRequest, form, *, start, template: str, context: dict | None = None,
                    partial: str | None = None, form_name: str = "form", refused_field=None,
                    judges_notice: bool = True) -> HttpResponse:
    """The answer to a form that starts a run, the same in every mode. A valid POST calls
    `start(cleaned_data)`, which returns the new run (or an answer of its own: a blind comparison that stopped on
    leakage) and the answer is the run's page. A refusal (a field, or the create service's InputError, put on
    `refused_field(exc)` or on the whole form) is the form again: 400 to a plain post; 200 to htmx, which swaps
    only 2xx answers, and then only `partial`, the form's region. `judges_notice`: the form lists judges, so
    it says when the judges file changed since it was loaded."""
    if request.method == "POST" and form.is_valid():
        try:
            started = start(form.cleaned_data)
        except InputError as exc:
            form.add_error(refused_field(exc) if refused_field else None, str(exc))
        else:
            return started if isinstance(started, HttpResponse) else run_started_response(request, started)
    if judges_notice:
        judges_file_notice(request)
    status = 400 if form.errors and not request.htmx else 200
    context = {form_name: form, **(context or {})}
    if partial:
        return render_partial(request, template, context, partial=partial, status=status)
    return render(request, template, context, status=status)


def estimate_answer(request: HtmxHttpRequest, form, *, template: str, context: dict | None = None) -> HttpResponse:
    """The answer to a run form's "Estimate calls and cost" button (`_estimate.html`, the `estimate` partial of
    the mode's form page): the form is checked, which makes its `estimate` (the mode's estimate service, from
    the inputs alone: no judge asked, nothing stored), or says in its errors what is missing. htmx swaps just
    the estimate; a plain post gets the whole form back with it."""
    form.is_valid()
    context = {"form": form, "estimate": getattr(form, "estimate", None), "estimate_asked": True, **(context or {})}
    return render_partial(request, template, context, partial="estimate")


def preflight_partial(request, form_class) -> HttpResponse | None:
    """The warnings region of a form that starts a run (`_preflight.html`), for htmx's GET ?preflight=1 as
    the form's fields change; None for any other request. It reads, never writes."""
    if not (request.headers.get("HX-Request") and request.GET.get("preflight")):
        return None
    form = form_class(request.GET)
    form.is_valid()
    for asked_on_submit in ("confirm", "large_run_confirm"):  # not while the fields are being filled in
        form.errors.pop(asked_on_submit, None)
    return render(request, "judgeapp/_preflight.html", {"form": form, "preflight_url": request.path})
