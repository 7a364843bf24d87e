"""Form pieces more than one page uses."""

from django import forms
from django.conf import settings

from judgeapp.judging.accounting import money_text
from judgeapp.judging.content import InputFile, testset_cases, testset_check
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import parse_rubric
from judgeapp.judging.library import library
from judgeapp.models import EndpointSource, Judge, Rubric, TestSet


def trials_field() -> forms.IntegerField:
    """The run forms' trials (CLI --trials K): each judgment asked K times, and the judge's noise reported."""
    from judgeapp.judging.noise import MAX_TRIALS

    return forms.IntegerField(
        required=False, min_value=1, max_value=MAX_TRIALS, initial=1, label="Trials",
        help_text=f"Ask every judgment this many times (1–{MAX_TRIALS}) to see the judge's run-to-run noise; "
        "the verdict used is the trials' majority or mean score.",
    )


def budget_field() -> forms.DecimalField:
    """The run forms' spend cap in dollars (CLI --budget, judging/costs.py): the create service's `budget=`, which
    refuses it for a judge without prices (budget_check's line, shown on the form)."""
    from decimal import Decimal

    return forms.DecimalField(
        required=False, label="Budget (USD)", min_value=Decimal("0.0001"), max_digits=12, decimal_places=4,
        help_text="Stop the run once its judge calls have cost this much (the judge needs prices): the report says "
        "stopped: budget with what was judged, and the run is invalid. Empty: no cap.",
    )


class PromptChoiceField(forms.ChoiceField):
    """The run forms' judge prompt (CLI --prompt): the built-in one, or a prompt of the library by name (its
    latest version) or one of its versions. The choices are read when the form is made (`for_mode`)."""

    def __init__(self, **kwargs):
        super().__init__(
            required=False, label="Prompt",
            help_text="The judge's instructions. A team's own prompts (same slots, checked on save) are on the Prompts page.",
            **kwargs,
        )

    def for_mode(self, mode: str) -> None:
        choices = [("", "default (built-in)")]
        for entry in library(mode=mode)[1:]:
            versions = entry["versions"]
            choices.append((entry["name"], f"{entry['name']} (latest, {versions[-1].label})"))
            choices += [(f"{entry['name']}@{v.label}", f"{entry['name']} {v.label}") for v in reversed(versions[:-1])]
        self.choices = choices


def judges_callable():
    """The judges a new run may use: an imported judge (its verdicts brought in) has no endpoint to call."""
    return Judge.objects.exclude(source=EndpointSource.IMPORT).order_by("name")


def judge_default_pk() -> int | None:
    judges = judges_callable()
    judge = judges.filter(name="default").first() or judges.filter(is_default=True).first()
    return judge.pk if judge else None


def cases_in(testset: TestSet | InputFile | None) -> int | None:
    """Cases of a stored test set or of a file given to a form; None when it cannot be read (its field says why)."""
    if isinstance(testset, TestSet):
        return testset.case_count
    if testset is None:
        return None
    try:
        return sum(1 for _case in testset_cases(testset.data, testset.name))
    except (InputError, ValueError):
        return None


def criteria_in(rubric: Rubric | InputFile | None) -> int | None:
    """Criteria of a stored rubric or of a file given to a form; None when it cannot be read."""
    if isinstance(rubric, Rubric):
        return rubric.criteria.count()
    if rubric is None:
        return None
    try:
        return len(parse_rubric(rubric.data, rubric.name).criteria)
    except (InputError, ValueError):
        return None


def product(*factors: int | None) -> int | None:
    """A run's judge calls from its factors (cases × criteria × trials, …); None when one is unknown."""
    total = 1
    for factor in factors:
        if factor is None:
            return None
        total *= factor
    return total


