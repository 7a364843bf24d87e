"""The form that starts a blind comparison: versions by their real names (server directories, uploads),
the task and the expectations."""

from django import forms

from calibration.selectors.status import preflight_for_run
from judgeapp.blind import services as blind_services
from judgeapp.blind.core.inputs import expectations_from_lines
from judgeapp.judging.errors import InputError
from judgeapp.judging.forms import MultipleFileField, PreflightForm, budget_field, judges_callable

DEFAULT_UPLOAD_ROWS = 2
MAX_UPLOAD_ROWS = 10


class BlindCompareForm(PreflightForm):
    """Versions picked by their real names (server directories, uploads), the task and the expectations.
    The versions are read and checked here; leakage is checked by the service."""

    directories = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Versions from the server",
        help_text="Folders this server may read; each may hold run-* directories, every one of which is compared.",
    )
    prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), label="Eval prompt", help_text="The original task prompt.")
    expectations = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 4}), label="Expectations",
        help_text="One per line; secondary evidence, checked for every version. May be empty.",
    )
    judge = forms.ModelChoiceField(queryset=judges_callable(), empty_label=None)
    budget = budget_field()

    def __init__(self, *args, upload_rows: int = DEFAULT_UPLOAD_ROWS, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["directories"].choices = [
            (c.key, f"{c.real_name} ({c.runs} run{'s' if c.runs != 1 else ''})") for c in blind_services.browse_choices()
        ]

        self.upload_rows = upload_rows
        for i in range(upload_rows):
            self.fields[f"upload_name_{i}"] = forms.CharField(required=False, max_length=300, label=f"Upload {i + 1}: name")
            self.fields[f"upload_files_{i}"] = MultipleFileField(
                required=False, label="Files", help_text="One .zip (may hold run-* directories) or text files (one run)."
            )
        self.versions: list[blind_services.VersionInput] = []

    def upload_fields(self):
        return [(self[f"upload_name_{i}"], self[f"upload_files_{i}"]) for i in range(self.upload_rows)]

    def clean(self):
        cleaned = super().clean()
        for key in cleaned.get("directories") or []:
            try:
                self.versions.append(blind_services.version_from_browse(key))
            except InputError as exc:
                self.add_error("directories", str(exc))
        for i in range(self.upload_rows):
            name, files = cleaned.get(f"upload_name_{i}", ""), cleaned.get(f"upload_files_{i}") or []
            if not name and not files:
                continue
            try:
                self.versions.append(blind_services.version_from_upload(name=name, files=files))
            except InputError as exc:
                self.add_error(f"upload_files_{i}" if name else f"upload_name_{i}", str(exc))
        self.preflight(preflight_for_run(judges=[cleaned.get("judge")]))
        if not self.errors and len(self.versions) < 2:
            raise forms.ValidationError("Pick or upload at least two versions.")
        cleaned["expectation_list"] = expectations_from_lines(cleaned.get("expectations") or "")
        # One call derives the rubric, then one scores each run of each version.
        if self.versions:
            self.calls_check(1 + sum(len(version.content.runs) for version in self.versions))
        return cleaned


def upload_rows_of(value) -> int:
    try:
        return max(DEFAULT_UPLOAD_ROWS, min(MAX_UPLOAD_ROWS, int(value)))
    except (TypeError, ValueError):
        return DEFAULT_UPLOAD_ROWS
