"""An artifact set's page (versions, a diff by artifact, a zip download) and a system version's outputs page
(who, when, first rows, a JSONL download) on the Datasets page (issue #29, item 1)."""

import io
import json
import re
import zipfile

import pytest
from django.urls import reverse

from judgeapp.judging.content import InputFile
from judgeapp.judging.content import testset_store as stored_testset
from judgeapp.judging.outputs import output_set_save
from tests.factories import artifact_set_ranked as ranked

pytestmark = pytest.mark.django_db


def squeeze(html: str, element_id: str, tag: str) -> str:
    return re.sub(r"\s+", " ", re.search(rf'id="{element_id}".*?</{tag}>', html, re.DOTALL).group(0))


def test_an_artifact_sets_page_lists_its_versions_and_diffs_two_by_artifact(client, reviewer, judge):
    old = ranked(judge, "rank-1", {"a.md": "alpha", "b.md": "beta", "c.md": "gamma"})
    ranked(judge, "rank-2", {"a.md": "alpha", "b.md": "beta", "c.md": "gamma"})  # the same artifacts: v1 again
    new = ranked(judge, "rank-3", {"a.md": "alpha", "b.md": "beta, rewritten", "d.md": "delta", "e.md": "epsilon"})
    client.force_login(reviewer)
    index = client.get(reverse("datasets:index")).content.decode()
    assert reverse("datasets:artifact_set", args=[new.uuid]) in squeeze(index, "artifact-sets-table", "table")
    page = client.get(reverse("datasets:artifact_set", args=[new.uuid]), {"old": old.uuid, "new": new.uuid}).content.decode()
    versions = squeeze(page, "versions", "table")
    assert versions.count(">v1</a>") == 2 and versions.count(">v2</a>") == 1
    assert re.search(r">v2</a> <span class=\"muted\">\(shown\)</span></td><td class=\"mono\">\w{12}</td><td>4</td>", versions)
    assert "rank-1" in versions and "rank-3" in versions
    diff = squeeze(page, "diff", "section")
    assert "From v1 to v2" in diff and "2 artifacts added, 1 removed, 1 changed." in diff
    assert "d.md, e.md" in diff and "c.md" in diff and "b.md" in diff


def test_an_artifact_set_downloads_as_a_zip_of_its_files_and_no_name_escapes(client, reviewer, judge):
    artifact_set = ranked(judge, "rank-zip", {"a.md": "alpha", "../../etc/passwd": "root", "/abs/x.md": "x", "..": "dots",
                                              "A.md": "same name, other case"})
    client.force_login(reviewer)
    response = client.get(reverse("datasets:artifact_set_download", args=[artifact_set.uuid]))
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert 'filename="poems-v1.zip"' in response["Content-Disposition"]
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    names = archive.namelist()
    assert len(names) == 5
    assert all("/" not in n and "\\" not in n and not n.startswith(".") for n in names), names
    assert archive.read("A.md") == b"same name, other case"
    assert archive.read("a-2.md") == b"alpha"  # a name taken twice (in any case) gets a suffix
    assert "_.._etc_passwd" in names and "_abs_x.md" in names
    assert sorted(archive.read(n) for n in names) == sorted([b"alpha", b"root", b"x", b"dots", b"same name, other case"])


def test_an_artifact_set_over_the_download_limit_is_refused_in_one_line(client, reviewer, judge, monkeypatch):
    from judgeapp.datasets import selectors

    artifact_set = ranked(judge, "rank-big", {"a.md": "alpha" * 20})
    monkeypatch.setattr(selectors, "ZIP_MAX_BYTES", 10)
    client.force_login(reviewer)
    response = client.get(reverse("datasets:artifact_set_download", args=[artifact_set.uuid]))
    assert response.status_code == 413 and response.content.decode().count("\n") == 1
    assert "over the download limit" in response.content.decode()


def test_a_system_versions_outputs_page_shows_who_when_the_first_rows_and_downloads_them(client, reviewer, make_system):
    system = make_system("support-bot")
    cases = [{"id": f"c{i}", "input": f"question {i}"} for i in range(3)]
    testset = stored_testset(data="".join(json.dumps(c) + "\n" for c in cases).encode(), name="support.jsonl")
    outputs = [{"id": f"c{i}", "output": f"=v2.1 says {i}"} for i in range(3)]
    given = InputFile(data="".join(json.dumps(o) + "\n" for o in outputs).encode(), name="v21.jsonl")
    output_set, _ = output_set_save(system=system, version_label="v2.1", testset=testset, outputs=given, created_by=reviewer)
    client.force_login(reviewer)
    index = client.get(reverse("datasets:index")).content.decode()
    assert f'href="{reverse("datasets:outputs", args=[output_set.uuid])}"' in index
    page = client.get(reverse("datasets:outputs", args=[output_set.uuid])).content.decode()
    facts = squeeze(page, "outputs-facts", "dl")
    assert "<dd>support-bot</dd>" in facts and "<dd>v2.1</dd>" in facts and f"by {reviewer.username}" in facts
    assert ">support</a>" in facts and "from v21.jsonl" in facts
    rows = squeeze(page, "output-rows", "table")
    assert "<td class=\"mono nowrap\">c0</td><td>question 0</td><td>=v2.1 says 0</td>" in rows

    download = client.get(reverse("datasets:outputs_download", args=[output_set.uuid]))
    assert download.status_code == 200 and 'filename="support-bot-v2.1.jsonl"' in download["Content-Disposition"]
    body = b"".join(download.streaming_content).decode()
    assert [json.loads(line) for line in body.splitlines()] == outputs
    assert client.get(reverse("datasets:outputs", args=["00000000-0000-0000-0000-000000000000"])).status_code == 404
