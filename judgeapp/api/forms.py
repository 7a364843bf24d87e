"""The profile page's form: a new API token's name."""

from django import forms

from judgeapp.api.services import NAME_MAX


class TokenCreateForm(forms.Form):
    name = forms.CharField(
        max_length=NAME_MAX, required=False, help_text="What the token is for, e.g. github-actions. Shown beside its last use."
    )
