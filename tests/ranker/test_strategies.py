"""`--strategy robust|tournament` and failed comparisons, end to end: the CLI, the app's judge client over
real HTTP to the fake judge server, the database and the files (ranklist, sidecar, logs)."""

import io
import json

import pytest
from django.core.management import call_command

from fakejudge import Reply, Status, When, prompt_contains
from judgeapp.judging.errors import InputError
from judgeapp.models import Insertion, InsertionStatus, Judgment, Ranklist, Run, RunStatus
from judgeapp.ranker.core import read_jsonl
from tests.ranker.conftest import true_top

pytestmark = pytest.mark.django_db

GOAL = "depth of the incident analysis"


def run_command(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def run_failing(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command(*args, stdout=out, stderr=err)
    return exit_info.value.code, out.getvalue(), err.getvalue()


def paths(settings, run_id, set_name="c"):
    state = settings.DATA_DIR / "sst-llm-judge-ranker" / run_id / "ranking_state"
    return state / f"{set_name}.ranklist.json", state / f"{set_name}.ranklist.meta.json"


def calls_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("Comparator calls: "))


@pytest.mark.parametrize("strategy", ["robust", "tournament"])
def test_a_strategy_ranks_over_http_into_the_seeds_files_and_is_recorded_on_the_ranklist(
    strategy, oracle_judge, oracle, tmp_path, settings, fake_judge
):
    truth = oracle.write(tmp_path / "c", 24, seed=5)
    out, _err = run_command(
        "rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", strategy, "--judge", "oracle", "--max-size", "5", "--strategy",
        strategy,
    )

    path, sidecar = paths(settings, strategy)
    assert json.loads(path.read_text()) == true_top(truth, 5)  # a plain array of the top K, best first
    ranklist = Ranklist.objects.get(run__run_id=strategy)
    assert ranklist.strategy == strategy
    meta = json.loads(sidecar.read_text())
    assert meta["strategy"] == strategy and meta["ranking"] == true_top(truth, 5) and meta["unplaced"] == []
    assert meta["support"]["pairs"] == 4 and meta["support"]["supported"] == 4
    logged = read_jsonl(path.parent.parent / "comparisons.jsonl")
    assert len(logged) == len(fake_judge.chat_requests)  # one stored comparison per call, each order its own
    assert all(r.prompt.startswith(f"Comparison goal: {GOAL}\n") for r in fake_judge.chat_requests)  # the seed's prompt
    assert calls_line(out).startswith(f"Comparator calls: {len(fake_judge.chat_requests)} for 24 inserts")
    assert f"Strategy: {strategy}" in out
    assert "Order support: every adjacent pair of the 5 is supported by its own comparisons" in out
    report = Run.objects.get(run_id=strategy).report
    assert (
        report["strategy"] == strategy and report["support"]["line"]
        and report["judge_calls"]["http"] == len(fake_judge.chat_requests)
    )


def test_robust_keeps_a_reserve_out_of_the_file_and_insert_uses_it(oracle_judge, oracle, tmp_path, settings, fake_judge):
    truth = oracle.write(tmp_path / "c", 12, seed=8)
    run_command(
        "rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "rb", "--judge", "oracle", "--max-size", "4", "--strategy",
        "robust",
    )
    path, sidecar = paths(settings, "rb")
    ranking = true_top(truth, 9)
    assert json.loads(path.read_text()) == ranking[:4]
    assert json.loads(sidecar.read_text())["reserve"] == ranking[4:9]

    oracle.add(tmp_path / "new.md", "the new one", (truth[ranking[1]] + truth[ranking[2]]) / 2)
    out, _err = run_command("insert", str(tmp_path / "new.md"), "--ranklist", str(path))
    assert json.loads(path.read_text()) == ranking[:2] + ["new.md"] + ranking[2:3]
    assert "Strategy: robust" in out


def test_insert_refuses_another_strategy_and_a_budget_outside_the_tournament(oracle_judge, oracle, tmp_path, settings):
    oracle.write(tmp_path / "c", 4)
    run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "st", "--judge", "oracle", "--strategy", "robust")
    path, _sidecar = paths(settings, "st")
    oracle.add(tmp_path / "new.md", "new", 0.5)
    before = path.read_text()
    with pytest.raises(InputError, match="one strategy per ranklist"):
        run_command("insert", str(tmp_path / "new.md"), "--ranklist", str(path), "--strategy", "tournament")
    with pytest.raises(InputError, match="--budget is a limit of --strategy tournament"):
        run_command("insert", str(tmp_path / "new.md"), "--ranklist", str(path), "--budget", "5")
    with pytest.raises(InputError, match="--budget is a limit of --strategy tournament"):
        run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "st2", "--judge", "oracle", "--budget", "5")
    assert path.read_text() == before and not Insertion.objects.filter(artifact__artifact_id="new.md").exists()
    run_command("insert", str(tmp_path / "new.md"), "--ranklist", str(path), "--strategy", "robust")
    assert Insertion.objects.get(artifact__artifact_id="new.md").status == InsertionStatus.DONE