class LargeRunForm(forms.Form):
    """A form that starts a run which may be large: a run of more judge calls, or dollars, than the limits a lead
    set in the release policy (else LARGE_RUN_CALLS and LARGE_RUN_COST) starts only when the form's "Start this
    run of about N judge calls" was ticked for this N (`_large_run.html`); else the form comes back saying so,
    and nothing is started. The mode's `clean()` calls `calls_check(estimate)`."""

    # The checkbox's value is the figure it was shown with, so that a tick given for 600 calls does not start
    # a run whose inputs have since grown to 6,000.
    large_run_confirm = forms.CharField(required=False, max_length=20)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: int | None = None
        self.cost = None  # the estimate's dollars (judging/costs.py), None when unknown or unpriced
        self.limits = None  # the large-run limits in force, read when the estimate is checked

    @property
    def large_run(self) -> bool:
        if self.calls is None:
            return False
        costly = self.cost is not None and self.cost > self.limits.cost
        return self.calls > self.limits.calls or costly

    @property
    def calls_text(self) -> str:
        return f"{self.calls:,}" if self.calls is not None else ""

    @property
    def large_run_label(self) -> str:
        cost = f" (about {money_text(self.cost)})" if self.cost is not None else ""
        return f"Start this run of about {self.calls_text} judge calls{cost}"

    def calls_check(self, calls: int | None, cost=None) -> None:
        """`calls`: the mode's estimate from the inputs (None when the inputs could not be read); `cost`: what
        they would cost in dollars, when the mode estimates it and the judge is priced."""
        from judgeapp.judging.selectors import large_run_limits_get

        self.calls, self.cost, self.limits = calls, cost, large_run_limits_get()
        if self.large_run and self.cleaned_data.get("large_run_confirm") != str(calls):
            if calls > self.limits.calls:
                why = f"asks the judge about {self.calls_text} times, more than the {self.limits.calls:,} that start"
            else:
                why = f"would cost about {money_text(cost)}, more than the {money_text(self.limits.cost)} that start"
            self.add_error(
                "large_run_confirm", f"This run {why} without a question: tick \u201c{self.large_run_label}\u201d to start it."
            )


class PreflightForm(LargeRunForm):
    """A form that starts a run: it shows what the app already knows (judging/preflight.py) as its fields
    change (htmx, `templates/judgeapp/_preflight.html`), and a warning that matters needs "start anyway".
    The mode's `clean()` calls `preflight(warnings)` with `calibration.selectors.status.preflight_for_run`'s answer."""

    confirm = forms.BooleanField(required=False, label="Start anyway: I have read the warnings above")
    # The warnings region's id (`_preflight.html`): a page with two such forms (the ranker's) names each.
    preflight_id = "preflight"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.warnings = []
        if not self.is_bound and "judge" in self.fields and not self.initial.get("judge"):
            # The judge a command without --judge uses (JUDGE_MODEL's, else the judges file's default), not
            # the first name in the list.
            self.initial["judge"] = judge_default_pk()

    @property
    def needs_confirm(self) -> bool:
        return any(w.confirm for w in self.warnings)

    def preflight(self, warnings) -> None:
        self.warnings = list(warnings)
        if self.needs_confirm and not self.cleaned_data.get("confirm"):
            self.add_error("confirm", "Read the warnings above, then tick \"Start anyway\" to start the run.")


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one field: cleans each, and names the file in an error (there may be dozens)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        items = list(data) if isinstance(data, (list, tuple)) else ([data] if data else [])
        cleaned = []
        for item in items:
            try:
                cleaned.append(super().clean(item, initial))
            except forms.ValidationError as exc:
                raise forms.ValidationError(f"{getattr(item, 'name', 'a file')}: {' '.join(exc.messages)}") from None
        return cleaned


class VersionedChoiceField(forms.ModelChoiceField):
    """A stored test set or rubric by name and version number: "support (v3, 24 cases)"."""

    def label_from_instance(self, obj):
        from judgeapp.judging.selectors import version_numbers_for_model

        if getattr(self, "_numbers", None) is None:
            self._numbers = version_numbers_for_model(type(obj))
        count = f", {obj.case_count} cases" if isinstance(obj, TestSet) else ""
        return f"{obj.name} (v{self._numbers.get(obj.pk, '?')}{count})"


class EndpointChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj):
        demo = ", scripted demo" if obj.scripted_demo else ""
        return f"{obj.name} ({obj.model}, {obj.effective_family}{demo})"


class OutputSetChoiceField(forms.ModelChoiceField):
    """A system version's stored outputs: "support-bot v2.1 — answers support, 24 outputs, 03 Dec 2026"."""

    def label_from_instance(self, obj):
        answers = f"answers {obj.testset.name}, {obj.row_count} outputs, {obj.created_at:%d %b %Y}"
        return f"{obj.system.name} {obj.version_label} — {answers}"


