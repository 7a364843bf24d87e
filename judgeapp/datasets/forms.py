"""Forms of the Datasets pages."""

from django import forms

from judgeapp.judging.forms import VersionedChoiceField
from judgeapp.judging.selectors import testsets_for_runs
from judgeapp.models import System, TestSet


class TestSetUploadForm(forms.Form):
    file = forms.FileField(label="Test set file", help_text="JSONL or CSV: id, input, output (output optional).")


class TestSetSaveForm(forms.Form):
    token = forms.CharField(max_length=64, widget=forms.HiddenInput)
    file_name = forms.CharField(max_length=255, widget=forms.HiddenInput)
    name = forms.CharField(max_length=200, label="Save as", help_text="A name already stored gets a new version.")


class RubricUploadForm(forms.Form):
    file = forms.FileField(label="Rubric file", help_text="TOML or JSON: a name and [[criteria]], each with a description, "
                           "a 1-5 scale and an example per score.")

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "rubric_%s")  # the page's other uploads have a `file` field too: ids stay unique
        super().__init__(*args, **kwargs)


class RubricSaveForm(TestSetSaveForm):
    """Step two of a rubric upload: the previewed file (kept under `token`) saved as a version of a name."""

    name = forms.CharField(
        max_length=200, label="Save as", help_text="The file's own name by default; a name already stored gets a new version."
    )


class OutputsUploadForm(forms.Form):
    system = forms.ModelChoiceField(queryset=System.objects.order_by("name"), label="System", empty_label=None)
    version_label = forms.CharField(max_length=50, label="Version label", help_text="As the system's team names it, e.g. v2.1.")
    testset = VersionedChoiceField(queryset=TestSet.objects.none(), label="Test set it answers", empty_label=None)
    file = forms.FileField(label="Outputs file", help_text='JSONL {"id", "output"}, one line for every case of the test set.')

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "outputs_%s")  # the page's test set upload has a `file` field too: ids stay unique
        super().__init__(*args, **kwargs)
        self.fields["testset"].queryset = testsets_for_runs()
        if not self.is_bound:
            # The test set stored last (the one a team has just uploaded), not the first name in the list.
            newest = testsets_for_runs().order_by("-created_at", "-pk").values_list("pk", flat=True).first()
            self.initial.setdefault("testset", newest)


class OutputsSaveForm(forms.Form):
    """Step two of an outputs upload: what the preview showed, stored (the file is kept under `token`)."""

    token = forms.CharField(max_length=64, widget=forms.HiddenInput)
    file_name = forms.CharField(max_length=255, widget=forms.HiddenInput)
    system = forms.ModelChoiceField(queryset=System.objects.all(), widget=forms.HiddenInput)
    version_label = forms.CharField(max_length=50, widget=forms.HiddenInput)
    testset = forms.ModelChoiceField(queryset=TestSet.objects.none(), widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "save_%s")
        super().__init__(*args, **kwargs)
        self.fields["testset"].queryset = testsets_for_runs()


class DiffForm(forms.Form):
    """Two versions of one test set, from the query string; a value that does not fit is no diff."""

    old = forms.UUIDField(required=False)
    new = forms.UUIDField(required=False)


class CasesAddForm(forms.Form):
    name = forms.CharField(
        max_length=200, label="Test set", help_text="A stored test set's name (a new version of it), or a new name."
    )
