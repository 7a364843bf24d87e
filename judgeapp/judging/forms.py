"""Form pieces more than one page uses."""

from django import forms


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
