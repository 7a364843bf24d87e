"""Outputs belong to a system version (issue #29, item 2): stored with `manage.py outputs add`, judged by a
run labelled with the system, said in the report; a run labelled with a system never judges the test set's
own outputs."""

import json

import pytest

from judgeapp.models import OutputRow, OutputSet, Run

pytestmark = pytest.mark.django_db

STORED_REPLY = "STORED-IN-THE-TEST-SET reply"
UPLOADED_REPLY = "UPLOADED-FOR-V2.1 reply: Settings > Password, then reset; the email arrives in 2 minutes."


def write_outputs(path, ids, text=UPLOADED_REPLY):
    path.write_text("".join(json.dumps({"id": i, "output": f"{text} ({i})"}) + "\n" for i in ids), encoding="utf-8")
    return str(path)


def evaluate(cli, judge, testset, rubric, *extra):
    return cli("evaluate", "pointwise", "--testset", testset, "--rubric", rubric, "--judge", judge.name, "--concurrency", "1",
               "--threshold", "1", "--format", "json", *extra)


@pytest.fixture
def stored(cli, files, make_system, tmp_path):
    """support-bot, a test set whose own outputs say STORED-IN-THE-TEST-SET, and support-bot v2.1's outputs."""
    make_system("support-bot")
    testset, rubric = files(n=3, output=lambda i: STORED_REPLY)
    given = write_outputs(tmp_path / "v21.jsonl", ["c000", "c001", "c002"])
    result = cli("outputs", "add", "--system", "support-bot", "--label", "v2.1", "--testset", testset, "--file", given)
    assert result.code == 0, result.err
    return testset, rubric, given


def test_outputs_add_stores_a_version_once_and_names_it(cli, stored):
    testset, _rubric, given = stored
    output_set = OutputSet.objects.get()
    assert (output_set.system.name, output_set.version_label, output_set.row_count) == ("support-bot", "v2.1", 3)
    assert output_set.created_by_label.startswith("cli:")
    again = cli("outputs", "add", "--system", "support-bot", "--label", "v2.1", "--testset", "support", "--file", given)
    assert again.code == 0 and "already stored as support-bot v2.1" in again.out
    assert OutputSet.objects.count() == 1 and OutputRow.objects.count() == 3
    listed = cli("outputs", "list")
    assert "support-bot  v2.1  test set support  3 outputs" in listed.out


def test_outputs_for_unknown_ids_are_refused_with_the_ids_and_nothing_is_stored(cli, files, make_system, tmp_path):
    make_system("support-bot")
    testset, _rubric = files(n=2)
    given = write_outputs(tmp_path / "bad.jsonl", ["c000", "c001", "ghost-7"])
    result = cli("outputs", "add", "--system", "support-bot", "--label", "v3", "--testset", testset, "--file", given)
    assert result.code == 2
    assert "ghost-7" in result.err and "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1
    assert not OutputSet.objects.exists() and not OutputRow.objects.exists()


def test_a_run_labelled_with_a_system_without_outputs_of_its_own_refuses_in_one_line(cli, judge, files, make_system, fake_judge):
    make_system("support-bot-v2")
    testset, rubric = files(n=3, output=lambda i: STORED_REPLY)
    result = evaluate(cli, judge, testset, rubric, "--system", "support-bot-v2")
    assert result.code == 2
    assert result.err.strip() == (
        "error: support-bot-v2 has no outputs for this test set: upload them (--outputs, or manage.py outputs add), "
        "or have the system's endpoint generate them (--generate)"
    )
    assert not Run.objects.exists() and fake_judge.chat_requests == []


