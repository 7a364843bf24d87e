"""Forms of the pointwise pages: start an evaluation, decide on a release, mark a run released."""

from django import forms
from django.conf import settings

from calibration.selectors import run_preflight
from judgeapp.judging.content import testset_check
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import parse_rubric
from judgeapp.judging.forms import PreflightForm, cases_in, criteria_in, judges_callable, product, trials_field
from judgeapp.models import System, UnitStatus
from judgeapp.pointwise.services import RUBRIC_SUFFIXES, TESTSET_SUFFIXES, InputFile, evals_file, evals_files
from judgeapp.releases.core import DEFAULT_THRESHOLD


def _servable(relative: str, suffixes, parse) -> bool:
    """Whether a file in evals/ is a test set (or rubric) at all: a trace JSONL or an agent's flowers.csv is not."""
    try:
        given = evals_file(relative, suffixes)
        parse(given.data, given.name)
    except (InputError, ValueError):
        return False
    return True


def _choices(suffixes, parse) -> list[tuple[str, str]]:
    return [("", "— upload a file instead —")] + [(f, f"evals/{f}") for f in evals_files(suffixes) if _servable(f, suffixes, parse)]


class PointwiseForm(PreflightForm):
    testset_pick = forms.ChoiceField(label="Test set from evals/", required=False)
    testset_file = forms.FileField(
        label="…or upload a test set", required=False, help_text="JSONL or CSV: id, input, output (output optional when a system generates it)."
    )
    rubric_pick = forms.ChoiceField(label="Rubric from evals/", required=False)
    rubric_file = forms.FileField(
        label="…or upload a rubric", required=False, help_text="TOML or JSON: criteria, each with a 1-5 scale and an example per score."
    )
    judge = forms.ModelChoiceField(queryset=judges_callable(), empty_label=None)
    system = forms.ModelChoiceField(
        queryset=System.objects.order_by("name"),
        required=False,
        empty_label="— none (outputs come with the test set) —",
        label="System under test",
        help_text="Generates the outputs when the test set has none; its releases are the gate's baseline.",
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
    title = forms.CharField(required=False, max_length=300)
    trials = trials_field()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["testset_pick"].choices = _choices(TESTSET_SUFFIXES, testset_check)
        self.fields["rubric_pick"].choices = _choices(RUBRIC_SUFFIXES, parse_rubric)
        if not self.is_bound:
            default_testset = next((f for f, _ in self.fields["testset_pick"].choices if f.endswith("testset.jsonl")), "")
            default_rubric = next((f for f, _ in self.fields["rubric_pick"].choices if f.endswith("rubric.toml")), "")
            self.initial.setdefault("testset_pick", default_testset)
            self.initial.setdefault("rubric_pick", default_rubric)

    def _input(self, pick_field: str, file_field: str, suffixes, parse) -> InputFile | None:
        pick, upload = self.cleaned_data.get(pick_field), self.cleaned_data.get(file_field)
        if bool(pick) == bool(upload):
            self.add_error(file_field, "Pick a file from evals/ or upload one (not both).")
            return None
        try:
            if pick:
                given = evals_file(pick, suffixes)
            else:
                if upload.size > settings.UPLOAD_MAX_BYTES:
                    raise InputError(f"{upload.name}: {upload.size:,} bytes is over the limit of {settings.UPLOAD_MAX_BYTES:,}")
                given = InputFile(data=upload.read(), name=upload.name)
            parse(given.data, given.name)
        except InputError as exc:
            self.add_error(file_field if upload else pick_field, str(exc))
            return None
        return given

    def clean(self):
        data = super().clean()
        data["testset"] = self._input("testset_pick", "testset_file", TESTSET_SUFFIXES, testset_check)
        data["rubric"] = self._input("rubric_pick", "rubric_file", RUBRIC_SUFFIXES, parse_rubric)
        if data.get("baseline_mean") is not None and data.get("baseline_run"):
            self.add_error("baseline_run", "Give a baseline mean or a baseline run, not both.")
        # The checks across fields (outputs or a system to generate them, the threshold on the scale) are
        # pointwise_create's; the view shows its refusal on this form.
        self.preflight(run_preflight(judges=[data.get("judge")], systems=[data.get("system")]))
        # One call per case and criterion, each asked `trials` times (a baseline judged again adds its own).
        self.calls_check(product(cases_in(data["testset"]), criteria_in(data["rubric"]), data.get("trials") or 1))
        return data


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
