"""The CLI of CONTRACT §3 (compare, rank, insert) end to end: the app's judge client over real HTTP to
the fake judge server, the database and the files of CONTRACT §2."""

import hashlib
import io
import json
import os
import subprocess
import sys

import pytest
from django.core.management import call_command

from judgeapp.judging.errors import InputError
from judgeapp.models import Artifact, Comparison, Insertion, Judgment, Ranklist, RanklistEntry, Run, RunKind
from judgeapp.ranker.core import max_comparisons, read_jsonl
from tests.helpers import ROOT
from tests.ranker.conftest import true_top

pytestmark = pytest.mark.django_db

GOAL = "depth of the incident analysis"


def run_command(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def ranklist_path(data_dir, run_id, set_name):
    return data_dir / "sst-llm-judge-ranker" / run_id / "ranking_state" / f"{set_name}.ranklist.json"


def test_rank_25_files_writes_the_ranklist_both_logs_and_prints_the_top_3(oracle_judge, oracle, fake_judge, tmp_path, settings):
    candidates = tmp_path / "reports"
    truth = oracle.write(candidates, 25, seed=7)

    out = run_command("rank", str(candidates), "--goal", GOAL, "--run-id", "r25", "--judge", "oracle")

    run_dir = settings.DATA_DIR / "sst-llm-judge-ranker" / "r25"
    path = ranklist_path(settings.DATA_DIR, "r25", "reports")
    ranking = json.loads(path.read_text())
    assert ranking == true_top(truth, 10)
    assert not path.with_name(path.name + ".tmp").exists()
    units = Judgment.objects.filter(run__run_id="r25", purpose="judge").count()
    assert (
        f"\nUnits: {units}: {units} parsed, 0 parse failures, 0 truncated, 0 no reply (after one retry each; 0 unusable, "
        "0.0%)." in out
    )

    metadata = read_jsonl(run_dir / "metadata.jsonl")
    assert [m["artifact_id"] for m in metadata] == sorted(truth)  # every file once, in arrival order
    assert all({"artifact_id", "relative_path", "registered_at"} <= m.keys() for m in metadata)
    assert metadata[0]["relative_path"] == "cand-000.md"

    comparisons = read_jsonl(run_dir / "comparisons.jsonl")
    calls = fake_judge.chat_requests
    assert len(comparisons) == len(calls) == Comparison.objects.filter(run__run_id="r25").count()
    for record in comparisons:
        assert record["goal"] == GOAL and record["rationale"]
        expected = "A" if truth[record["a"]] > truth[record["b"]] else "B"
        assert record["winner"] == expected
    assert all(r.prompt.startswith(f"Comparison goal: {GOAL}\n") for r in calls)  # one goal for every call

    lines = out.splitlines()
    assert lines[0] == f"Ranklist: {path}"
    assert lines[1] == "Top 3:"
    for n, artifact_id in enumerate(ranking[:3], start=1):
        assert lines[1 + n] == f"  {n}. {artifact_id} — # Report {artifact_id}"
    assert lines[5].startswith(
        f"Comparator calls: {len(calls)} for 25 inserts (HTTP requests to the judge, its retries included); "
        "worst case: at most 2 + log2 N comparisons per insert, ")

    # The database holds the same: ranklist entries, one insertion per file, one judgment per call.
    ranklist = Ranklist.objects.get(run__run_id="r25")
    assert list(RanklistEntry.objects.filter(ranklist=ranklist).values_list("artifact__artifact_id", flat=True)) == ranking
    assert Insertion.objects.filter(ranklist=ranklist, status="done").count() == 25
    assert Judgment.objects.filter(run=ranklist.run).count() == len(calls)
    run = Run.objects.get(run_id="r25")
    assert run.status == "done" and run.done_units == run.total_units == 25
    assert run.report["ranking"] == ranking


def test_every_insert_of_a_batch_stays_within_the_seed_bound(oracle_judge, oracle, tmp_path):
    oracle.write(tmp_path / "c", 30, seed=3)
    run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "bound", "--judge", "oracle", "--max-size", "12")
    insertions = list(Insertion.objects.filter(ranklist__run__run_id="bound"))
    assert len(insertions) == 30 and all(i.list_length is not None for i in insertions)
    for insertion in insertions:
        assert insertion.comparisons <= max_comparisons(insertion.list_length)


