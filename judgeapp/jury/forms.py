"""The form that starts a jury run: inputs, the panel, and the system whose family no juror may share."""

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
    output_set_field,
    product,
    trials_field,
    upload_of,
)
from judgeapp.jury.services import jury_estimate
from judgeapp.models import PromptMode, System


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
        help_text="No juror may share its family. Its outputs are judged: a version stored for it, a file below, or replies it "
        "generates; never the test set's own. Without it, the report says the family rule was not checked.",
    )
    output_set = output_set_field()
    outputs_file = forms.FileField(
        required=False, label="…or upload the system's outputs", help_text='JSONL {"id", "output"}, one line for every case.'
    )
    generate = forms.BooleanField(required=False, label="Have the system answer the test set (instead of its output column)")
    prompt = PromptChoiceField()
    trials = trials_field()
    budget = budget_field()

    field_order = ("title", "testset", "testset_file", "rubric", "rubric_file", "judges", "prompt", "system", "output_set",
                   "outputs_file", "generate", "trials", "budget", "run_id")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["prompt"].for_mode(PromptMode.JURY)

    def clean(self):
        cleaned = super().clean()
        cleaned["outputs"] = None
        try:
            cleaned["outputs"] = upload_of(cleaned.get("outputs_file"))
        except forms.ValidationError as exc:
            self.add_error("outputs_file", exc)
        # A juror of the system's family is the service's refusal (the seed's rule), not a warning.
        self.preflight(preflight_for_run(judges=list(cleaned.get("judges") or [])))
        # Every juror judges every case, each asked `trials` times.
        jurors = len(cleaned.get("judges") or []) or None
        self.estimate = self._estimate(cleaned)
        self.calls_check(
            product(cases_in(cleaned.get("testset_input")), jurors, cleaned.get("trials") or 1),
            cost=self.estimate.cost if self.estimate else None,
        )
        return cleaned

    def _estimate(self, data):
        """The run's calls, tokens and cost from its inputs (no juror asked), or None when they do not make a
        run (jury_run_create says why when it is started)."""
        if not (data.get("testset_input") and data.get("rubric_input") and data.get("judges")):
            return None
        try:
            return jury_estimate(
                testset=data["testset_input"], rubric=data["rubric_input"], judges=list(data["judges"]),
                system=data.get("system"), generate=data.get("generate") or False, outputs=data.get("outputs"),
                output_set=data.get("output_set"), trials=data.get("trials"), prompt=data.get("prompt") or None,
            )
        except InputError:
            return None
