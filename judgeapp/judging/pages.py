"""What every mode's views share: the htmx request type, the judges file loaded before a form lists
judges, and the answer to a form that started a run."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from judgeapp.judging.errors import InputError
from judgeapp.judging.judges import judges_sync


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def judges_sync_shown(request: HttpRequest) -> None:
    """Load the judges file before a page lists judges or systems; a bad file is a message on the page,
    not a 500 (the rows from the last good load stay)."""
    try:
        judges_sync()
    except InputError as exc:
        messages.error(request, f"Judges file: {exc}")


def run_started_response(request: HtmxHttpRequest, run) -> HttpResponse:
    """To the new run's page: a client-side redirect for an htmx form, a plain redirect otherwise."""
    url = reverse("run_detail", args=[run.run_id])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