def test_compare_prints_winner_and_rationale_and_writes_no_file_without_a_run_id(oracle_judge, oracle, tmp_path, fake_judge):
    oracle.add(tmp_path / "good.md", "a thorough analysis", 0.9)
    oracle.add(tmp_path / "weak.md", "a thin note", 0.2)
    out = run_command("compare", str(tmp_path / "weak.md"), str(tmp_path / "good.md"), "--judge", "oracle")
    winner, rationale = out.splitlines()
    assert winner == "WINNER: B"
    assert rationale.startswith("RATIONALE: ") and len(rationale) > len("RATIONALE: ")
    assert fake_judge.chat_requests[-1].prompt.startswith("Comparison goal: general quality\n")
    run = Run.objects.get(kind=RunKind.COMPARE)
    assert run.status == "done" and run.report["winner"] == "B"
    assert not (run.run_dir / "comparisons.jsonl").exists()


def test_compare_with_a_run_id_appends_one_record_to_that_runs_log(oracle_judge, oracle, tmp_path, settings):
    oracle.add(tmp_path / "a.md", "first", 0.9)
    oracle.add(tmp_path / "b.md", "second", 0.2)
    run_command(
        "compare", str(tmp_path / "a.md"), str(tmp_path / "b.md"), "--goal", GOAL, "--run-id", "cmp1", "--judge", "oracle",
    )
    run_command(
        "compare", str(tmp_path / "b.md"), str(tmp_path / "a.md"), "--goal", GOAL, "--run-id", "cmp1", "--judge", "oracle",
    )
    log = read_jsonl(settings.DATA_DIR / "sst-llm-judge-ranker" / "cmp1" / "comparisons.jsonl")
    assert [(r["a"], r["b"], r["winner"], r["goal"]) for r in log] == [("a.md", "b.md", "A", GOAL), ("b.md", "a.md", "B", GOAL)]
    assert Run.objects.get(run_id="cmp1").kind == RunKind.COMPARE


def test_compare_into_a_rank_run_appends_to_its_comparisons_log(oracle_judge, oracle, tmp_path, settings):
    oracle.write(tmp_path / "c", 3)
    run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "rk", "--judge", "oracle")
    log = settings.DATA_DIR / "sst-llm-judge-ranker" / "rk" / "comparisons.jsonl"
    before = len(read_jsonl(log))
    files = sorted((tmp_path / "c").iterdir())
    run_command("compare", str(files[0]), str(files[1]), "--run-id", "rk", "--judge", "oracle")
    records = read_jsonl(log)
    assert len(records) == before + 1 and records[-1]["stage"] == "direct" and records[-1]["goal"] == "general quality"


def test_insert_places_a_new_candidate_and_reports_the_calls(oracle_judge, oracle, tmp_path, settings, fake_judge):
    truth = oracle.write(tmp_path / "c", 12, seed=1)
    run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "ins", "--judge", "oracle")
    path = ranklist_path(settings.DATA_DIR, "ins", "c")
    before = json.loads(path.read_text())
    third, fourth = truth[before[2]], truth[before[3]]
    oracle.add(tmp_path / "new.md", "a new candidate", (third + fourth) / 2)
    calls = len(fake_judge.chat_requests)

    out = run_command("insert", str(tmp_path / "new.md"), "--ranklist", str(path))

    after = json.loads(path.read_text())
    assert after == before[:3] + ["new.md"] + before[3:9]
    made = len(fake_judge.chat_requests) - calls
    assert 2 <= made <= max_comparisons(10)
    assert out.splitlines()[0] == f"Ranklist: {path}"
    assert f"Comparator calls: {made} for 1 insert" in out
    # Below the top 3, the new item's own place: it is not among the three lines above.
    assert f"Placed: new.md 4th of 10 (between {before[2]} and {before[3]})" in out.splitlines()
    metadata = read_jsonl(settings.DATA_DIR / "sst-llm-judge-ranker" / "ins" / "metadata.jsonl")
    assert [m["artifact_id"] for m in metadata][-1] == "new.md" and len(metadata) == 13


def test_an_insert_after_the_batch_updates_its_run_units_ranking_and_unplaced(
    oracle_judge, oracle, tmp_path, settings, fake_judge
):
    """The batch run's record follows the inserts made into its ranklist: one unit more for each, its stored
    ranking as the file has it, and a candidate the judge could not place among its unplaced."""
    from fakejudge import Reply

    oracle.write(tmp_path / "c", 3, seed=1)
    run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "ins-run", "--judge", "oracle")
    path = ranklist_path(settings.DATA_DIR, "ins-run", "c")
    oracle.add(tmp_path / "good.md", "a new candidate", 0.99)
    run_command("insert", str(tmp_path / "good.md"), "--ranklist", str(path))
    run = Run.objects.get(run_id="ins-run")
    assert (run.total_units, run.done_units, run.failed_units) == (4, 4, 0)
    assert run.report["ranking"] == json.loads(path.read_text()) and "good.md" in run.report["ranking"]

    oracle.add(tmp_path / "mute.md", "a candidate the judge will not compare", 0.5)
    fake_judge.action = Reply("I would rather not pick.")
    with pytest.raises(SystemExit):
        run_command("insert", str(tmp_path / "mute.md"), "--ranklist", str(path))
    run.refresh_from_db()
    assert (run.total_units, run.done_units, run.failed_units) == (5, 4, 1)
    assert [u["id"] for u in run.report["unplaced"]] == ["mute.md"]
    counts = run.report["counts"]
    assert counts["units"] == Judgment.objects.filter(run=run, purpose="judge").count() and counts["parse_failures"] >= 1


