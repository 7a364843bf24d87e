"""What every mode's views share: the htmx request type, rendering a page or its swapped part, the notice
that the judges file changed since it was loaded, and the answer to a form that started a run."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

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
