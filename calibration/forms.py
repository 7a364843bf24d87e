import secrets

from django import forms
from django.contrib.auth import get_user_model

from calibration.models import AgreementMetric
from calibration.services.samples import MAX_SAMPLE_SIZE
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.roles import Role

User = get_user_model()


def calibratable_runs() -> list[tuple[str, str]]:
    choices = []
    for run in judgeapp_selectors.runs_finished():
        kind = judgeapp_selectors.run_label_kind(run=run)
        if kind is None:
            continue
        label = f"{run.run_id} · {run.get_kind_display()}"
        if run.title:
            label += f" · {run.title[:60]}"
        choices.append((run.run_id, label))
    return choices


class SampleForm(forms.Form):
    run = forms.ChoiceField(help_text="A finished pointwise, pairwise or jury run.")
    size = forms.IntegerField(min_value=1, max_value=MAX_SAMPLE_SIZE, initial=30, help_text="Items to label; fewer if the run has fewer judged items.")
    seed = forms.IntegerField(min_value=0, max_value=2**62, help_text="The same run, size and seed always draw the same items.")
    overlap = forms.IntegerField(min_value=1, max_value=20, initial=1, help_text="Annotators per item (k). Two or more gives inter-annotator agreement.")
    annotators = forms.ModelMultipleChoiceField(queryset=User.objects.none(), widget=forms.CheckboxSelectMultiple)

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


class UnlockForm(forms.Form):
    reason = forms.CharField(max_length=500, help_text="Why the judge may be trusted without a recalibration.")