def test_insert_of_an_id_already_registered_is_skipped_at_no_cost(oracle_judge, oracle, tmp_path, settings, fake_judge):
    oracle.write(tmp_path / "c", 5)
    run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "dup", "--judge", "oracle")
    path = ranklist_path(settings.DATA_DIR, "dup", "c")
    before, calls = path.read_text(), len(fake_judge.chat_requests)
    # Same ID (basename), even with other content: registered once, skipped.
    other = tmp_path / "elsewhere"
    other.mkdir()
    oracle.add(other / "cand-002.md", "different content, same name", 1.0)
    run_command("insert", str(other / "cand-002.md"), "--ranklist", str(path))
    assert len(fake_judge.chat_requests) == calls
    assert path.read_text() == before
    assert len(read_jsonl(path.parent.parent / "metadata.jsonl")) == 5


def test_insert_with_another_goal_is_refused_with_a_rebuild_message_and_changes_nothing(oracle_judge, oracle, tmp_path, settings):
    oracle.write(tmp_path / "c", 4)
    run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "g", "--judge", "oracle")
    path = ranklist_path(settings.DATA_DIR, "g", "c")
    oracle.add(tmp_path / "new.md", "new", 0.5)
    before = (path.read_text(), Artifact.objects.count(), Insertion.objects.count())
    with pytest.raises(InputError, match="rebuild"):
        run_command("insert", str(tmp_path / "new.md"), "--ranklist", str(path), "--goal", "brevity")
    assert (path.read_text(), Artifact.objects.count(), Insertion.objects.count()) == before


def test_insert_with_the_same_goal_in_other_whitespace_is_accepted(oracle_judge, oracle, tmp_path, settings):
    oracle.write(tmp_path / "c", 3)
    run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "ws", "--judge", "oracle")
    oracle.add(tmp_path / "new.md", "new", 0.5)
    run_command(
        "insert", str(tmp_path / "new.md"), "--ranklist", str(ranklist_path(settings.DATA_DIR, "ws", "c")), "--goal",
        f"  {GOAL.replace(' ', '  ')} ",
    )
    assert Insertion.objects.filter(ranklist__run__run_id="ws", artifact__artifact_id="new.md", status="done").exists()


def test_insert_with_another_judge_is_refused(oracle_judge, oracle, tmp_path, settings, make_judge):
    make_judge("other")
    oracle.write(tmp_path / "c", 3)
    run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "j", "--judge", "oracle")
    oracle.add(tmp_path / "new.md", "new", 0.5)
    with pytest.raises(InputError, match="one comparator per ranklist"):
        run_command(
            "insert", str(tmp_path / "new.md"), "--ranklist", str(ranklist_path(settings.DATA_DIR, "j", "c")), "--judge", "other",
        )


def test_insert_into_an_unknown_ranklist_file_is_refused(oracle_judge, tmp_path):
    (tmp_path / "x.md").write_text("text")
    (tmp_path / "fake.ranklist.json").write_text("[]")
    with pytest.raises(InputError, match="not a ranklist judgeapp has built"):
        run_command("insert", str(tmp_path / "x.md"), "--ranklist", str(tmp_path / "fake.ranklist.json"))


@pytest.mark.parametrize(
    "content, message",
    [(b"", "empty"), (b"  \n\n", "empty"), (b"\x89PNG\r\n\x1a\n\x00\x00\x00", "binary"), (b"x" * 2001, "over the limit")],
)
def test_a_bad_candidate_file_refuses_the_whole_rank_and_writes_nothing(
    oracle_judge, oracle, tmp_path, settings, content, message
):
    settings.ARTIFACT_MAX_BYTES = 2000
    oracle.write(tmp_path / "c", 4)
    (tmp_path / "c" / "bad.bin").write_bytes(content)
    with pytest.raises(InputError, match=message):
        run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "bad", "--judge", "oracle")
    assert not Run.objects.exists() and not Artifact.objects.exists()
    assert not (settings.DATA_DIR / "sst-llm-judge-ranker" / "bad").exists()


