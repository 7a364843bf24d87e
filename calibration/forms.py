import secrets

from django import forms
from django.contrib.auth import get_user_model

from calibration.core.adjudication import MAX_MARGIN
from calibration.models import (
    AgreementMetric,
    AltTestRequirement,
    AnnotatorHandling,
    NonAnswerHandling,
    PolicyAction,
    Sample,
    TieHandling,
)
from calibration.services.adjudication import MAX_NOTE
from calibration.services.annotation import USERNAME_MAX_LENGTH
from calibration.services.samples import MAX_SAMPLE_SIZE
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.judging.content import InputFile
from judgeapp.judging.forms import LargeRunForm, trials_field
from judgeapp.judging.markdown import MAX_MARKDOWN_LENGTH
from judgeapp.models import StructuredOutput
from judgeapp.roles import Role

User = get_user_model()


def calibratable_runs() -> list[tuple[str, str]]:
    choices = []
    for run in judgeapp_selectors.finished_run_list():
        kind = judgeapp_selectors.label_kind_for_run(run=run)
        if kind is None:
            continue
        label = f"{run.run_id} · {run.get_kind_display()}"
        if run.title:
            label += f" · {run.title[:60]}"
        choices.append((run.run_id, label))
    return choices


class SampleForm(forms.Form):
    run = forms.ChoiceField(help_text="A finished pointwise, pairwise or jury run.")
    size = forms.IntegerField(
        min_value=1, max_value=MAX_SAMPLE_SIZE, initial=30, help_text="Items to label; fewer if the run has fewer judged items."
    )
    seed = forms.IntegerField(
        min_value=0, max_value=2**62, label="Draw number",
        help_text="The same run, size and draw number always draw the same items."
    )
    overlap = forms.IntegerField(
        min_value=1, max_value=20, initial=1, help_text="Annotators per item (k). Two or more gives inter-annotator agreement."
    )
    annotators = forms.ModelMultipleChoiceField(queryset=User.objects.none(), widget=forms.CheckboxSelectMultiple)
    instructions = forms.CharField(
        required=False, max_length=MAX_MARKDOWN_LENGTH, widget=forms.Textarea(attrs={"rows": 6}),
        help_text="What the annotators read at the top of their queue and on each item (Markdown; links to http, https "
        "and mailto only). Say nothing of the run, system or judge.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["run"].choices = calibratable_runs()
        self.fields["annotators"].queryset = User.objects.filter(groups__name=Role.ANNOTATOR, is_active=True).order_by("username")
        if not self.is_bound:
            self.initial.setdefault("seed", secrets.randbelow(1_000_000))

    def clean(self):
        data = super().clean()
        annotators = data.get("annotators")
        overlap = data.get("overlap")
        if annotators is not None and overlap and overlap > len(annotators):
            self.add_error("overlap", f"each item can go to at most the {len(annotators)} annotator(s) chosen")
        return data


class LevelForm(forms.Form):
    metric = forms.ChoiceField(choices=AgreementMetric.choices)
    threshold = forms.FloatField(min_value=-1.0, max_value=1.0, help_text="The judge is locked below this value.")
    min_items = forms.IntegerField(min_value=1, max_value=100_000, label="Minimum sample size",
                                   help_text="Labelled items a sample needs before it can lock or unlock a judge.")
    reason = forms.CharField(required=False, max_length=500)

    def __init__(self, *args, **kwargs):
        # The calibration page shows this form beside PolicyForm, which also has a reason: ids must not repeat.
        kwargs.setdefault("auto_id", "level_%s")
        super().__init__(*args, **kwargs)


class UnlockForm(forms.Form):
    reason = forms.CharField(max_length=500, help_text="Why the judge may be trusted without a recalibration.")
    # The lock's scope: a lead unlocks the configuration for one prompt and one rubric version.
    prompt_version = forms.CharField(max_length=64, required=False, widget=forms.HiddenInput)
    rubric_version = forms.CharField(max_length=64, required=False, widget=forms.HiddenInput)


class PolicyForm(forms.Form):
    not_calibrated = forms.ChoiceField(
        choices=PolicyAction.choices, label="An unchecked judge",
        help_text="No person has scored a sample, too few labels, or labels unreliable: warn on the gate, or block it.",
    )
    stale = forms.ChoiceField(
        choices=PolicyAction.choices, label="A stale calibration",
        help_text="The judge's configuration, prompt or rubric changed since its sample.",
    )
    alpha_floor = forms.FloatField(
        min_value=-1.0, max_value=1.0, label="Annotators' alpha floor",
        help_text="Krippendorff's alpha among the people a sample needs before its labels may lock or unlock (0.667 by default).",
    )
    single_annotator_locks = forms.BooleanField(
        required=False, label="Single-annotator samples may lock",
        help_text="Off by default: a sample without overlap warns but cannot lock, since the people's own agreement is unknown.",
    )
    corrected_gate = forms.BooleanField(
        required=False, label="Gate on the human-corrected mean",
        help_text="The lower bound of the PPI++ 95% interval must reach the threshold too.",
    )
    checkup_failed = forms.ChoiceField(
        choices=PolicyAction.choices, label="A failed check-up",
        help_text=(
            "A judge whose latest check-up has a figure below its floor, or is invalid: block every gate "
            "relying on it (the default), or warn."
        ),
    )
    checkup_position_floor = forms.FloatField(
        min_value=0.0, max_value=1.0, label="Check-up floor: position consistency",
        help_text="The share of pairs whose two orders agree, on every set (0.6 by default; GPT-4 65%, GPT-3.5 46% on MT-Bench).",
    )
    checkup_accuracy_floor = forms.FloatField(
        min_value=0.0, max_value=1.0, label="Check-up floor: accuracy over consistent verdicts",
        help_text=(
            "Of the pairs whose orders agree, the share that agree with the people's label (0.6 by "
            "default; GPT-4 85% on MT-Bench)."
        ),
    )
    checkup_kappa_floor = forms.FloatField(
        min_value=-1.0, max_value=1.0, label="Check-up floor: kappa",
        help_text="Cohen's kappa with the people's label, on every set (0.4 by default).",
    )
    alt_test = forms.ChoiceField(
        choices=AltTestRequirement.choices, label="The alternative annotator test",
        help_text="Whether the judge must pass it (three or more annotators per item, 30 items each): when it failed or "
        "could not be decided, warn on the gate or block it. Off by default.",
    )
    alt_test_epsilon = forms.FloatField(
        min_value=0.0, max_value=0.99, label="ε of the alternative annotator test",
        help_text="The advantage granted to the judge for being cheaper and faster (0.2 by default; the paper suggests "
        "0.2 for expert annotators, 0.15 for skilled ones, 0.1 for crowd-workers).",
    )
    undecided = forms.ChoiceField(
        choices=PolicyAction.choices, label="An undecided judge",
        help_text="Its agreement interval reaches across the level: warn on the gate (the default), or block it.",
    )
    annotators = forms.ChoiceField(
        choices=AnnotatorHandling.choices, label="Annotators",
        help_text="How several people's labels of one item meet the judge's verdict (pooled by default).",
    )
    ties = forms.ChoiceField(
        choices=TieHandling.choices, label="Ties (pairwise)",
        help_text="Whether a tie — the person's, or either's — stays in the figure (kept by default).",
    )
    non_answers = forms.ChoiceField(
        choices=NonAnswerHandling.choices, label="The judge's non-answers",
        help_text=(
            "A labelled item the judge gave no usable verdict on (a disagreement by default; an imported "
            "run's are left out, as published)."
        ),
    )
    slice_floor = forms.FloatField(
        required=False, min_value=-1.0, max_value=1.0, label="Floor for the worst slice",
        help_text="The least the worst tag's agreement (the level's metric) may be, on a tag with the level's minimum of "
                  "items; empty: no floor (the default). A smaller tag is shown and never decides.",
    )
    slice_floor_action = forms.ChoiceField(
        choices=PolicyAction.choices, initial=PolicyAction.WARN, label="The worst slice below its floor",
        help_text="Warn on the gate (the default: a tag's sample is small, its interval wide), or block it.",
    )
    reason = forms.CharField(required=False, max_length=500)


class CandidateForm(LargeRunForm):
    """A candidate configuration of the sample's judge; every field starts as the judge is now. It judges each
    of the sample's `items` labelled items `trials` times: a large candidate asks first."""

    label = forms.CharField(required=False, max_length=100, help_text="A short name, e.g. 'stricter scale wording'.")
    model = forms.CharField(max_length=200, help_text="The model the judge's server should use.")
    trials = trials_field()
    structured_output = forms.ChoiceField(choices=StructuredOutput.choices)
    prompt_text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 14, "class": "mono"}), label="Prompt text",
        help_text="Must contain {{rubric}}, {{input}} and {{output}} — and nothing of the people's labels.",
    )
    rubric_text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 12, "class": "mono"}), label="Rubric (TOML or JSON)",
        help_text="Must keep every criterion the sample's items were labelled on.",
    )

    def __init__(self, *args, rubric_name: str = "rubric.toml", items: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.rubric_name = rubric_name
        self.items = items

    def clean(self):
        cleaned = super().clean()
        self.calls_check(self.items * (cleaned.get("trials") or 1))
        return cleaned

    def clean_rubric_text(self):
        text = self.cleaned_data["rubric_text"].replace("\r\n", "\n")
        name = self.rubric_name if self.rubric_name.endswith((".toml", ".json")) else "rubric.toml"
        if text.lstrip().startswith("{"):
            name = name.rsplit(".", 1)[0] + ".json"
        return InputFile(name=name, data=text.encode("utf-8"))


class AdoptForm(forms.Form):
    reason = forms.CharField(required=False, max_length=500, help_text="Why this candidate becomes the judge.")


def active_annotators():
    return User.objects.filter(groups__name=Role.ANNOTATOR, is_active=True).order_by("username")


def samples_to_fill():
    """The samples people label (drawn ones), newest first."""
    return Sample.objects.filter(method=Sample.Method.DRAWN).order_by("-created_at", "-id")


class SampleChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, sample):
        return f"{sample.short_id} · {sample.size} items · {sample.created_at:%Y-%m-%d}"