def test_tournament_stays_within_its_budget_and_says_it_is_not_confident(oracle_judge, oracle, tmp_path, settings, fake_judge):
    oracle.write(tmp_path / "c", 30, seed=2)
    out, _err = run_command(
        "rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "tb", "--judge", "oracle", "--max-size", "5", "--strategy",
        "tournament", "--budget", "40"
    )
    assert len(fake_judge.chat_requests) == 40
    report = Run.objects.get(run_id="tb").report
    assert report["tournament"]["budget"] == 40 and report["tournament"]["calls"] == 40
    assert report["tournament"]["stopped"] == "budget" and not report["tournament"]["confident"]
    assert "40 of a budget of 40 calls; not confident (stopped: budget)" in out
    assert len(json.loads(paths(settings, "tb")[0].read_text())) == 5


def test_the_order_support_says_when_the_judge_contradicts_the_list(judge, fake_judge, tmp_path, settings):
    for name in ("a.md", "b.md", "c.md"):
        (tmp_path / "c").mkdir(exist_ok=True)
        (tmp_path / "c" / name).write_text(f"text of {name}")
    fake_judge.action = Reply("WINNER: A\nRATIONALE: The first one shown.")  # pure position bias
    out, _err = run_command(
        "rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "sup", "--judge", judge.name, "--strategy", "robust",
    )
    meta = json.loads(paths(settings, "sup")[1].read_text())
    assert meta["support"]["contested"] == 2  # each pair won once in each order: nothing decides it
    assert "2 of 2 adjacent pairs not supported by their comparisons" in out and "contested (1 for, 1 against)" in out


# --- A comparison that fails (issue 14): retried, then the candidate unplaced, the batch goes on ---------


