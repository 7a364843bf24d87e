"""A lead's decision on a gate, marking a run released, the release policy, and two runs to compare."""

from decimal import Decimal

from django import forms
from django.conf import settings

from judgeapp.judging.selectors import run_get_for_id
from judgeapp.models import BaselineRule, GateAction, GateDecision, RunKind


class GateDecisionForm(forms.Form):
    verdict = forms.ChoiceField(choices=GateDecision.Verdict.choices)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=2000, help_text="Kept in the audit log.")


class ReleaseForm(forms.Form):
    label = forms.CharField(required=False, max_length=100, help_text="The version shipped, e.g. v2.4.0.")
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), max_length=2000)


class ReleasePolicyForm(forms.Form):
    baseline_rule = forms.ChoiceField(
        choices=BaselineRule.choices, label="A run compared with its baseline is blocked when",
        help_text="Compared on the cases both test sets share, judged the same way.",
    )
    skipped_baseline = forms.ChoiceField(
        choices=GateAction.choices, label="A baseline that cannot be compared (no shared case, no replies kept)",
    )
    injection_flags = forms.ChoiceField(
        choices=GateAction.choices, label="Judged content that addresses the judge (prompt injection)",
    )
    flaky = forms.ChoiceField(
        choices=GateAction.choices, required=False,
        label="A flaky gate: the threshold or the baseline inside the trials' noise band",
        help_text="Runs with --trials K of 2 or more; left empty: as it is now.",
    )
    large_run_calls = forms.IntegerField(
        required=False, min_value=1, max_value=10_000_000,
        label="A run started from a page asks first above this many judge calls",
        help_text=f"Empty: the deployment's default ({settings.LARGE_RUN_CALLS:,}, LARGE_RUN_CALLS).",
    )
    large_run_cost = forms.DecimalField(
        required=False, min_value=Decimal("0.01"), max_digits=12, decimal_places=2,
        label="…or above this estimated cost (USD)",
        help_text=f"Empty: the deployment's default (${settings.LARGE_RUN_COST}, LARGE_RUN_COST). The check-up always asks.",
    )
    reason = forms.CharField(required=False, max_length=2000, widget=forms.TextInput(), help_text="Kept in the audit log.")


class CompareForm(forms.Form):
    """Two pointwise runs to put side by side: `run` (the candidate) against `baseline`."""

    run = forms.CharField(max_length=100, label="Run")
    baseline = forms.CharField(max_length=100, label="against")
    criterion = forms.CharField(required=False, max_length=100, label="Criterion")

    def _pointwise(self, field: str):
        run_id = self.cleaned_data[field].strip()
        run = run_get_for_id(run_id=run_id)
        if run is None:
            raise forms.ValidationError(f"No run {run_id!r}.")
        if run.kind != RunKind.POINTWISE:
            raise forms.ValidationError(
                f"Run {run_id} is a {run.get_kind_display()} run; only pointwise runs are compared case by case."
            )
        return run

    def clean_run(self):
        return self._pointwise("run")

    def clean_baseline(self):
        return self._pointwise("baseline")