def output_set_field() -> OutputSetChoiceField:
    from judgeapp.models import OutputSet

    return OutputSetChoiceField(
        queryset=OutputSet.objects.select_related("system", "testset").order_by("system__name", "-created_at"),
        required=False, label="System version's outputs", empty_label="— the system's newest for this test set —",
        help_text="Outputs stored on the Datasets page for a system version.",
    )


def upload_of(upload) -> InputFile | None:
    if upload is None:
        return None
    if upload.size > settings.UPLOAD_MAX_BYTES:
        raise forms.ValidationError(f"{upload.name}: {upload.size:,} bytes is over the limit of {settings.UPLOAD_MAX_BYTES:,}")
    return InputFile(data=upload.read(), name=upload.name)


class InputsForm(PreflightForm):
    """The inputs of every run judged on a test set and a rubric (pointwise, pairwise, the jury): a version
    stored on the Datasets page, picked by name, or a file uploaded in place. An upload wins over the picker
    (which starts preselected) and is read here, so that a bad line is the file field's error; the run's
    `testset_input` and `rubric_input` are a stored version or the uploaded file."""

    title = forms.CharField(required=False, max_length=300)
    run_id = forms.CharField(required=False, max_length=100, label="Run id", help_text="Optional; default <utc>_<short-uuid>.")
    testset = VersionedChoiceField(queryset=TestSet.objects.order_by("name", "-created_at"), required=False, label="Test set",
                                   empty_label="— upload a file instead —")
    testset_file = forms.FileField(
        required=False, label="…or upload a test set", help_text="JSONL or CSV: id, input (output optional)."
    )
    rubric = VersionedChoiceField(
        queryset=Rubric.objects.order_by("name", "-created_at"), required=False, empty_label="— upload a file instead —"
    )
    rubric_file = forms.FileField(required=False, label="…or upload a rubric", help_text="TOML or JSON.")

    def __init__(self, *args, **kwargs):
        from judgeapp.judging.selectors import testsets_for_runs

        super().__init__(*args, **kwargs)
        self.fields["testset"].queryset = testsets_for_runs()
        if not self.is_bound:
            # The demo's support set and rubric when they are stored, else the newest a run may use (never the
            # check-up's 999-case public pair set); an upload still wins over them.
            self.initial.setdefault("testset", _newest(testsets_for_runs(), "support"))
            self.initial.setdefault("rubric", _newest(Rubric.objects.all(), "support-quality"))

    def _one_of(self, cleaned, stored: str, upload: str, what: str, parse):
        if not cleaned.get(stored) and not cleaned.get(upload):
            self.add_error(stored, f"Choose a stored {what} or upload one.")
            return None
        try:
            given = upload_of(cleaned.get(upload))
            if given is not None:
                parse(given.data, given.name)
        except forms.ValidationError as exc:
            self.add_error(upload, exc)
            return None
        except InputError as exc:
            self.add_error(upload, str(exc))
            return None
        return given or cleaned.get(stored)

    def rubric_input(self, cleaned):
        """The rubric the run uses (pointwise's form also takes one written in place)."""
        return self._one_of(cleaned, "rubric", "rubric_file", "rubric", parse_rubric)

    def clean(self):
        cleaned = super().clean()
        cleaned["testset_input"] = self._one_of(cleaned, "testset", "testset_file", "test set", testset_check)
        cleaned["rubric_input"] = self.rubric_input(cleaned)
        return cleaned


def run_arguments(data: dict, *, created_by) -> dict:
    """What every run-starting service takes from an InputsForm's cleaned data: the inputs, trials, prompt,
    run id, title and budget, queued on the workers, with who started it."""
    from judgeapp.models import Executor

    return {
        "testset": data["testset_input"], "rubric": data["rubric_input"], "trials": data.get("trials"),
        "prompt": data.get("prompt") or None, "run_id": data.get("run_id") or None, "title": data.get("title") or "",
        "executor": Executor.CELERY, "created_by": created_by, "budget": data.get("budget"),
    }


def _newest(rows, demo_name: str):
    """The pk of the newest version named as the demo's, else of the newest; None: none stored."""
    found = rows.filter(name=demo_name).order_by("-created_at").first() or rows.order_by("-created_at").first()
    return found.pk if found else None