def test_a_context_length_400_leaves_one_candidate_unplaced_and_the_batch_goes_on(
    oracle_judge, oracle, tmp_path, settings, fake_judge
):
    truth = oracle.write(tmp_path / "c", 6, seed=3)
    broken = sorted(truth)[2]
    broken_text = (tmp_path / "c" / broken).read_text().strip()
    brain = fake_judge.action
    fake_judge.action = When(
        prompt_contains(broken_text),
        Status(400, message="This model's maximum context length is 8192 tokens", error_type="invalid_request_error"),
        brain,
    )
    code, out, err = run_failing("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "ctx", "--judge", "oracle")

    assert code == 1
    run = Run.objects.get(run_id="ctx")
    assert run.status == RunStatus.INVALID and run.done_units == 5 and run.failed_units == 1
    path, sidecar = paths(settings, "ctx")
    assert json.loads(path.read_text()) == true_top({k: v for k, v in truth.items() if k != broken}, 10)
    unplaced = json.loads(sidecar.read_text())["unplaced"]
    assert (
        [u["id"] for u in unplaced] == [broken] and "HTTP 400" in unplaced[0]["reason"]
        and "context length" in unplaced[0]["reason"]
    )
    assert f"unplaced: {broken} — " in err and "left unplaced" in err
    # The count is the HTTP requests really made: the failed one asked twice included.
    requests = fake_judge.chat_requests
    assert calls_line(out).startswith(f"Comparator calls: {len(requests)} for 6 inserts")
    assert sum(1 for r in requests if broken_text in r.prompt) == 2

    # Later, with the judge fixed, the same file is inserted again and placed.
    fake_judge.action = brain
    out, err = run_command("insert", str(tmp_path / "c" / broken), "--ranklist", str(path))
    assert json.loads(path.read_text()) == true_top(truth, 10)
    assert "was unplaced; trying it again" in err
    assert Insertion.objects.get(artifact__artifact_id=broken).status == InsertionStatus.DONE
    assert json.loads(sidecar.read_text())["unplaced"] == []
    assert Insertion.objects.get(artifact__artifact_id=broken).notes["failures"][0]["reason"].count("HTTP 400") == 1


def test_malformed_replies_are_retried_past_the_cache_then_left_unplaced_and_retried_later(
    oracle_judge, oracle, tmp_path, settings, fake_judge
):
    truth = oracle.write(tmp_path / "c", 5, seed=6)
    broken = sorted(truth)[3]
    broken_text = (tmp_path / "c" / broken).read_text().strip()
    brain = fake_judge.action
    fake_judge.action = When(prompt_contains(broken_text), Reply("I would rather not say."), brain)
    code, out, _err = run_failing("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "mal", "--judge", "oracle")
    assert code == 1
    # The client's parse retry, then the ranker's retry with the cache bypassed: 4 requests for that pair.
    assert sum(1 for r in fake_judge.chat_requests if broken_text in r.prompt) == 4
    assert calls_line(out).startswith(f"Comparator calls: {len(fake_judge.chat_requests)} for 5 inserts")
    failed = Judgment.objects.get(run__run_id="mal", status="failed")
    assert failed.attempts == 4 and "WINNER/RATIONALE" in Insertion.objects.get(artifact__artifact_id=broken).error

    fake_judge.action = brain
    seen = len(fake_judge.chat_requests)
    run_command("insert", str(tmp_path / "c" / broken), "--ranklist", str(paths(settings, "mal")[0]))
    assert len(fake_judge.chat_requests) > seen  # asked again, not the cached bad reply
    assert json.loads(paths(settings, "mal")[0].read_text()) == true_top(truth, 10)


def test_an_unplaced_candidate_is_retried_with_its_registered_content_only(oracle_judge, oracle, tmp_path, settings, fake_judge):
    truth = oracle.write(tmp_path / "c", 3, seed=1)
    broken = sorted(truth)[1]
    brain = fake_judge.action
    fake_judge.action = When(
        prompt_contains((tmp_path / "c" / broken).read_text().strip()), Status(400, message="too long"), brain,
    )
    run_failing("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "cnt", "--judge", "oracle")
    other = tmp_path / "other"
    other.mkdir()
    (other / broken).write_text("other content under the same name")
    with pytest.raises(InputError, match="registered in this ranklist with other content"):
        run_command("insert", str(other / broken), "--ranklist", str(paths(settings, "cnt")[0]))


@pytest.mark.parametrize("strategy", ["robust", "tournament"])
def test_a_strategy_leaves_a_failing_candidate_unplaced_and_ranks_the_rest(
    strategy, oracle_judge, oracle, tmp_path, settings, fake_judge
):
    truth = oracle.write(tmp_path / "c", 12, seed=4)
    broken = true_top(truth, 1)[0]
    brain = fake_judge.action
    fake_judge.action = When(
        prompt_contains((tmp_path / "c" / broken).read_text().strip()), Status(400, message="too long"), brain,
    )
    code, out, err = run_failing(
        "rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", f"f-{strategy}", "--judge", "oracle", "--max-size", "4",
        "--strategy", strategy
    )
    assert code == 1 and f"unplaced: {broken}" in err
    rest = {k: v for k, v in truth.items() if k != broken}
    assert json.loads(paths(settings, f"f-{strategy}")[0].read_text()) == true_top(rest, 4)
    assert calls_line(out).startswith(f"Comparator calls: {len(fake_judge.chat_requests)} for 12 inserts")


def test_a_judge_out_of_reach_leaves_the_candidate_unplaced_and_it_is_placed_once_the_judge_is_back(
    oracle_judge, oracle, tmp_path, settings, fake_judge
):
    truth = oracle.write(tmp_path / "c", 6, seed=9)
    brain = fake_judge.action
    run_command("rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "out", "--judge", "oracle", "--max-size", "3")
    fake_judge.action = Status(503, message="overloaded")
    for name in ("x.md", "y.md", "z.md", "w.md"):
        oracle.add(tmp_path / name, f"late candidate {name}", 2.0)
    code, _out, err = run_failing("insert", str(tmp_path / "x.md"), "--ranklist", str(paths(settings, "out")[0]))
    assert code == 1 and "HTTP 503" in err and "left unplaced" in err
    insertion = Insertion.objects.get(artifact__artifact_id="x.md")
    assert insertion.status == InsertionStatus.FAILED and "HTTP 503" in insertion.error
    fake_judge.action = brain
    run_command("insert", str(tmp_path / "x.md"), "--ranklist", str(paths(settings, "out")[0]))
    assert json.loads(paths(settings, "out")[0].read_text())[0] == "x.md"
    assert true_top(truth, 2) == json.loads(paths(settings, "out")[0].read_text())[1:]


def test_a_judge_out_of_reach_for_three_candidates_in_a_row_stops_the_batch_instead_of_failing_them_all(
    oracle_judge, oracle, tmp_path, fake_judge
):
    from judgeapp.judging import runs
    from judgeapp.ranker.services import candidates_in_dir, rank_run_create, unplaced_requeue

    truth = oracle.write(tmp_path / "c", 7, seed=2)
    brain = fake_judge.action
    fake_judge.action = Status(503, message="overloaded")
    run = rank_run_create(
        candidates=candidates_in_dir(tmp_path / "c"), goal=GOAL, judge=oracle_judge, set_name="c", run_id="down",
        executor="inline",
    )
    run = runs.run_execute_inline(run=run)
    assert run.status == RunStatus.FAILED and "out of reach for 3 candidates in a row" in run.error
    statuses = list(Insertion.objects.filter(ranklist__run=run).order_by("sequence").values_list("status", flat=True))
    assert statuses == ["done", "failed", "failed", "failed", "pending", "pending", "pending"]  # the first needed no call

    fake_judge.action = brain
    ranklist = Ranklist.objects.get(run=run)
    assert unplaced_requeue(ranklist=ranklist) == 3
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, error="")
    runs.run_sequential_execute(run_pk=run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.report["ranking"] == true_top(truth, 10) and run.done_units == 7


def test_insert_into_a_tournament_ranklist_runs_one_more_round_within_its_budget(
    oracle_judge, oracle, tmp_path, settings, fake_judge
):
    truth = oracle.write(tmp_path / "c", 12, seed=7)
    run_command(
        "rank", str(tmp_path / "c"), "--goal", GOAL, "--run-id", "ti", "--judge", "oracle", "--max-size", "4", "--strategy",
        "tournament",
    )
    path, _sidecar = paths(settings, "ti")
    ranking = true_top(truth, 4)
    oracle.add(tmp_path / "new.md", "a new candidate", (truth[ranking[0]] + truth[ranking[1]]) / 2)
    seen = len(fake_judge.chat_requests)
    out, _err = run_command("insert", str(tmp_path / "new.md"), "--ranklist", str(path), "--budget", "20")
    made = len(fake_judge.chat_requests) - seen
    assert 0 < made <= 20
    assert calls_line(out).startswith(f"Comparator calls: {made} for 1 insert")
    assert json.loads(path.read_text()) == [ranking[0], "new.md"] + ranking[1:3]
