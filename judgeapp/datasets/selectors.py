"""Reads of the Datasets pages: each name's versions, a diff between two, a version's rows for download."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count

from judgeapp.datasets.core import case_line, safe_file_name
from judgeapp.judging.batches import ROWS_AT_ONCE
from judgeapp.judging.selectors import testsets_for_runs, version_numbers_for_model
from judgeapp.models import Artifact, ArtifactSet, OutputSet, Rubric, Run, RunKind, TestSet, content_hash

DIFF_IDS_SHOWN = 100


@dataclass
class Version:
    row: object
    number: int


def versions_for_names(model, queryset=None) -> dict[str, list[Version]]:
    """{name: [its versions, newest first]} with each version's number (v1 the first stored)."""
    numbers = version_numbers_for_model(model)
    rows = (queryset if queryset is not None else model.objects.all()).order_by("name", "-created_at", "-pk")
    grouped: dict[str, list[Version]] = {}
    for row in rows.select_related("created_by") if model in (TestSet, Rubric) else rows:
        grouped.setdefault(row.name, []).append(Version(row, numbers.get(row.pk, 0)))
    return grouped


def checkup_testset_list():
    return TestSet.objects.filter(pk__in=Run.objects.filter(kind=RunKind.CHECKUP, testset__isnull=False).values("testset_id"))


def dataset_list() -> dict:
    """What the Datasets page lists: test sets and rubrics by name, system outputs, the check-up's pair sets."""
    checkup = checkup_testset_list()
    return {
        "testsets": versions_for_names(TestSet, testsets_for_runs()),  # what the run forms offer
        "rubrics": versions_for_names(Rubric),
        "output_sets": OutputSet.objects.select_related("system", "testset").order_by("system__name", "-created_at")[:500],
        "checkup_sets": checkup.order_by("name", "-created_at"),
        "artifact_sets": artifact_set_list(),
    }


def testset_get(*, uuid) -> TestSet | None:
    return TestSet.objects.filter(uuid=uuid).first()


def testset_versions_for_name(*, testset: TestSet) -> list[Version]:
    return versions_for_names(TestSet, TestSet.objects.filter(name=testset.name)).get(testset.name, [])


@dataclass
class Diff:
    added: list[str]
    removed: list[str]
    changed: list[str]
    counts: dict[str, int]


def diff_for_testsets(*, old: TestSet, new: TestSet) -> Diff:
    """Cases added, removed and changed (input or output) from `old` to `new`, by id (`_diff`)."""
    def cases(testset):
        return {
            case_id: (text, output)
            for case_id, text, output in testset.cases.values_list("case_id", "input", "output").iterator(chunk_size=ROWS_AT_ONCE)
        }

    return _diff(cases(old), cases(new))


def _diff(before: dict, after: dict) -> Diff:
    """The keys of `after` not in `before`, of `before` not in `after`, and in both with another value; the
    first DIFF_IDS_SHOWN of each listed, every one counted."""
    added = [key for key in after if key not in before]
    removed = [key for key in before if key not in after]
    changed = [key for key in after if key in before and before[key] != after[key]]
    return Diff(
        added=added[:DIFF_IDS_SHOWN], removed=removed[:DIFF_IDS_SHOWN], changed=changed[:DIFF_IDS_SHOWN],
        counts={"added": len(added), "removed": len(removed), "changed": len(changed)},
    )


def jsonl_for_testset(*, testset: TestSet):
    """The version as JSONL (`case_line`), a page of cases at a time (a download)."""
    cases = testset.cases.order_by("position").values_list("case_id", "input", "output", "extra")
    for case_id, text, output, extra in cases.iterator(chunk_size=ROWS_AT_ONCE):
        yield case_line(case_id, text, output, extra)


def rubric_get(*, uuid) -> Rubric | None:
    return Rubric.objects.filter(uuid=uuid).first()


def rubric_versions_for_name(*, rubric: Rubric) -> list[Version]:
    """The rubric's name's versions, newest first, each row with its `criterion_count` (one query for all)."""
    rows = Rubric.objects.filter(name=rubric.name).annotate(criterion_count=Count("criteria"))
    return versions_for_names(Rubric, rows).get(rubric.name, [])


def diff_for_rubrics(*, old: Rubric, new: Rubric) -> Diff:
    """Criteria added, removed and changed (description, scale or examples) from `old` to `new`, by name."""
    def criteria(rubric):
        return {name: (description, scale, examples) for name, description, scale, examples in
                rubric.criteria.order_by("position").values_list("name", "description", "scale", "examples")}

    return _diff(criteria(old), criteria(new))


@dataclass
class ArtifactSetVersion:
    row: ArtifactSet
    number: int
    artifacts: int
    version: str  # the short hash of its artifacts' content


ARTIFACT_SETS_LISTED = 500


