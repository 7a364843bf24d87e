"""The webhooks page (leads only): add a webhook (its secret shown once), send it a test, switch it off or
on, delete it; the latest deliveries below."""

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from judgeapp.judging.errors import InputError
from judgeapp.judging.pages import HtmxHttpRequest, page_redirect
from judgeapp.models import DeliveryStatus
from judgeapp.roles import Role, role_required
from judgeapp.webhooks import selectors, services
from judgeapp.webhooks.forms import WebhookForm


@never_cache  # the answer that shows a new secret must stay in no cache
@role_required(Role.LEAD)
def webhooks(request: HtmxHttpRequest) -> HttpResponse:
    form = WebhookForm(request.POST or None)
    created = None
    if request.method == "POST" and form.is_valid():
        try:
            hook, secret = services.webhook_create(
                name=form.cleaned_data["name"], url=form.cleaned_data["url"], events=form.cleaned_data["events"],
                actor=request.user
            )
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            created = {"webhook": hook, "secret": secret}
            form = WebhookForm()
    context = {
        "form": form,
        "created": created,
        "webhooks": selectors.webhook_list(),
        "deliveries": selectors.delivery_list(),
        "attempts": len(settings.WEBHOOK_RETRY_SECONDS) + 1,
    }
    return render(request, "judgeapp/webhooks/index.html", context, status=400 if form.errors else 200)


@require_POST
@role_required(Role.LEAD)
def webhook_test(request: HtmxHttpRequest, uuid) -> HttpResponse:
    hook = selectors.webhook_get(uuid=uuid)
    delivery = services.webhook_test_send(webhook=hook, actor=request.user)
    if delivery.status == DeliveryStatus.DELIVERED:
        messages.success(request, f"Test message delivered to {hook.name}: the receiver answered {delivery.last_status_code}.")
    elif delivery.status == DeliveryStatus.FAILED:
        messages.error(request, f"Test message to {hook.name} failed: {delivery.last_error}")
    else:
        messages.warning(request, f"Test message to {hook.name} not delivered yet ({delivery.last_error}); it is retried.")
    return page_redirect(request, reverse("webhooks:index"))


@require_POST
@role_required(Role.LEAD)
def webhook_active(request: HtmxHttpRequest, uuid) -> HttpResponse:
    hook = selectors.webhook_get(uuid=uuid)
    active = request.POST.get("active") == "on"
    if services.webhook_active_set(webhook=hook, active=active, actor=request.user):
        messages.success(request, f"Webhook {hook.name} switched {'on' if active else 'off'}.")
    return page_redirect(request, reverse("webhooks:index"))


@require_POST
@role_required(Role.LEAD)
def webhook_delete(request: HtmxHttpRequest, uuid) -> HttpResponse:
    hook = selectors.webhook_get(uuid=uuid)
    services.webhook_delete(webhook=hook, actor=request.user)
    messages.success(request, f"Webhook {hook.name} deleted, with its delivery log.")
    return page_redirect(request, reverse("webhooks:index"))
