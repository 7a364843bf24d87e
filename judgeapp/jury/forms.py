"""The form that starts a jury run: inputs, the panel, and the system whose family no juror may share."""

from django import forms

from calibration.selectors import run_preflight
from judgeapp.judging.forms import EndpointChoiceField, InputsForm, cases_in, judges_callable, product, trials_field
from judgeapp.models import System


class PanelField(forms.ModelMultipleChoiceField):
    widget = forms.CheckboxSelectMultiple

    def label_from_instance(self, obj):
        demo = ", scripted demo" if obj.scripted_demo else ""
        return f"{obj.name} ({obj.model}, {obj.effective_family} family{demo})"


class JuryForm(InputsForm):
    judges = PanelField(
        queryset=judges_callable(),
        help_text="Three or more, an odd number, each of a different model family and none of the system's.",
    )
    system = EndpointChoiceField(
        queryset=System.objects.order_by("name"), required=False, label="System under test",
        help_text="No juror may share its family. Without it, the report says the rule was not checked.",
    )
    generate = forms.BooleanField(required=False, label="Have the system answer the test set (instead of its output column)")

    trials = trials_field()

    field_order = ["title", "testset", "testset_file", "rubric", "rubric_file", "judges", "system", "generate", "trials", "run_id"]

    def clean(self):
        cleaned = super().clean()
        # A juror of the system's family is the service's refusal (the seed's rule), not a warning.
        self.preflight(run_preflight(judges=list(cleaned.get("judges") or [])))
        # Every juror judges every case, each asked `trials` times.
        jurors = len(cleaned.get("judges") or []) or None
        self.calls_check(product(cases_in(cleaned.get("testset_input")), jurors, cleaned.get("trials") or 1))
        return cleaned