@pytest.mark.parametrize("content, message", [(b"", "empty"), (b"ab\x00cd", "binary"), (b"y" * 2001, "over the limit")])
def test_a_bad_file_to_insert_or_compare_is_refused_and_nothing_changes(
    oracle_judge, oracle, tmp_path, settings, content, message
):
    oracle.write(tmp_path / "c", 3)
    run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", tmp_path.name, "--judge", "oracle")
    settings.ARTIFACT_MAX_BYTES = 2000
    (tmp_path / "bad.md").write_bytes(content)
    path = ranklist_path(settings.DATA_DIR, tmp_path.name, "c")
    before = (path.read_text(), Artifact.objects.count(), Run.objects.count())
    with pytest.raises(InputError, match=message):
        run_command("insert", str(tmp_path / "bad.md"), "--ranklist", str(path))
    with pytest.raises(InputError, match=message):
        run_command("compare", str(tmp_path / "bad.md"), str(tmp_path / "c" / "cand-000.md"), "--judge", "oracle")
    assert (path.read_text(), Artifact.objects.count(), Run.objects.count()) == before


def test_rank_of_a_missing_or_empty_directory_is_refused(oracle_judge, tmp_path):
    with pytest.raises(InputError, match="no such directory"):
        run_command("rank", str(tmp_path / "nope"), "--goal", GOAL, "--judge", "oracle")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no candidate files"):
        run_command("rank", str(tmp_path / "empty"), "--goal", GOAL, "--judge", "oracle")


def test_ranking_never_modifies_a_candidate(oracle_judge, oracle, tmp_path, settings):
    oracle.write(tmp_path / "c", 8)
    def snapshot():
        return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in (tmp_path / "c").iterdir()}
    before = snapshot()
    run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "ro", "--judge", "oracle")
    run_command("compare", str(tmp_path / "c" / "cand-000.md"), str(tmp_path / "c" / "cand-001.md"), "--judge", "oracle")
    assert snapshot() == before and sorted(before) == sorted(p.name for p in (tmp_path / "c").iterdir())


def test_rank_reports_an_unknown_judge_as_bad_input(tmp_path, db):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.md").write_text("a")
    with pytest.raises(InputError, match="unknown judge"):
        run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--judge", "nobody")


def test_a_new_run_refuses_a_directory_that_holds_an_earlier_runs_files(oracle_judge, oracle, tmp_path, settings):
    oracle.write(tmp_path / "c", 2)
    stale = settings.DATA_DIR / "sst-llm-judge-ranker" / "reused"
    stale.mkdir(parents=True)
    (stale / "metadata.jsonl").write_text('{"artifact_id": "old.md"}\n')
    with pytest.raises(InputError, match="already holds files of an earlier run"):
        run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "reused", "--judge", "oracle")
    assert not Run.objects.filter(run_id="reused").exists()
    assert (stale / "metadata.jsonl").read_text() == '{"artifact_id": "old.md"}\n'


@pytest.mark.parametrize(
    "argv, message",
    [
        (["compare", "{tmp}/empty.md", "{tmp}/empty.md"], "the file is empty"),
        (["rank", "{tmp}/missing", "--goal", "g"], "no such directory"),
        (["insert", "{tmp}/missing.md", "--ranklist", "{tmp}/x.ranklist.json"], "no such file"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_status_2(tmp_path, argv, message):
    (tmp_path / "empty.md").write_text("")
    result = subprocess.run(
        [sys.executable, "manage.py", *(a.format(tmp=tmp_path) for a in argv)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ") and message in result.stderr


def test_a_failed_compare_has_a_report_whose_counts_add_up(oracle_judge, oracle, tmp_path, fake_judge):
    """A compare whose judge never gives a usable verdict fails; its report (the API's, a command's --report)
    still says why and counts each reply the judge gave, adding up to the units it judged (CONTRACT §6)."""
    from fakejudge import Reply
    from judgeapp.api.selectors import report_get
    from judgeapp.judging.cli import report_of as command_report_of

    oracle.add(tmp_path / "good.md", "a thorough analysis", 0.9)
    oracle.add(tmp_path / "weak.md", "a thin note", 0.2)
    fake_judge.action = Reply("no verdict here")
    with pytest.raises(SystemExit) as exited:
        run_command("compare", str(tmp_path / "weak.md"), str(tmp_path / "good.md"), "--judge", "oracle")
    assert exited.value.code == 2
    run = Run.objects.get(kind=RunKind.COMPARE)
    assert run.status == "failed" and run.report is None
    for report in (report_get(run=run), command_report_of(run)):
        counts = report["counts"]
        assert report["status"] == "failed" and report["error"] == run.error
        assert counts["units"] == counts["parsed"] + counts["parse_failures"] + counts["truncated"] + counts["no_reply"]
        assert counts["units"] == run.judgments.filter(purpose="judge", status="failed").count() > 0
        assert counts["parse_failures"] == counts["units"]
