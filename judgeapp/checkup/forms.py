"""The "Check up" button's form: which public sets, and an optional seeded sample of each."""

from django import forms

from judgeapp.checkup.core import SETS
from judgeapp.judging.forms import trials_field


class CheckupForm(forms.Form):
    sets = forms.MultipleChoiceField(
        choices=[(name, name) for name in SETS], required=False, widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: all of them.",
    )
    sample = forms.IntegerField(required=False, min_value=1, help_text="Pairs drawn from each set; blank: every pair.")
    seed = forms.IntegerField(required=False, help_text="Same seed, same pairs (default 0).")
    trials = trials_field()

    def clean(self):
        data = super().clean()
        if data.get("seed") is not None and data.get("sample") is None:
            self.add_error("seed", "A seed without a sample draws nothing: give the sample size too.")
        return data
