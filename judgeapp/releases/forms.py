"""A lead's decision on a gate, and marking a run released."""

from django import forms

from judgeapp.models import GateDecision


class GateDecisionForm(forms.Form):
    verdict = forms.ChoiceField(choices=GateDecision.Verdict.choices)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=2000, help_text="Kept in the audit log.")


class ReleaseForm(forms.Form):
    label = forms.CharField(required=False, max_length=100, help_text="The version shipped, e.g. v2.4.0.")
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), max_length=2000)
