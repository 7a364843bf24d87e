"""The Datasets pages (issue #29, item 1): an upload previewed with every invalid line before anything is
stored, saved as v1, v2… of a name, compared, downloaded; a system version's outputs uploaded."""

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from judgeapp import models
from judgeapp.judging.content import testset_store as stored_testset
from judgeapp.judging.files import testset_rows as cases_of
from judgeapp.models import OutputRow, OutputSet

pytestmark = pytest.mark.django_db


def jsonl(*rows) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


GOOD = [{"id": f"c{i}", "input": f"question {i}", "output": f"answer {i}"} for i in range(3)]


def preview(client, data: bytes, name="support.jsonl"):
    return client.post(reverse("datasets:testset_preview"), {"file": SimpleUploadedFile(name, data)})


def save(client, response, name="support"):
    html = response.content.decode()
    token = re.search(r'name="token" value="([^"]+)"', html).group(1)
    file_name = re.search(r'name="file_name" value="([^"]+)"', html).group(1)
    return client.post(reverse("datasets:testset_save"), {"token": token, "file_name": file_name, "name": name}, follow=True)


def test_the_preview_names_every_invalid_line_and_stores_nothing(client, reviewer):
    client.force_login(reviewer)
    data = jsonl(GOOD[0], '{"id": "c1", "input": ', GOOD[1], {"id": "c3"}, {"id": "c0", "input": "again"}, GOOD[2])
    response = preview(client, data)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<strong>3</strong> valid cases" in html and "<strong>3</strong> invalid lines" in html
    assert "line 2: " in html and "line 4: " in html and "line 5: duplicate id &#x27;c0&#x27; (first on line 1)" in html
    assert "question 0" in html  # the first rows
    assert 'id="testset-save"' not in html  # no save while a line is invalid
    assert not models.TestSet.objects.exists()


def test_save_stores_v1_a_changed_upload_v2_and_the_same_content_no_new_version(client, reviewer):
    client.force_login(reviewer)
    first = save(client, preview(client, jsonl(*GOOD)))
    assert "Stored support v1: 3 cases." in first.content.decode()
    assert 'href="/datasets/#outputs"' in first.content.decode()  # what a new team does next
    stored = models.TestSet.objects.get()
    assert (stored.name, stored.case_count, stored.created_by) == ("support", 3, reviewer)

    changed = [*GOOD[:2], {"id": "c2", "input": "question 2", "output": "a better answer"}, {"id": "c9", "input": "new"}]
    second = save(client, preview(client, jsonl(*changed), name="edited.jsonl"))
    assert "Stored support v2: 4 cases." in second.content.decode()
    again = save(client, preview(client, jsonl(*changed), name="edited.jsonl"))
    assert "Already stored as support v2; nothing new was stored." in again.content.decode()
    assert models.TestSet.objects.filter(name="support").count() == 2

    page = client.get(reverse("datasets:index")).content.decode()
    table = re.sub(r"\s+", " ", re.search(r'id="testsets-table".*?</table>', page, re.S).group(0))
    assert re.search(r">support</a></td><td>v2 <span[^>]*>\w+</span></td> <td>4</td>.*?<td>2</td></tr>", table), table


def test_the_diff_counts_cases_added_removed_and_changed(client, reviewer):
    old = stored_testset(data=jsonl(*GOOD), name="support.jsonl")
    new = stored_testset(
        data=jsonl(GOOD[0], {"id": "c1", "input": "question 1", "output": "changed"}, {"id": "c7", "input": "x"}),
        name="support.jsonl",
    )
    client.force_login(reviewer)
    html = client.get(reverse("datasets:testset", args=[new.uuid]), {"old": old.uuid, "new": new.uuid}).content.decode()
    assert "From v1 to v2" in html and "1 case added, 1 removed, 1 changed." in html
    assert ">c7<" in html.replace("<p class=\"mono small\">", ">") and "c2" in html


def test_a_download_reads_back_as_the_same_cases(client, reviewer):
    rows = [*GOOD, {"id": "c3", "input": "=HYPERLINK(\"x\")"}]
    stored = stored_testset(data=jsonl(*rows), name="support.jsonl")
    client.force_login(reviewer)
    response = client.get(reverse("datasets:testset_download", args=[stored.uuid]))
    assert response.status_code == 200 and 'filename="support-v1.jsonl"' in response["Content-Disposition"]
    body = b"".join(response.streaming_content)
    assert [(c.case_id, c.input, c.output) for c in list(cases_of(body, "support.jsonl"))] == [
        (r["id"], r["input"], r.get("output")) for r in rows
    ]


def test_a_system_versions_outputs_are_uploaded_and_unknown_ids_refused(client, reviewer, make_system):
    system = make_system("support-bot")
    testset = stored_testset(data=jsonl(*GOOD), name="support.jsonl")
    client.force_login(reviewer)
    page = client.get(reverse("datasets:index")).content.decode()
    assert 'href="/datasets/"' in page and "support (v1, 3 cases)" in page
    bad = jsonl(*[{"id": f"c{i}", "output": "x"} for i in range(3)], {"id": "ghost", "output": "x"})
    refused = client.post(reverse("datasets:outputs_add"), {
        "system": system.pk, "version_label": "v2.1", "testset": testset.pk, "file": SimpleUploadedFile("v21.jsonl", bad),
    })
    assert refused.status_code == 400 and "ghost" in refused.content.decode()
    assert not OutputSet.objects.exists() and not OutputRow.objects.exists()
    good = jsonl(*[{"id": f"c{i}", "output": f"v2.1 says {i}"} for i in range(3)])
    stored = client.post(reverse("datasets:outputs_add"), {
        "system": system.pk, "version_label": "v2.1", "testset": testset.pk, "file": SimpleUploadedFile("v21.jsonl", good),
    }, follow=True)
    assert "Stored support-bot v2.1: 3 outputs for support." in stored.content.decode()
    output_set = OutputSet.objects.get()
    assert (output_set.created_by, output_set.created_by_label) == (reviewer, reviewer.username)


