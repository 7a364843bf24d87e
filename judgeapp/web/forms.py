"""The shell's forms: the runs page's filters, a tag put on a run, a prompt of the library."""

from django import forms

from judgeapp.judging.errors import InputError
from judgeapp.judging.library import prompt_name_check
from judgeapp.judging.outcomes import OUTCOMES
from judgeapp.judging.prompts import MAX_PROMPT_CHARS
from judgeapp.models import PromptMode, RunKind
from judgeapp.models.runs import TAG_MAX_LENGTH
from judgeapp.web.selectors import RunFilters


class RunFiltersForm(forms.Form):
    """The runs page's filters, read from the query string (a GET form: it works without JavaScript)."""

    q = forms.CharField(label="Search", required=False, max_length=200, strip=True,
                        help_text="a run's title or id, a system, a test set or a judge")
    kind = forms.ChoiceField(label="Kind", required=False, choices=[("", "any"), *RunKind.choices])
    outcome = forms.ChoiceField(label="Outcome", required=False, choices=[("", "any"), *OUTCOMES])
    system = forms.CharField(label="System", required=False, max_length=100)
    testset = forms.CharField(label="Test set", required=False, max_length=200)
    tag = forms.CharField(label="Tag", required=False, max_length=TAG_MAX_LENGTH)
    since = forms.DateField(label="From", required=False, widget=forms.DateInput(attrs={"type": "date"}),
                            error_messages={"invalid": "Enter a date as YYYY-MM-DD."})
    until = forms.DateField(label="To", required=False, widget=forms.DateInput(attrs={"type": "date"}),
                            error_messages={"invalid": "Enter a date as YYYY-MM-DD."})

    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            self.add_error("until", "The end date is before the start date.")
        return data

    def filters(self) -> RunFilters:
        """The filters that are valid (a field in error is left out, so the page still lists runs); none
        when nothing was asked (an unbound form)."""
        if not self.is_bound:
            return RunFilters()
        self.is_valid()  # each field cleaned: what is valid is in cleaned_data, the rest in errors
        data = self.cleaned_data
        return RunFilters(
            q=data.get("q") or "",
            kind=data.get("kind") or None,
            outcome=data.get("outcome") or None,
            system=data.get("system") or None,
            testset=data.get("testset") or None,
            tag=(data.get("tag") or "").strip().lower() or None,
            since=data.get("since") if "until" not in self.errors else None,
            until=data.get("until") if "until" not in self.errors else None,
        )


class TagForm(forms.Form):
    name = forms.CharField(label="Tag", max_length=TAG_MAX_LENGTH * 2, strip=True)


class PromptForm(forms.Form):
    mode = forms.ChoiceField(
        choices=PromptMode.choices, help_text="The kind of run the prompt judges in; its slots are that mode's."
    )
    name = forms.CharField(
        max_length=50, help_text="Lowercase letters, digits and hyphens, e.g. summaries. The same name saves its next version."
    )
    # A little over the limit, so that a long text gets the check's own words rather than the field's.
    text = forms.CharField(
        max_length=MAX_PROMPT_CHARS * 2, strip=False, label="Prompt text",
        widget=forms.Textarea(attrs={"rows": 16, "class": "mono"}),
        help_text="Every slot of the mode's built-in prompt once, e.g. {{rubric}}, {{input}}, {{output}}; "
        'and the JSON reply with "reasoning" before the verdict.',
    )

    def clean_name(self):
        try:
            return prompt_name_check(self.cleaned_data["name"])
        except InputError as exc:
            raise forms.ValidationError(str(exc)) from None
