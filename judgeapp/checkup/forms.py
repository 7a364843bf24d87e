"""The "Check up" button's form: which public sets, a team's own set (an upload), and an optional seeded
sample of each."""

from django import forms
from django.conf import settings

from judgeapp.checkup.core import SETS, own_pairs
from judgeapp.judging.errors import InputError
from judgeapp.judging.forms import budget_field, trials_field, upload_of


class CheckupForm(forms.Form):
    sets = forms.MultipleChoiceField(
        choices=[(name, name) for name in SETS], required=False, widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: all of them.",
    )
    sample = forms.IntegerField(required=False, min_value=1, help_text="Pairs drawn from each set; blank: every pair.")
    seed = forms.IntegerField(required=False, label="Draw number", help_text="Same draw number, same pairs (default 0).")
    trials = trials_field()
    budget = budget_field()
    own_set = forms.FileField(
        required=False, label="…or your own pairs",
        help_text="JSONL: input, output_1, output_2, label (1, 2 or tie), tags (optional). "
                  "Only it is judged unless sets are ticked.",

    )

    def clean_own_set(self):
        own = upload_of(self.cleaned_data.get("own_set"))
        if own is not None:
            try:
                own_pairs(own.data, own.name, max_pairs=settings.MAX_TESTSET_CASES)
            except InputError as exc:
                raise forms.ValidationError(str(exc)) from None
        return own

    def clean(self):
        data = super().clean()
        if data.get("seed") is not None and data.get("sample") is None:
            self.add_error("seed", "A draw number without a sample draws nothing: give the sample size too.")
        return data
