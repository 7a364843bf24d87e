"""The Datasets pages: every stored test set, rubric, system version's outputs and artifact set by name, an
upload previewed before it is stored, each name's versions with a diff and a download."""

from pathlib import PurePath

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from judgeapp.datasets import selectors, services
from judgeapp.datasets.core import safe_file_name
from judgeapp.datasets.forms import (
    CasesAddForm,
    DiffForm,
    OutputsSaveForm,
    OutputsUploadForm,
    RubricSaveForm,
    RubricUploadForm,
    TestSetSaveForm,
    TestSetUploadForm,
)
from judgeapp.judging.content import InputFile
from judgeapp.judging.errors import InputError
from judgeapp.judging.forms import upload_of
from judgeapp.judging.outputs import output_set_save
from judgeapp.judging.pages import HtmxHttpRequest
from judgeapp.judging.selectors import run_get
from judgeapp.roles import READERS, role_required


def _index(request, *, upload_form=None, outputs_form=None, rubric_form=None, status=200) -> HttpResponse:
    context = {
        **selectors.dataset_list(),
        "upload_form": upload_form or TestSetUploadForm(),
        "outputs_form": outputs_form or OutputsUploadForm(),
        "rubric_form": rubric_form or RubricUploadForm(),
    }
    return render(request, "judgeapp/datasets/index.html", context, status=status)


@role_required(*READERS)
def index(request: HtmxHttpRequest) -> HttpResponse:
    return _index(request)


def _previewed(form, preview_of):
    """Step one of an upload: `preview_of(the uploaded file, the form's data)` (a service that keeps the file
    aside and checks it), or None with the reason on the form's `file` field."""
    if not form.is_valid():
        return None
    try:
        return preview_of(upload_of(form.cleaned_data["file"]), form.cleaned_data)
    except forms.ValidationError as exc:
        form.add_error("file", exc)
    except InputError as exc:
        form.add_error("file", str(exc))
    return None


@require_POST
@role_required(*READERS)
def testset_preview(request: HtmxHttpRequest) -> HttpResponse:
    """Step one: the upload checked line by line and shown; nothing is stored as a test set."""
    form = TestSetUploadForm(request.POST, request.FILES)
    preview = _previewed(form, lambda given, data: services.testset_preview(data=given.data, name=given.name))
    if preview is None:
        return _index(request, upload_form=form, status=400)
    name = PurePath(preview.file_name).stem
    save_form = TestSetSaveForm(initial={"token": preview.token, "file_name": preview.file_name, "name": name})
    return render(request, "judgeapp/datasets/preview.html", {"preview": preview, "save_form": save_form})


@require_POST
@role_required(*READERS)
def testset_save(request: HtmxHttpRequest) -> HttpResponse:
    """Step two: the previewed upload stored as a version of the name given."""

    def stored(saved) -> tuple[str, str, HttpResponse]:
        testset = saved.testset
        return f"{testset.name} v{saved.number}", f"{testset.case_count} cases", redirect("datasets:testset", uuid=testset.uuid)

    return _previewed_save(request, TestSetSaveForm(request.POST), save=services.testset_save_named, stored=stored)


def _diff_asked(request, versions, diff_of) -> dict:
    """{diff, old, new}: the two versions the page's diff form names (?old=…&new=…) and `diff_of` them."""
    by_uuid = {str(v.row.uuid): v for v in versions}
    diff_form = DiffForm(request.GET)
    diff = old = new = None
    if diff_form.is_valid() and diff_form.cleaned_data["old"] and diff_form.cleaned_data["new"]:
        old, new = by_uuid.get(str(diff_form.cleaned_data["old"])), by_uuid.get(str(diff_form.cleaned_data["new"]))
        if old and new:
            diff = diff_of(old=old.row, new=new.row)
    return {"diff": diff, "old": old, "new": new}


def _previewed_save(request, form, *, save, stored) -> HttpResponse:
    """Step two of an upload, for every kind: the previewed file (its token) stored under the name given, with
    who saved it, then its page; the same content again is the version found, and nothing new is stored.
    `stored(saved)`: the version's label, what it holds, and its page."""
    if form.is_valid():
        data = form.cleaned_data
        try:
            saved = save(token=data["token"], file_name=data["file_name"], name=data["name"], created_by=request.user)
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            label, holds, page = stored(saved)
            if saved.created:
                messages.success(request, f"Stored {label}: {holds}.")
            else:
                messages.info(request, f"Already stored as {label}; nothing new was stored.")
            return page
    return render(request, "judgeapp/datasets/save_refused.html", {"form": form}, status=400)


@role_required(*READERS)
def testset_detail(request: HtmxHttpRequest, uuid) -> HttpResponse:
    testset = selectors.testset_get(uuid=uuid)
    if testset is None:
        raise Http404("no such test set")
    versions = selectors.testset_versions_for_name(testset=testset)
    context = {"testset": testset, "versions": versions, **_diff_asked(request, versions, selectors.diff_for_testsets)}
    return render(request, "judgeapp/datasets/testset.html", context)


