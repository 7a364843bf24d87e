"""Forms of the pointwise pages: start an evaluation (PointwiseForm) and filter a run's judgments."""

from django import forms

from calibration.selectors.status import preflight_for_run
from judgeapp.judging.content import InputFile
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import MAX_SKELETON_CRITERION, parse_rubric
from judgeapp.judging.forms import (
    InputsForm,
    PromptChoiceField,
    budget_field,
    cases_in,
    criteria_in,
    judges_callable,
    output_set_field,
    product,
    trials_field,
    upload_of,
)
from judgeapp.models import PromptMode, System, UnitStatus
from judgeapp.pointwise.services import pointwise_estimate
from judgeapp.releases.core import DEFAULT_THRESHOLD


def _is_uuid(value: str) -> bool:
    import uuid

    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


RUBRIC_TEXT_MAX = 200_000  # a rubric written in the form, in characters (an upload is bounded by UPLOAD_MAX_BYTES)


class PointwiseForm(InputsForm):
    rubric_text = forms.CharField(
        label="…or write one here", required=False, max_length=RUBRIC_TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 8, "class": "mono"}),
        help_text="TOML, as in evals/. \"Draft a rubric\" writes one from a one-sentence criterion for you to fill in.",
    )
    rubric_criterion = forms.CharField(
        label="Criterion in one sentence", required=False, max_length=MAX_SKELETON_CRITERION,
        help_text="e.g. Is the summary faithful to the source?",
        widget=forms.TextInput(attrs={"form": "rubric-draft"}),  # sent by the rubric helper's own small form
    )
    judge = forms.ModelChoiceField(queryset=judges_callable(), empty_label=None)
    prompt = PromptChoiceField()
    system = forms.ModelChoiceField(
        queryset=System.objects.order_by("name"),
        required=False,
        empty_label="— none (outputs come with the test set) —",
        label="System under test",
        help_text="Its outputs are judged: a version stored for it, a file below, or replies its endpoint generates; "
        "never the test set's own outputs. Its releases are the gate's baseline.",
    )
    output_set = output_set_field()
    outputs_file = forms.FileField(
        required=False, label="…or upload the system's outputs", help_text='JSONL {"id", "output"}, one line for every case.'
    )
    generate = forms.BooleanField(required=False, label="Generate outputs with the system even if the test set has them")
    threshold = forms.FloatField(initial=DEFAULT_THRESHOLD, help_text="The mean score the release gate requires.")
    baseline_mean = forms.FloatField(
        required=False, label="Baseline mean",
        help_text="Leave both empty to compare with the system's last release, like for like on the cases both test sets share.",
    )
    baseline_run = forms.CharField(
        required=False, label="…or baseline run id", max_length=100,
        help_text="A run to compare with like for like: its replies on the shared cases, judged this run's way.",
    )
    trials = trials_field()
    budget = budget_field()

    def __init__(self, *args, outputs_uuid: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["testset_file"].help_text = "JSONL or CSV: id, input, output (output optional when a system generates it)."
        self.fields["rubric_file"].help_text = "TOML or JSON: criteria, each with a 1-5 scale and an example per score."
        self.fields["prompt"].for_mode(PromptMode.POINTWISE)
        if not self.is_bound:
            self._start_from_outputs(outputs_uuid)

    def _start_from_outputs(self, outputs_uuid: str) -> None:
        """The Datasets page's "Judge these outputs" (`?outputs=<uuid>`): their test set, system and version
        picked. An unknown or malformed id picks nothing (a stale link opens the plain form)."""
        found = self.fields["output_set"].queryset.filter(uuid=outputs_uuid).first() if _is_uuid(outputs_uuid) else None
        if found is not None:
            self.initial.update(testset=found.testset_id, system=found.system_id, output_set=found.pk)

    def rubric_input(self, cleaned):
        """A rubric written here is the one used, whatever the picker shows; else the upload or the picked one."""
        written = (cleaned.get("rubric_text") or "").strip()
        if not written:
            return super().rubric_input(cleaned)
        if cleaned.get("rubric_file"):
            self.add_error("rubric_text", "Upload a rubric or write one here, not both.")
            return None
        given = InputFile(data=written.encode("utf-8"), name="rubric.toml")
        try:
            parse_rubric(given.data, given.name)
        except InputError as exc:
            self.add_error("rubric_text", str(exc))
            return None
        return given

    def clean(self):
        data = super().clean()
        data["outputs"] = None
        if data.get("outputs_file"):
            try:
                data["outputs"] = upload_of(data["outputs_file"])
            except forms.ValidationError as exc:
                self.add_error("outputs_file", exc)
        if data.get("baseline_mean") is not None and data.get("baseline_run"):
            self.add_error("baseline_run", "Give a baseline mean or a baseline run, not both.")
        # The checks across fields (outputs or a system to generate them, the threshold on the scale) are
        # pointwise_run_create's; the view shows its refusal on this form.
        self.preflight(preflight_for_run(judges=[data.get("judge")], systems=[data.get("system")]))
        # One call per case and criterion, each asked `trials` times (a baseline judged again adds its own).
        self.estimate = self._estimate(data)
        calls = product(cases_in(data["testset_input"]), criteria_in(data["rubric_input"]), data.get("trials") or 1)
        self.calls_check(calls, cost=self.estimate.cost if self.estimate else None)
        return data

    def _estimate(self, data):
        """The run's calls, tokens and cost from its inputs (no judge call), or None when they do not make a
        run (pointwise_run_create says why when it is started)."""
        if not (data.get("testset_input") and data.get("rubric_input") and data.get("judge")):
            return None
        try:
            return pointwise_estimate(
                testset=data["testset_input"], rubric=data["rubric_input"], judge=data["judge"], system=data.get("system"),
                outputs=data.get("outputs"), output_set=data.get("output_set"), generate=data.get("generate") or False,
                trials=data.get("trials"), prompt=data.get("prompt") or None,
            )
        except InputError:
            return None


class JudgmentFilterForm(forms.Form):
    """The judgments page's filters, from its query string. A value that does not fit is no filter (a
    hand-edited link shows every judgment rather than an error); `filters` gives back what holds."""

    criterion = forms.CharField(required=False, max_length=100)
    score = forms.IntegerField(required=False, min_value=0)
    status = forms.ChoiceField(required=False, choices=[("", "any"), (UnitStatus.DONE, "judged"), (UnitStatus.FAILED, "failed")])

    def __init__(self, data=None):
        super().__init__({k: v for k, v in (data or {}).items() if k in self.base_fields})

    @property
    def filters(self) -> dict:
        """{criterion, score, status}: each the value given when it is valid, else empty."""
        self.is_valid()
        cleaned = {name: ("" if name in self.errors else self.cleaned_data.get(name)) for name in self.fields}
        return {
            "criterion": cleaned["criterion"] or "",
            "score": cleaned["score"] if cleaned["score"] is not None else "",
            "status": cleaned["status"] or "",
        }
