"""The form that starts a pairwise run: inputs, the judge, and where each version's replies come from."""

from django import forms

from calibration.selectors.status import preflight_for_run
from judgeapp.judging.errors import InputError
from judgeapp.judging.forms import (
    EndpointChoiceField,
    InputsForm,
    PromptChoiceField,
    budget_field,
    cases_in,
    judges_callable,
    product,
    trials_field,
    upload_of,
)
from judgeapp.judging.pairs import ORDERS
from judgeapp.models import OutputSet, PromptMode, System
from judgeapp.pairwise.services import VersionSource, pairwise_estimate


class StoredOutputsField(forms.ModelChoiceField):
    def label_from_instance(self, obj):
        return f"{obj.system.name} {obj.version_label} — answers {obj.testset.name}, {obj.created_at:%d %b %Y}"


def stored_outputs_field(slot: str) -> StoredOutputsField:
    return StoredOutputsField(
        queryset=OutputSet.objects.select_related("system", "testset").order_by("system__name", "-created_at"), required=False,
        label=f"…or version {slot}: a system version's stored outputs", empty_label="— none —",
    )


class PairwiseForm(InputsForm):
    judge = EndpointChoiceField(queryset=judges_callable(), empty_label=None)
    system_a = EndpointChoiceField(
        queryset=System.objects.order_by("name"), required=False, label="Version A: a system generates its replies"
    )
    a_file = forms.FileField(required=False, label="…or version A's outputs", help_text="JSONL {id, output}.")
    a_stored = stored_outputs_field("A")
    system_b = EndpointChoiceField(
        queryset=System.objects.order_by("name"), required=False, label="Version B: a system generates its replies"
    )
    b_file = forms.FileField(required=False, label="…or version B's outputs", help_text="JSONL {id, output}.")
    b_stored = stored_outputs_field("B")
    sample = forms.IntegerField(required=False, min_value=1, help_text="Compare only this many cases, drawn at random.")
    seed = forms.IntegerField(
        required=False, initial=0, label="Draw number",
        help_text="Same draw number, same cases: both versions see identical inputs."
    )
    prompt = PromptChoiceField()
    trials = trials_field()
    budget = budget_field()

    field_order = ("title", "testset", "testset_file", "rubric", "rubric_file", "judge", "prompt", "system_a", "a_file",
                   "a_stored", "system_b", "b_file", "b_stored", "sample", "seed", "trials", "budget", "run_id")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["prompt"].for_mode(PromptMode.PAIRWISE)

    def clean(self):
        cleaned = super().clean()
        for slot in ("a", "b"):
            system, upload, stored = cleaned.get(f"system_{slot}"), cleaned.get(f"{slot}_file"), cleaned.get(f"{slot}_stored")
            if stored is not None and (system is None or system == stored.system) and not upload:
                cleaned[f"system_{slot}"] = stored.system
                cleaned[f"version_{slot}"] = VersionSource(system=stored.system, output_set=stored)
                continue
            if bool(system) == bool(upload) or stored is not None:
                self.add_error(
                    f"system_{slot}",
                    f"Version {slot.upper()}: choose a system, a system version's stored outputs, or "
                    f"upload its outputs (one of them)."
                )
                continue
            try:
                cleaned[f"version_{slot}"] = VersionSource(system=system, outputs=upload_of(upload))
            except forms.ValidationError as exc:
                self.add_error(f"{slot}_file", exc)
        if cleaned.get("sample") is None:
            cleaned["seed"] = None
        system_a, system_b = cleaned.get("system_a"), cleaned.get("system_b")
        self.preflight(preflight_for_run(
            judges=[cleaned.get("judge")], systems=[system_a, system_b],
            pair=(system_a.name, system_b.name) if system_a and system_b else None,
        ))
        # Each case compared is judged in both orders, each asked `trials` times.
        cases = cases_in(cleaned.get("testset_input"))
        if cases is not None and cleaned.get("sample"):
            cases = min(cases, cleaned["sample"])
        self.estimate = self._estimate(cleaned)
        calls = product(cases, len(ORDERS), cleaned.get("trials") or 1)
        self.calls_check(calls, cost=self.estimate.cost if self.estimate else None)
        return cleaned

    def _estimate(self, data):
        """The run's calls, tokens and cost from its inputs (no judge call), or None when they do not make a
        run (pairwise_run_create says why when it is started)."""
        needed = ("testset_input", "rubric_input", "judge", "version_a", "version_b")
        if not all(data.get(name) for name in needed):
            return None
        try:
            return pairwise_estimate(
                testset=data["testset_input"], rubric=data["rubric_input"], judge=data["judge"], version_a=data["version_a"],
                version_b=data["version_b"], sample=data.get("sample"), seed=data.get("seed"), trials=data.get("trials"),
                prompt=data.get("prompt") or None,
            )
        except InputError:
            return None