class AnnotatorInviteForm(forms.Form):
    """A lead makes someone an annotator: a new account (its password shown once) or an existing one."""

    username = forms.CharField(max_length=USERNAME_MAX_LENGTH, help_text="Letters, digits and @ . + - _ only.")
    email = forms.EmailField(required=False, max_length=254, help_text="Optional.")
    sample = SampleChoiceField(
        queryset=Sample.objects.none(), required=False, empty_label="no sample yet", label="Queue",
        help_text="Give them every item of this sample (one more annotator per item).",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["sample"].queryset = samples_to_fill()


class AnnotatorAssignForm(forms.Form):
    """A lead puts an annotator in a sample's queue."""

    annotator = forms.ModelChoiceField(queryset=User.objects.none(), empty_label=None)
    sample = SampleChoiceField(queryset=Sample.objects.none(), empty_label=None)
    every_item = forms.BooleanField(
        required=False, label="Every item (one more annotator per item)",
        help_text="Unticked: only the items that have fewer annotators than the sample asks for.",
    )

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "assign_%s")  # beside the invite form on one page: ids of its own
        super().__init__(*args, **kwargs)
        self.fields["annotator"].queryset = active_annotators()
        self.fields["sample"].queryset = samples_to_fill()


class InstructionsForm(forms.Form):
    instructions = forms.CharField(
        required=False, max_length=MAX_MARKDOWN_LENGTH, widget=forms.Textarea(attrs={"rows": 14}),
        help_text="Markdown: headings, lists, emphasis, links to http, https and mailto. HTML is shown as text. "
        "At most 20,000 characters. Say nothing of the run, system or judge.",
    )

class AdjudicationForm(forms.Form):
    answer = forms.CharField(max_length=10, error_messages={"required": "Choose the resolved label."})
    note = forms.CharField(required=False, max_length=MAX_NOTE, widget=forms.Textarea(attrs={"rows": 2}),
                           help_text="Optional: why this label (kept in the audit log).")


class MarginForm(forms.Form):
    margin = forms.IntegerField(
        min_value=0, max_value=MAX_MARGIN,
        help_text="Items whose highest and lowest scores differ by more than this are resolved by a lead.",
    )