def _artifact_versions(sets: list[ArtifactSet]) -> dict[str, list[ArtifactSetVersion]]:
    """{name: its versions, newest first} of these sets (oldest first): each numbered by its content within its
    name (the same artifacts in a later run are the same version), v1 the first stored."""
    hashes: dict[int, list[str]] = {}
    rows = Artifact.objects.filter(artifact_set__in=[s.pk for s in sets])
    rows = rows.values_list("artifact_set_id", "artifact_id", "content_hash")
    for set_id, artifact_id, digest in rows.order_by("artifact_set_id", "artifact_id"):
        hashes.setdefault(set_id, []).append(f"{artifact_id}:{digest}")
    grouped: dict[str, list[ArtifactSetVersion]] = {}
    numbers: dict[tuple[str, str], int] = {}
    contents: dict[str, int] = {}  # how many contents each name has had so far
    for row in sets:
        digest = content_hash("\n".join(hashes.get(row.pk, [])).encode())[:12]
        if (row.name, digest) not in numbers:
            contents[row.name] = numbers[(row.name, digest)] = contents.get(row.name, 0) + 1
        number = numbers[(row.name, digest)]
        grouped.setdefault(row.name, []).append(ArtifactSetVersion(row, number, len(hashes.get(row.pk, [])), digest))
    return {name: versions[::-1] for name, versions in sorted(grouped.items())}


def artifact_set_list() -> dict[str, list[ArtifactSetVersion]]:
    """The ranker's artifact sets by name, newest first: each run's set is a version of its name, numbered
    by its content (the same artifacts in a later run are the same version), v1 the first stored."""
    newest = ArtifactSet.objects.select_related("run", "run__created_by").order_by("-created_at", "-pk")[:ARTIFACT_SETS_LISTED]
    return _artifact_versions(list(newest)[::-1])


def artifact_set_get(*, uuid) -> ArtifactSet | None:
    return ArtifactSet.objects.select_related("run").filter(uuid=uuid).first()


def artifact_set_for_name(*, name: str) -> ArtifactSet:
    """The newest artifact set of this name; InputError when there is none."""
    from judgeapp.judging.errors import InputError

    found = ArtifactSet.objects.select_related("run").filter(name=name).order_by("-created_at", "-pk").first()
    if found is None:
        raise InputError(f"{name}: no artifact set of that name (the ranker stores one per run)")
    return found


def artifact_set_versions_for_name(*, artifact_set: ArtifactSet) -> list[ArtifactSetVersion]:
    """Every run's set of this name (the newest ARTIFACT_SETS_LISTED), newest first, numbered as on the list."""
    rows = ArtifactSet.objects.filter(name=artifact_set.name).select_related("run", "run__created_by")
    newest = rows.order_by("-created_at", "-pk")[:ARTIFACT_SETS_LISTED]
    return _artifact_versions(list(newest)[::-1]).get(artifact_set.name, [])


def diff_for_artifact_sets(*, old: ArtifactSet, new: ArtifactSet) -> Diff:
    """Artifacts added, removed and changed (their content) from `old` to `new`, by name."""
    def artifacts(artifact_set):
        return dict(artifact_set.artifacts.order_by("artifact_id").values_list("artifact_id", "content_hash"))

    return _diff(artifacts(old), artifacts(new))


ZIP_MAX_BYTES = 50 * 1024 * 1024  # the artifacts' text a download may hold; a larger set is refused in one line


def zip_for_artifact_set(*, artifact_set: ArtifactSet) -> bytes:
    """The version's artifacts as a zip, one file each at its root under a safe name (a name taken twice gets
    `-2`, `-3`…). InputError when their text is over ZIP_MAX_BYTES."""
    import io
    import zipfile

    from judgeapp.judging.errors import InputError

    total = sum(artifact_set.artifacts.values_list("size", flat=True))
    if total > ZIP_MAX_BYTES:
        raise InputError(f"{artifact_set.name}: {total:,} bytes of artifacts, over the download limit of {ZIP_MAX_BYTES:,}")
    buffer, taken = io.BytesIO(), set()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for artifact_id, content in artifact_set.artifacts.order_by("artifact_id").values_list("artifact_id", "content"):
            name = safe_file_name(artifact_id, "artifact")
            stem, dot, suffix = name.rpartition(".") if "." in name else (name, "", "")
            count = 1
            while name.lower() in taken:
                count += 1
                name = f"{stem}-{count}{dot}{suffix}"
            taken.add(name.lower())
            archive.writestr(name, content.encode("utf-8", "replace"))
    return buffer.getvalue()


# --- A system version's outputs ---------------------------------------------------------------------------

OUTPUT_ROWS_SHOWN = 10


def output_set_get(*, uuid) -> OutputSet | None:
    return OutputSet.objects.select_related("system", "testset", "created_by").filter(uuid=uuid).first()


def output_rows_for_set(*, output_set: OutputSet, limit: int = OUTPUT_ROWS_SHOWN) -> list[tuple[str, str, str]]:
    """The first outputs (case id, the case's input, the output), in the order uploaded."""
    rows = list(output_set.rows.order_by("position").values_list("case_id", "text")[:limit])
    inputs = dict(output_set.testset.cases.filter(case_id__in=[case_id for case_id, _ in rows]).values_list("case_id", "input"))
    return [(case_id, inputs.get(case_id, ""), text) for case_id, text in rows]


def jsonl_for_output_set(*, output_set: OutputSet):
    """The version as JSONL {"id", "output"}, a page of rows at a time (a download); it reads back as the same
    outputs."""
    import json

    rows = output_set.rows.order_by("position").values_list("case_id", "text")
    for case_id, text in rows.iterator(chunk_size=ROWS_AT_ONCE):
        yield json.dumps({"id": case_id, "output": text}, ensure_ascii=False) + "\n"
