"""The form that adds a webhook."""

from django import forms

from judgeapp.judging.errors import InputError
from judgeapp.models import WebhookEvent
from judgeapp.models.webhooks import SUBSCRIBABLE_EVENTS
from judgeapp.webhooks.services import URL_MAX, webhook_url_check

EVENT_CHOICES = [(value, f"{value}: {label}") for value, label in WebhookEvent.choices if value in SUBSCRIBABLE_EVENTS]


class WebhookForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What it is, e.g. release-channel.")
    url = forms.CharField(
        label="Address (URL)", max_length=URL_MAX,
        help_text="http:// or https://, e.g. a Slack incoming webhook. Redirects are not followed.",
    )
    events = forms.MultipleChoiceField(
        choices=EVENT_CHOICES, initial=SUBSCRIBABLE_EVENTS, required=True, widget=forms.CheckboxSelectMultiple,
        help_text="The events sent to it.",
    )

    def clean_url(self):
        try:
            return webhook_url_check(self.cleaned_data["url"])
        except InputError as exc:
            raise forms.ValidationError(str(exc)) from exc