@role_required(*READERS)
def rubric_detail(request: HtmxHttpRequest, uuid) -> HttpResponse:
    """A rubric's versions (v1 the first stored, when, from where), a diff of two versions' criteria."""
    rubric = selectors.rubric_get(uuid=uuid)
    if rubric is None:
        raise Http404("no such rubric")
    versions = selectors.rubric_versions_for_name(rubric=rubric)
    shown = next((v for v in versions if v.row.uuid == rubric.uuid), None)
    context = {
        "rubric": rubric, "shown": shown, "versions": versions, **_diff_asked(request, versions, selectors.diff_for_rubrics),
        "criteria": rubric.criteria.order_by("position"),
    }
    return render(request, "judgeapp/datasets/rubric.html", context)


def _number(versions, row) -> int:
    """`row`'s version number among its name's versions (0 when it is not listed)."""
    return next((v.number for v in versions if v.row.pk == row.pk), 0)


def _attachment(response, name: str, fallback: str, suffix: str):
    """A download named `name` (a safe file name, `fallback` when none is left) and `suffix`."""
    response["Content-Disposition"] = f'attachment; filename="{safe_file_name(name, fallback)}{suffix}"'
    return response


@role_required(*READERS)
def rubric_download(request: HtmxHttpRequest, uuid) -> HttpResponse:
    """The version as it was stored (TOML or JSON, byte for byte as loaded)."""
    rubric = selectors.rubric_get(uuid=uuid)
    if rubric is None:
        raise Http404("no such rubric")
    number = _number(selectors.rubric_versions_for_name(rubric=rubric), rubric)
    suffix, kind = (".json", "application/json") if rubric.raw.lstrip().startswith("{") else (".toml", "application/toml")
    response = HttpResponse(rubric.raw, content_type=f"{kind}; charset=utf-8")
    return _attachment(response, rubric.name, "rubric", f"-v{number}{suffix}")


@require_POST
@role_required(*READERS)
def rubric_preview(request: HtmxHttpRequest) -> HttpResponse:
    """Step one: the rubric checked criterion by criterion and shown; nothing is stored as a rubric."""
    form = RubricUploadForm(request.POST, request.FILES)
    preview = _previewed(form, lambda given, data: services.rubric_preview(data=given.data, name=given.name))
    if preview is None:
        return _index(request, rubric_form=form, status=400)
    save_form = RubricSaveForm(initial={
        "token": preview.token, "file_name": preview.file_name, "name": preview.rubric_name or PurePath(preview.file_name).stem,
    })
    return render(request, "judgeapp/datasets/rubric_preview.html", {"preview": preview, "save_form": save_form})


@require_POST
@role_required(*READERS)
def rubric_save(request: HtmxHttpRequest) -> HttpResponse:
    """Step two: the previewed rubric stored as a version of the name given, with who saved it."""

    def stored(saved) -> tuple[str, str, HttpResponse]:
        rubric, count = saved.rubric, saved.rubric.criteria.count()
        criteria = f"{count} criteri{'on' if count == 1 else 'a'}"
        return f"rubric {rubric.name} v{saved.number}", criteria, redirect("datasets:rubric", uuid=rubric.uuid)

    return _previewed_save(request, RubricSaveForm(request.POST), save=services.rubric_save_named, stored=stored)


@role_required(*READERS)
def outputs_detail(request: HtmxHttpRequest, uuid) -> HttpResponse:
    """A system version's outputs: the system, its version label, the test set they answer, who stored them and
    when, the first rows and a download."""
    output_set = selectors.output_set_get(uuid=uuid)
    if output_set is None:
        raise Http404("no such outputs")
    context = {"output_set": output_set, "rows": selectors.output_rows_for_set(output_set=output_set)}
    return render(request, "judgeapp/datasets/outputs.html", context)


@role_required(*READERS)
def outputs_download(request: HtmxHttpRequest, uuid) -> HttpResponse:
    """The outputs as JSONL {"id", "output"}, in the order uploaded."""
    output_set = selectors.output_set_get(uuid=uuid)
    if output_set is None:
        raise Http404("no such outputs")
    chunks = selectors.jsonl_for_output_set(output_set=output_set)
    response = StreamingHttpResponse(chunks, content_type="application/x-ndjson; charset=utf-8")
    return _attachment(response, f"{output_set.system.name}-{output_set.version_label}", "outputs", ".jsonl")


@role_required(*READERS)
def artifact_set_detail(request: HtmxHttpRequest, uuid) -> HttpResponse:
    """An artifact set's versions (number, when, how many artifacts, short hash), a diff of two by artifact."""
    artifact_set = selectors.artifact_set_get(uuid=uuid)
    if artifact_set is None:
        raise Http404("no such artifact set")
    versions = selectors.artifact_set_versions_for_name(artifact_set=artifact_set)
    context = {
        "artifact_set": artifact_set, "versions": versions, **_diff_asked(request, versions, selectors.diff_for_artifact_sets),
        "artifacts": artifact_set.artifacts.order_by("artifact_id").only("artifact_id", "size", "content_hash"),
    }
    return render(request, "judgeapp/datasets/artifact_set.html", context)


