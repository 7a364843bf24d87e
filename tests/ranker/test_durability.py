"""Crashes and races: a process killed while writing the ranklist, a file write that fails, two inserts
into one ranklist at once, a worker killed in the middle of a batch rank."""

import io
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from django.core.management import call_command

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.judging import runs
from judgeapp.models import Comparison, Insertion, InsertionStatus, Run, RunStatus
from judgeapp.ranker.core import read_jsonl, write_ranklist
from judgeapp.ranker.services import candidates_in_dir, rank_run_create
from tests.helpers import ROOT, database_url_for_subprocess, wait_for
from tests.ranker.conftest import true_top

GOAL = "depth of the incident analysis"

WRITER = """
import sys
from judgeapp.ranker.core import write_ranklist
path, version = sys.argv[1], 0
print("writing", flush=True)
while True:
    write_ranklist(path, [f"v{version}-doc{j:04d}" for j in range(3000)])
    version += 1
"""


def test_a_process_killed_while_writing_leaves_a_whole_valid_ranklist(tmp_path):
    path = tmp_path / "ranking_state" / "set.ranklist.json"
    write_ranklist(path, ["v-start"])
    rng = random.Random(5)
    versions_seen = set()
    for _round in range(12):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path)], cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        try:
            assert writer.stdout.readline().strip() == "writing"
            time.sleep(rng.uniform(0.01, 0.25))
        finally:
            os.killpg(writer.pid, signal.SIGKILL)
            writer.wait(timeout=10)
            writer.stdout.close()
        ids = json.loads(path.read_text())  # always parses: never a half-written file
        assert ids == ["v-start"] or (len(ids) == 3000 and len({i.split("-")[0] for i in ids}) == 1)
        versions_seen.add(ids[0].split("-")[0])
    assert len(versions_seen) > 3  # the kills did land in the middle of many different writes


@pytest.mark.django_db
def test_a_failed_file_write_keeps_the_old_file_and_the_next_insert_repairs_it(
    oracle_judge, oracle, tmp_path, settings, monkeypatch
):
    truth = oracle.write(tmp_path / "c", 5)
    call_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "fw", "--judge", "oracle", stdout=io.StringIO())
    path = settings.DATA_DIR / "sst-llm-judge-ranker" / "fw" / "ranking_state" / "c.ranklist.json"
    before = path.read_text()
    oracle.add(tmp_path / "top.md", "best of all", 2.0)

    def disk_full(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(OSError):
        call_command("insert", str(tmp_path / "top.md"), "--ranklist", str(path), stdout=io.StringIO())
    assert path.read_text() == before  # the old list, whole
    monkeypatch.undo()

    oracle.add(tmp_path / "second.md", "second best", 1.5)
    call_command("insert", str(tmp_path / "second.md"), "--ranklist", str(path), stdout=io.StringIO())
    assert json.loads(path.read_text()) == ["top.md", "second.md"] + true_top(truth, 5)


def _insert_process(path, candidate) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": database_url_for_subprocess(), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    return subprocess.Popen(
        [sys.executable, "manage.py", "insert", str(candidate), "--ranklist", str(path)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


@pytest.mark.slow
def test_two_inserts_into_one_ranklist_at_once_are_serialised_and_neither_is_lost(
    transactional_db, make_judge, oracle, tmp_path, settings
):
    with FakeJudgeServer(DemoBrain(artifact_quality_fn=oracle, tie_margin=1e-9), latency=0.15) as slow:
        judge = make_judge("slow-oracle", server=slow)
        truth = oracle.write(tmp_path / "c", 10, seed=11)
        run = rank_run_create(
            candidates=candidates_in_dir(tmp_path / "c"), goal=GOAL, judge=judge, set_name="c", executor="inline"
        )
        runs.run_execute_inline(run=run)
        path = Run.objects.get(pk=run.pk).ranklists.get().path
        ranking = json.loads(path.read_text())
        oracle.add(tmp_path / "x.md", "candidate x", (truth[ranking[1]] + truth[ranking[2]]) / 2)
        oracle.add(tmp_path / "y.md", "candidate y", (truth[ranking[6]] + truth[ranking[7]]) / 2)
        slow.reset()

        first, second = _insert_process(path, tmp_path / "x.md"), _insert_process(path, tmp_path / "y.md")
        outputs = [p.communicate(timeout=120) for p in (first, second)]
        assert first.returncode == 0 and second.returncode == 0, outputs

        assert slow.max_in_flight == 1  # one comparison at a time: the inserts took turns
        final = json.loads(path.read_text())
        assert final == ranking[:2] + ["x.md"] + ranking[2:7] + ["y.md"] + ranking[7:8]
        insertions = Insertion.objects.filter(artifact__artifact_id__in=["x.md", "y.md"])
        assert {i.status for i in insertions} == {InsertionStatus.DONE}
        assert sorted(i.list_length for i in insertions) == [10, 10]
        metadata = read_jsonl(path.parent.parent / "metadata.jsonl")
        assert [m["artifact_id"] for m in metadata].count("x.md") == 1 and len(metadata) == 12


@pytest.mark.slow
def test_a_batch_rank_survives_a_killed_worker_and_judges_nothing_twice(worker_factory, make_judge, oracle, tmp_path):
    with FakeJudgeServer(DemoBrain(artifact_quality_fn=oracle, tie_margin=1e-9), latency=0.12) as slow:
        judge = make_judge("slow-oracle", server=slow)
        truth = oracle.write(tmp_path / "c", 24, seed=13)
        # A Celery run: sent to the workers as it is created, started by the first worker up.
        run = rank_run_create(candidates=candidates_in_dir(tmp_path / "c"), goal=GOAL, judge=judge, set_name="c", run_id="killed")
        first = worker_factory(concurrency=1)
        wait_for(lambda: Run.objects.get(pk=run.pk).done_units >= 6, 90, message="6 candidates inserted")
        first.kill()
        assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING

        worker_factory(concurrency=1)
        wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, 180, message="the batch rank to finish")

        run.refresh_from_db()
        assert run.status == RunStatus.DONE, run.error
        path = run.ranklists.get().path
        assert json.loads(path.read_text()) == true_top(truth, 10)
        assert run.done_units == 24
        prompts = [r.prompt for r in slow.chat_requests]
        assert len(prompts) - len(set(prompts)) <= 1  # only a call in flight at the kill is asked again
        run_dir = path.parent.parent
        metadata = read_jsonl(run_dir / "metadata.jsonl")
        assert [m["artifact_id"] for m in metadata] == sorted(truth)
        logged = read_jsonl(run_dir / "comparisons.jsonl")
        assert len({r["uuid"] for r in logged}) == len(logged) == Comparison.objects.filter(run=run).count()
