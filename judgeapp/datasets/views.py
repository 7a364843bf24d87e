"""The Datasets pages: every stored test set, rubric and system version's outputs by name, an upload
previewed before it is stored, a test set's versions with a diff and a download."""

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from judgeapp.datasets import selectors, services
from judgeapp.datasets.forms import DiffForm, OutputsSaveForm, OutputsUploadForm, TestSetSaveForm, TestSetUploadForm
from judgeapp.judging.content import InputFile, output_set_save
from judgeapp.judging.errors import InputError
from judgeapp.judging.forms import upload_of
from judgeapp.judging.pages import HtmxHttpRequest
from judgeapp.roles import READERS, role_required


def _index(request, *, upload_form=None, outputs_form=None, status=200) -> HttpResponse:
    context = {
        **selectors.datasets_overview(),
        "upload_form": upload_form or TestSetUploadForm(),
        "outputs_form": outputs_form or OutputsUploadForm(),
    }
    return render(request, "judgeapp/datasets/index.html", context, status=status)


@role_required(*READERS)
def index(request: HtmxHttpRequest) -> HttpResponse:
    return _index(request)


@require_POST
@role_required(*READERS)
def testset_preview(request: HtmxHttpRequest) -> HttpResponse:
    """Step one: the upload checked line by line and shown; nothing is stored as a test set."""
    form = TestSetUploadForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            given = upload_of(form.cleaned_data["file"])
            preview = services.testset_preview(data=given.data, name=given.name)
        except forms.ValidationError as exc:
            form.add_error("file", exc)
        except InputError as exc:
            form.add_error("file", str(exc))
        else:
            from pathlib import PurePath

            save_form = TestSetSaveForm(initial={"token": preview.token, "file_name": preview.file_name, "name": PurePath(preview.file_name).stem})
            return render(request, "judgeapp/datasets/preview.html", {"preview": preview, "save_form": save_form})
    return _index(request, upload_form=form, status=400)


@require_POST
@role_required(*READERS)
def testset_save(request: HtmxHttpRequest) -> HttpResponse:
    """Step two: the previewed upload stored as a version of the name given."""
    form = TestSetSaveForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            saved = services.testset_save_named(token=data["token"], file_name=data["file_name"], name=data["name"], created_by=request.user)
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            if saved.created:
                messages.success(request, f"Stored {saved.testset.name} v{saved.number}: {saved.testset.case_count} cases.")
            else:
                messages.info(request, f"Already stored as {saved.testset.name} v{saved.number}; nothing new was stored.")
            return redirect("datasets:testset", uuid=saved.testset.uuid)
    return render(request, "judgeapp/datasets/save_refused.html", {"form": form}, status=400)


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


@role_required(*READERS)
def testset_detail(request: HtmxHttpRequest, uuid) -> HttpResponse:
    testset = selectors.testset_get(uuid=uuid)
    if testset is None:
        raise Http404("no such test set")
    versions = selectors.testset_versions(testset=testset)
    context = {"testset": testset, "versions": versions, **_diff_asked(request, versions, selectors.testset_diff)}
    return render(request, "judgeapp/datasets/testset.html", context)


@role_required(*READERS)
def rubric_detail(request: HtmxHttpRequest, uuid) -> HttpResponse:
    """A rubric's versions (v1 the first stored, when, from where), a diff of two versions' criteria."""
    rubric = selectors.rubric_get(uuid=uuid)
    if rubric is None:
        raise Http404("no such rubric")
    versions = selectors.rubric_versions(rubric=rubric)
    shown = next((v for v in versions if v.row.uuid == rubric.uuid), None)
    context = {"rubric": rubric, "shown": shown, "versions": versions, **_diff_asked(request, versions, selectors.rubric_diff),
               "criteria": rubric.criteria.order_by("position")}
    return render(request, "judgeapp/datasets/rubric.html", context)


@role_required(*READERS)
def rubric_download(request: HtmxHttpRequest, uuid) -> HttpResponse:
    """The version as it was stored (TOML or JSON, byte for byte as loaded)."""
    rubric = selectors.rubric_get(uuid=uuid)
    if rubric is None:
        raise Http404("no such rubric")
    number = next((v.number for v in selectors.rubric_versions(rubric=rubric) if v.row.pk == rubric.pk), 0)
    suffix, kind = (".json", "application/json") if rubric.raw.lstrip().startswith("{") else (".toml", "application/toml")
    response = HttpResponse(rubric.raw, content_type=f"{kind}; charset=utf-8")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in rubric.name)[:100] or "rubric"
    response["Content-Disposition"] = f'attachment; filename="{safe}-v{number}{suffix}"'
    return response


@role_required(*READERS)
def testset_download(request: HtmxHttpRequest, uuid) -> HttpResponse:
    testset = selectors.testset_get(uuid=uuid)
    if testset is None:
        raise Http404("no such test set")
    number = next((v.number for v in selectors.testset_versions(testset=testset) if v.row.pk == testset.pk), 0)
    response = StreamingHttpResponse(selectors.testset_jsonl_chunks(testset=testset), content_type="application/x-ndjson; charset=utf-8")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in testset.name)[:100] or "testset"
    response["Content-Disposition"] = f'attachment; filename="{safe}-v{number}.jsonl"'
    return response


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
    if form.is_valid():
        data = form.cleaned_data
        try:
            given: InputFile = upload_of(data["file"])
            preview = services.outputs_preview(data=given.data, name=given.name, testset=data["testset"])
        except forms.ValidationError as exc:
            form.add_error("file", exc)
        except InputError as exc:
            form.add_error("file", str(exc))
        else:
            save_form = OutputsSaveForm(initial={
                "token": preview.token, "file_name": preview.file_name, "system": data["system"].pk,
                "version_label": data["version_label"], "testset": data["testset"].pk,
            })
            context = {
                "preview": preview, "save_form": save_form, "system": data["system"], "version_label": data["version_label"],
                "testset": data["testset"],
            }
            return render(request, "judgeapp/datasets/outputs_preview.html", context)
    return _index(request, outputs_form=form, status=400)


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
                system=data["system"], version_label=data["version_label"], testset=data["testset"], outputs=given, created_by=request.user
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
    from judgeapp.datasets.forms import CasesAddForm
    from judgeapp.judging.selectors import run_get

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
                request, f"{appended.testset.name} v{appended.number}: {appended.added} case{'s' if appended.added != 1 else ''} added{skipped}."
            )
            return redirect("datasets:testset", uuid=appended.testset.uuid)
    return render(request, "judgeapp/datasets/save_refused.html", {"form": form}, status=400)