def test_stored_outputs_link_to_the_pointwise_form_with_their_test_set_system_and_version_picked(client, reviewer, make_system):
    system = make_system("support-bot")
    make_system("billing-bot", model="other-model")
    testset = stored_testset(data=jsonl(*GOOD), name="support.jsonl")
    stored_testset(data=jsonl(*GOOD[:2]), name="newer.jsonl")
    client.force_login(reviewer)
    good = jsonl(*[{"id": f"c{i}", "output": f"v2.1 says {i}"} for i in range(3)])
    client.post(reverse("datasets:outputs_add"), {
        "system": system.pk, "version_label": "v2.1", "testset": testset.pk, "file": SimpleUploadedFile("v21.jsonl", good),
    })
    output_set = OutputSet.objects.get()
    link = f"/pointwise/?outputs={output_set.uuid}"
    assert f'href="{link}"' in client.get(reverse("datasets:index")).content.decode()
    form = client.get(link).content.decode()
    assert f'<option value="{testset.pk}" selected>' in form
    assert f'<option value="{system.pk}" selected>support-bot</option>' in form
    assert f'<option value="{output_set.pk}" selected>support-bot v2.1' in form
    stale = client.get("/pointwise/?outputs=not-a-uuid")
    assert stale.status_code == 200 and f'<option value="{output_set.pk}" selected>support-bot v2.1' not in stale.content.decode()


def test_the_lowest_cases_of_a_run_become_a_new_version_of_a_test_set_duplicates_skipped(client, reviewer, judge):
    from judgeapp.judging import runs
    from tests.factories import pointwise_run

    run = runs.run_execute_inline(run=pointwise_run(judge=judge, n=4, run_id="pw-low", threshold=1.0))
    lowest = list(dict.fromkeys(item["case_id"] for item in run.report["lowest"]))
    target = stored_testset(
        data=jsonl({"id": lowest[0], "input": "already here"}, {"id": "own-1", "input": "ours"}), name="regressions.jsonl",
    )
    client.force_login(reviewer)
    page = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    assert 'id="cases-add"' in page
    response = client.post(reverse("datasets:cases_add", args=[run.run_id]), {"name": "regressions"}, follow=True)
    html = response.content.decode()
    assert f"regressions v2: {len(lowest) - 1} case{'s' if len(lowest) != 2 else ''} added; 1 already in it, skipped." in html
    newest = models.TestSet.objects.filter(name="regressions").order_by("-created_at").first()
    assert newest.pk != target.pk and newest.created_by == reviewer
    ids = list(newest.cases.order_by("position").values_list("case_id", flat=True))
    assert ids == [lowest[0], "own-1", *lowest[1:]]
    assert newest.cases.get(case_id=lowest[0]).input == "already here"  # the stored case is kept as it was


def test_the_outputs_upload_starts_on_the_test_set_stored_last(client, reviewer, make_system):
    make_system("support-bot")
    older = stored_testset(data=jsonl(*GOOD[:2]), name="alpha.jsonl")
    newest = stored_testset(data=jsonl(*GOOD[:3]), name="zulu.jsonl")
    client.force_login(reviewer)
    page = client.get(reverse("datasets:index")).content.decode()
    assert f'<option value="{newest.pk}" selected>zulu (v1, 3 cases)</option>' in page
    assert f'<option value="{older.pk}">alpha (v1, 2 cases)</option>' in page


def test_a_csv_test_set_is_previewed_whole_and_its_first_problem_named(client, reviewer):
    client.force_login(reviewer)
    good = preview(client, b"id,input,output\nc0,question 0,answer 0\nc1,question 1,\n", name="support.csv")
    html = good.content.decode()
    assert "<strong>2</strong> valid cases" in html and "question 1" in html
    assert f'action="{reverse("datasets:testset_save")}" class="stacked card" id="testset-save"' in html
    bad = preview(client, b"id,input\nc0,question 0\nc0,again\n", name="support.csv").content.decode()
    assert 'id="invalid-lines"' in bad and "c0" in bad and 'id="testset-save"' not in bad
    assert not models.TestSet.objects.exists()


def test_an_upload_previewed_over_an_hour_ago_has_expired_and_is_not_saved(client, reviewer, settings):
    import os
    import time
    from pathlib import Path

    client.force_login(reviewer)
    shown = preview(client, jsonl(*GOOD))
    token = re.search(r'name="token" value="([^"]+)"', shown.content.decode()).group(1)
    kept = Path(settings.DATA_DIR) / "pending-uploads" / token
    an_hour_and_more_ago = time.time() - 3601
    os.utime(kept, (an_hour_and_more_ago, an_hour_and_more_ago))
    refused = save(client, shown)
    assert refused.status_code == 400 and "that upload has expired" in refused.content.decode()
    assert not models.TestSet.objects.exists() and not kept.exists()


def test_the_checkups_pair_sets_are_listed_apart_from_the_test_sets(client, reviewer):
    stored_testset(data=jsonl(*GOOD), name="support.jsonl")
    public = stored_testset(data=jsonl(*GOOD[:2]), name="pandalm.jsonl")
    models.Run.objects.create(run_id="checkup-1", kind="checkup", testset=public)
    client.force_login(reviewer)
    page = client.get(reverse("datasets:index")).content.decode()
    table = re.search(r'id="testsets-table".*?</table>', page, re.S).group(0)
    assert ">support</a>" in table and "pandalm" not in table
    assert "pandalm (2 pairs" in page.split('id="checkup-sets"')[1]
