"""`manage.py datasets list|show` (issue #29, item 1): the CLI reaches every kind of the Datasets page by name."""

import pytest

from judgeapp.judging.content import rubric_store
from tests.factories import RUBRIC_ONE, RUBRIC_TWO
from tests.factories import artifact_set_ranked as ranked

pytestmark = pytest.mark.django_db


def test_show_rubric_lists_its_versions_with_who_and_the_criteria_of_the_one_named(cli, reviewer):
    v1 = rubric_store(data=RUBRIC_ONE, name="rubric.toml", source_path="evals/support/rubric.toml")
    v2 = rubric_store(data=RUBRIC_TWO, name="rubric.toml")
    v2.created_by = reviewer
    v2.save()
    newest = cli("datasets", "show", "rubric", "support-quality")
    assert newest.code == 0, newest.err
    lines = newest.out.splitlines()
    assert lines[0] == "rubric support-quality"
    assert lines[1].startswith(f"* v2  {v2.version}  2 criteria") and lines[1].endswith(f"by {reviewer.username}")
    assert lines[2].startswith(f"  v1  {v1.version}  1 criteria") and lines[2].endswith("from evals/support/rubric.toml")
    assert lines[3:] == ["  criterion helpfulness  scale 1-5  5 example(s)", "  criterion tone  scale 1-5  5 example(s)"]
    first = cli("datasets", "show", "rubric", "support-quality@v1")
    assert first.out.splitlines()[2].startswith("* v1") and "criterion tone" not in first.out


def test_show_artifacts_and_the_list_name_the_rankers_sets_and_an_unknown_name_is_one_line(cli, judge):
    ranked(judge, "rank-1", {"a.md": "alpha"})
    ranked(judge, "rank-2", {"a.md": "alpha", "b.md": "beta"})
    shown = cli("datasets", "show", "artifacts", "poems")
    assert shown.code == 0, shown.err
    assert shown.out.splitlines()[1].startswith("* v2 ") and "2 artifacts  run rank-2" in shown.out
    assert "  a.md  5 bytes" in shown.out and "  b.md  4 bytes" in shown.out
    listed = cli("datasets", "list", "--kind", "artifacts")
    assert listed.out.startswith("artifact set  poems  v2 (2 artifacts, ") and listed.out.endswith(")  2 version(s)\n")
    for kind in ("artifacts", "rubric", "testset"):
        missing = cli("datasets", "show", kind, "nope")
        assert missing.code == 2 and missing.err.count("\n") == 1 and "nope" in missing.err and "Traceback" not in missing.err


def test_outputs_add_takes_a_stored_test_sets_version_as_the_other_commands_do(cli, make_system, tmp_path):
    import json

    from judgeapp.judging.content import testset_store
    from judgeapp.models import OutputSet

    make_system("support-bot")
    v1 = testset_store(data=b'{"id": "c0", "input": "q0"}\n', name="support.jsonl")
    testset_store(data=b'{"id": "c0", "input": "q0"}\n{"id": "c1", "input": "q1"}\n', name="support.jsonl")
    given = tmp_path / "v1.jsonl"
    given.write_text(json.dumps({"id": "c0", "output": "a0"}) + "\n", encoding="utf-8")
    stored = cli("outputs", "add", "--system", "support-bot", "--label", "v1", "--testset", "support@v1", "--file", str(given))
    assert stored.code == 0, stored.err
    assert OutputSet.objects.get().testset == v1
    missing = cli("outputs", "add", "--system", "support-bot", "--label", "v1", "--testset", "support@v9", "--file", str(given))
    assert missing.code == 2 and missing.err.count("\n") == 1 and "support@v9: no such file" in missing.err


def test_show_testset_lists_its_versions_with_their_cases_and_marks_the_one_named(cli):
    from judgeapp.judging.content import testset_store

    v1 = testset_store(data=b'{"id": "c0", "input": "q0"}\n', name="support.jsonl", source_path="evals/support.jsonl")
    v2 = testset_store(data=b'{"id": "c0", "input": "q0"}\n{"id": "c1", "input": "q1"}\n', name="support.jsonl")
    shown = cli("datasets", "show", "testset", "support@v1")
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0] == "test set support"
    assert lines[1].startswith(f"  v2  {v2.version}  2 cases  ")
    assert lines[2].startswith(f"* v1  {v1.version}  1 cases  ") and lines[2].endswith("from evals/support.jsonl")