@role_required(*READERS)
def artifact_set_download(request: HtmxHttpRequest, uuid) -> HttpResponse:
    """The version's artifacts as a zip (one file each, safe names, at most selectors.ZIP_MAX_BYTES)."""
    artifact_set = selectors.artifact_set_get(uuid=uuid)
    if artifact_set is None:
        raise Http404("no such artifact set")
    try:
        data = selectors.zip_for_artifact_set(artifact_set=artifact_set)
    except InputError as exc:
        return HttpResponse(f"{exc}\n", status=413, content_type="text/plain; charset=utf-8")
    number = _number(selectors.artifact_set_versions_for_name(artifact_set=artifact_set), artifact_set)
    return _attachment(HttpResponse(data, content_type="application/zip"), artifact_set.name, "artifacts", f"-v{number}.zip")


@role_required(*READERS)
def testset_download(request: HtmxHttpRequest, uuid) -> HttpResponse:
    testset = selectors.testset_get(uuid=uuid)
    if testset is None:
        raise Http404("no such test set")
    number = _number(selectors.testset_versions_for_name(testset=testset), testset)
    response = StreamingHttpResponse(
        selectors.jsonl_for_testset(testset=testset), content_type="application/x-ndjson; charset=utf-8"
    )
    return _attachment(response, testset.name, "testset", f"-v{number}.jsonl")


def _outputs_stored(request, output_set, created: bool) -> HttpResponse:
    if created:
        messages.success(request, f"Stored {output_set}: {output_set.row_count} outputs for {output_set.testset.name}.")
    else:
        messages.info(request, f"Already stored as {output_set}; nothing new was stored.")
    return redirect("datasets:index")


@require_POST
@role_required(*READERS)
def outputs_preview(request: HtmxHttpRequest) -> HttpResponse:
    """Step one: a system version's outputs checked line by line against the test set and shown; nothing is
    stored as outputs."""
    form = OutputsUploadForm(request.POST, request.FILES)
    preview = _previewed(
        form, lambda given, data: services.outputs_preview(data=given.data, name=given.name, testset=data["testset"])
    )
    if preview is None:
        return _index(request, outputs_form=form, status=400)
    data = form.cleaned_data
    save_form = OutputsSaveForm(initial={
        "token": preview.token, "file_name": preview.file_name, "system": data["system"].pk,
        "version_label": data["version_label"], "testset": data["testset"].pk,
    })
    context = {
        "preview": preview, "save_form": save_form, "system": data["system"], "version_label": data["version_label"],
        "testset": data["testset"],
    }
    return render(request, "judgeapp/datasets/outputs_preview.html", context)


@require_POST
@role_required(*READERS)
def outputs_add(request: HtmxHttpRequest) -> HttpResponse:
    """A system version's outputs for a test set: the previewed upload (its token), or a file posted at once;
    stored, or found again when the same file was stored."""
    if "token" in request.POST:
        save_form = OutputsSaveForm(request.POST)
        if save_form.is_valid():
            data = save_form.cleaned_data
            try:
                output_set, created = services.outputs_save_pending(
                    token=data["token"], file_name=data["file_name"], system=data["system"], version_label=data["version_label"],
                    testset=data["testset"], created_by=request.user,
                )
            except InputError as exc:
                save_form.add_error(None, str(exc))
            else:
                return _outputs_stored(request, output_set, created)
        return render(request, "judgeapp/datasets/save_refused.html", {"form": save_form}, status=400)
    form = OutputsUploadForm(request.POST, request.FILES)
    if form.is_valid():
        data = form.cleaned_data
        try:
            given: InputFile = upload_of(data["file"])
            output_set, created = output_set_save(
                system=data["system"], version_label=data["version_label"], testset=data["testset"], outputs=given,
                created_by=request.user
            )
        except forms.ValidationError as exc:
            form.add_error("file", exc)
        except InputError as exc:
            form.add_error("file", str(exc))
        else:
            return _outputs_stored(request, output_set, created)
    return _index(request, outputs_form=form, status=400)


@require_POST
@role_required(*READERS)
def cases_add(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """"Add these cases to a test set" from a run's page: its lowest-scoring cases, as a new version."""
    run = run_get(run_id=run_id)
    form = CasesAddForm(request.POST)
    if form.is_valid():
        try:
            appended = services.testset_cases_append(
                run=run, case_ids=services.run_lowest_case_ids(run), name=form.cleaned_data["name"], created_by=request.user
            )
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            skipped = f"; {appended.skipped} already in it, skipped" if appended.skipped else ""
            messages.success(
                request,
                f"{appended.testset.name} v{appended.number}: {appended.added} "
                f"case{'s' if appended.added != 1 else ''} added{skipped}."
            )
            return redirect("datasets:testset", uuid=appended.testset.uuid)
    return render(request, "judgeapp/datasets/save_refused.html", {"form": form}, status=400)
