"""A run's inputs as the API receives them: an uploaded file (bounded before it is read) or a stored version,
never both."""

from __future__ import annotations

from django.conf import settings

from judgeapp.api import selectors
from judgeapp.judging.content import InputFile
from judgeapp.judging.errors import InputError
from judgeapp.models import Rubric, TestSet


class PayloadTooLarge(Exception):
    """An upload over UPLOAD_MAX_BYTES: the API answers 413."""


# --- Inputs: a file or a stored version -------------------------------------------------------------------


def upload_read(upload, what: str) -> InputFile:
    """An uploaded file's bytes, refused (413) over UPLOAD_MAX_BYTES before it is read."""
    if upload.size > settings.UPLOAD_MAX_BYTES:
        raise PayloadTooLarge(
            f"{what} {upload.name}: {upload.size:,} bytes is over the limit of {settings.UPLOAD_MAX_BYTES:,} (UPLOAD_MAX_BYTES)"
        )
    return InputFile(data=upload.read(), name=upload.name or what)


def uploads_read(**uploads) -> dict[str, InputFile]:
    """The files a request carried, by field name (the ones it left out are not there)."""
    return {what: upload_read(upload, what) for what, upload in uploads.items() if upload is not None}


def testset_input(file: InputFile | None, version: str | None) -> TestSet | InputFile:
    if (file is None) == (not version):
        raise InputError("give the test set as a file (testset) or a stored version (testset_version), one of them")
    return file if file is not None else selectors.testset_for_reference(reference=version)


def rubric_input(file: InputFile | None, version: str | None) -> Rubric | InputFile:
    if (file is None) == (not version):
        raise InputError("give the rubric as a file (rubric) or a stored version (rubric_version), one of them")
    return file if file is not None else selectors.rubric_for_reference(reference=version)