def test_a_run_with_a_system_version_judges_its_uploaded_outputs_never_the_test_sets(cli, judge, stored, fake_judge):
    testset, rubric, _given = stored
    result = evaluate(cli, judge, testset, rubric, "--system", "support-bot", "--outputs-version", "v2.1")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    source = report["outputs_source"]
    assert (source["source"], source["system"], source["version"]) == ("uploaded", "support-bot", "v2.1")
    assert source["uploaded_by"].startswith("cli:") and source["uploaded_at"]
    assert report["outputs"].startswith("uploaded as support-bot v2.1 on ")
    assert "Outputs: uploaded as support-bot v2.1 on " in result.err
    prompts = [request.prompt for request in fake_judge.chat_requests]
    assert len(prompts) == 3
    assert all("UPLOADED-FOR-V2.1" in p for p in prompts) and not any(STORED_REPLY in p for p in prompts)
    run = Run.objects.get(run_id=report["run_id"])
    assert (
        run.system.name == "support-bot"
        and set(run.outputs.values_list("text", flat=True)) == {f"{UPLOADED_REPLY} (c00{i})" for i in range(3)}
    )


def test_a_system_alone_judges_its_newest_uploaded_outputs(cli, judge, stored, fake_judge):
    testset, rubric, _given = stored
    report = json.loads(evaluate(cli, judge, testset, rubric, "--system", "support-bot").out)
    assert report["outputs_source"]["version"] == "v2.1"
    assert not any(STORED_REPLY in request.prompt for request in fake_judge.chat_requests)


def test_an_unknown_version_label_is_one_line(cli, judge, stored):
    testset, rubric, _given = stored
    result = evaluate(cli, judge, testset, rubric, "--system", "support-bot", "--outputs-version", "v9")
    assert result.code == 2 and "support-bot has no outputs labelled 'v9' for this test set" in result.err
    assert not Run.objects.exists()


def test_a_run_without_a_system_still_judges_the_test_sets_outputs_and_says_so(cli, judge, files):
    testset, rubric = files(n=2)
    report = json.loads(evaluate(cli, judge, testset, rubric).out)
    assert report["outputs"] == "from the test set" and report["outputs_source"] == {"source": "testset", "testset": "support"}


def test_the_testset_and_rubric_are_reached_by_their_stored_names_a_path_winning(cli, judge, files, tmp_path):
    from judgeapp.judging.content import testset_store as stored_testset
    from tests.factories import testset_bytes

    testset, rubric = files(n=2)
    first = json.loads(evaluate(cli, judge, testset, rubric).out)  # stores "support" v1 and the rubric
    stored_testset(data=testset_bytes(5), name="support.jsonl")  # v2
    rubric_name = Run.objects.get(run_id=first["run_id"]).rubric.name
    by_name = json.loads(evaluate(cli, judge, "support", rubric_name).out)
    assert by_name["testset"]["cases"] == 5
    older = json.loads(evaluate(cli, judge, "support@v1", rubric_name).out)
    assert older["testset"]["cases"] == 2
    missing = evaluate(cli, judge, "nothing-of-that-name", rubric_name)
    assert missing.code == 2 and "nothing-of-that-name: no such file" in missing.err


def test_datasets_list_names_each_test_set_rubric_and_outputs_version(cli, stored):
    listed = cli("datasets", "list")
    assert listed.code == 0
    assert (
        "test set  support  v1 (3 cases, " in listed.out and "outputs  support-bot v2.1  answers support  3 outputs" in listed.out
    )
    assert cli("datasets", "list", "--kind", "outputs").out.strip().splitlines() == [
        "outputs  support-bot v2.1  answers support  3 outputs"
    ]


def test_outputs_cut_off_while_stored_leave_nothing_and_the_same_file_is_stored_whole_again(cli, files, make_system, tmp_path,
                                                                                             monkeypatch):
    from django.db import DatabaseError

    make_system("support-bot")
    testset, _rubric = files(n=3)
    given = write_outputs(tmp_path / "v3.jsonl", ["c000", "c001", "c002"])

    def cut_off(*args, **kwargs):
        raise DatabaseError("could not extend file: No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(OutputRow.objects, "bulk_create", cut_off)
        cut = cli("outputs", "add", "--system", "support-bot", "--label", "v3", "--testset", testset, "--file", given)
    assert cut.code != 0 and "Traceback" not in cut.err
    assert not OutputSet.objects.exists()  # no version that says 3 outputs and holds none
    again = cli("outputs", "add", "--system", "support-bot", "--label", "v3", "--testset", testset, "--file", given)
    assert again.code == 0 and again.out.startswith("stored support-bot v3: 3 outputs"), again.out
    assert OutputRow.objects.count() == 3
