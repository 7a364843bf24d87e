"""The Datasets page's other kinds (issue #29, item 1): a system version's outputs previewed line by line
against its test set before anything is stored; rubrics by name with versions, a diff of their criteria and a
download; the ranker's artifact sets by name with versions."""

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from judgeapp.judging.content import rubric_store
from judgeapp.judging.content import testset_store as stored_testset
from judgeapp.models import OutputRow, OutputSet, Rubric
from tests.factories import RUBRIC_ONE, RUBRIC_TWO

pytestmark = pytest.mark.django_db


def jsonl(*rows) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


@pytest.fixture
def support(make_system):
    system = make_system("support-bot")
    testset = stored_testset(data=jsonl(*[{"id": f"c{i}", "input": f"question {i}"} for i in range(3)]), name="support.jsonl")
    return system, testset


def outputs_preview(client, system, testset, data: bytes, name="v21.jsonl", label="v2.1"):
    return client.post(reverse("datasets:outputs_preview"), {
        "system": system.pk, "version_label": label, "testset": testset.pk, "file": SimpleUploadedFile(name, data),
    })


def test_an_outputs_preview_names_every_invalid_line_unknown_id_and_missing_case_and_stores_nothing(client, reviewer, support):
    system, testset = support
    client.force_login(reviewer)
    data = jsonl({"id": "c0", "output": "fine"}, '{"id": "c1", "output": ', {"id": "ghost-7", "output": "x"},
                 {"id": "c0", "output": "again"}, {"id": "c1"})
    response = outputs_preview(client, system, testset, data)
    html = response.content.decode()
    assert response.status_code == 200
    problems = re.sub(r"\s+", " ", re.search(r'id="invalid-lines".*?</div>', html, re.S).group(0))
    assert "line 2:" in problems
    assert "line 3: id &#x27;ghost-7&#x27; is not in test set support" in problems
    assert "line 4: duplicate id &#x27;c0&#x27; (first on line 1)" in problems
    assert "line 5: missing &#x27;output&#x27;" in problems
    assert 'id="missing-cases"' in html and "c1, c2" in html
    assert 'id="outputs-save"' not in html
    assert not OutputSet.objects.exists() and not OutputRow.objects.exists()


def test_a_clean_outputs_preview_is_stored_as_the_system_version_when_confirmed(client, reviewer, support):
    system, testset = support
    client.force_login(reviewer)
    response = outputs_preview(client, system, testset, jsonl(*[{"id": f"c{i}", "output": f"v2.1 says {i}"} for i in range(3)]))
    html = response.content.decode()
    assert 'id="outputs-save"' in html and 'id="preview-rows"' in html and "v2.1 says 0" in html
    assert not OutputSet.objects.exists()  # previewed, not stored
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', html))
    assert set(fields) >= {"token", "file_name", "system", "version_label", "testset"}
    stored = client.post(reverse("datasets:outputs_add"), {**fields, "csrfmiddlewaretoken": "x"}, follow=True)
    assert "Stored support-bot v2.1: 3 outputs for support." in stored.content.decode()
    output_set = OutputSet.objects.get()
    assert (output_set.version_label, output_set.row_count, output_set.created_by) == ("v2.1", 3, reviewer)
    again = client.post(reverse("datasets:outputs_add"), fields)
    assert again.status_code == 400 and "upload the file again" in again.content.decode()


def test_rubrics_have_versions_a_criteria_diff_and_a_download(client, reviewer):
    v1 = rubric_store(data=RUBRIC_ONE, name="rubric.toml", source_path="evals/support/rubric.toml")
    changed = RUBRIC_TWO.replace(b"Does the reply solve the customer's problem?", b"Does the reply solve it, start to end?")
    v2 = rubric_store(data=changed, name="rubric.toml", source_path="uploaded: rubric.toml")
    client.force_login(reviewer)
    index = client.get(reverse("datasets:index")).content.decode()
    assert reverse("datasets:rubric", args=[v2.uuid]) in index
    page = client.get(reverse("datasets:rubric", args=[v2.uuid]), {"old": v1.uuid, "new": v2.uuid}).content.decode()
    assert "Rubric support-quality" in page and ">v1</a>" in page and ">v2</a>" in page
    assert "from evals/support/rubric.toml" in page and v1.version in page
    diff = re.sub(r"\s+", " ", re.search(r'<section id="diff".*?</section>', page, re.S).group(0))
    assert "1 criterion added, 0 removed, 1 changed." in diff
    assert "tone" in diff and "helpfulness" in diff
    download = client.get(reverse("datasets:rubric_download", args=[v1.uuid]))
    assert download.status_code == 200 and 'filename="support-quality-v1.toml"' in download["Content-Disposition"]
    assert download.content == RUBRIC_ONE


def test_the_rankers_artifact_sets_are_listed_by_name_with_versions(client, reviewer, judge):
    from judgeapp.judging.runs import run_create
    from judgeapp.models import Artifact, ArtifactSet, RunKind

    def ranked(run_id: str, texts: list[str]):
        run = run_create(kind=RunKind.RANK, run_id=run_id, executor="inline", judge=judge, options={})
        artifact_set = ArtifactSet.objects.create(run=run, name="poems")
        for i, text in enumerate(texts):
            Artifact.objects.create(artifact_set=artifact_set, artifact_id=f"p{i}.md", relative_path=f"poems/p{i}.md",
                                    content_hash=str(hash(text)), size=len(text), content=text)

    ranked("rank-1", ["a", "b"])
    ranked("rank-2", ["a", "b"])  # the same artifacts again: the same version
    ranked("rank-3", ["a", "b", "c"])
    client.force_login(reviewer)
    html = client.get(reverse("datasets:index")).content.decode()
    table = re.sub(r"\s+", " ", re.search(r'id="artifact-sets-table".*?</table>', html, re.S).group(0))
    assert "poems" in table
    assert re.search(r"v2 <span[^>]*>\w+</span> · 3 artifacts · run <a[^>]*>rank-3</a>", table)
    assert table.count("v1 <span") == 2 and "rank-1" in table and "rank-2" in table


def test_a_rubrics_page_shows_each_versions_criteria_count_read_once_for_all_versions(client, reviewer):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def page_of(count: int):
        for i in range(count):
            rubric_store(data=RUBRIC_TWO.replace(b"tone", f"tone-{count}-{i}".encode()), name="rubric.toml", label=f"r{count}")
        newest = Rubric.objects.filter(name=f"r{count}").order_by("-created_at", "-pk").first()
        with CaptureQueriesContext(connection) as queries:
            html = client.get(reverse("datasets:rubric", args=[newest.uuid])).content.decode()
        return html, len(queries)

    client.force_login(reviewer)
    two, queries_two = page_of(2)
    five, queries_five = page_of(5)
    versions = re.sub(r"\s+", " ", re.search(r'id="versions".*?</table>', five, re.S).group(0))
    assert versions.count("</td><td>2</td>") == 5  # each version's two criteria
    assert queries_five == queries_two  # not a query per version
