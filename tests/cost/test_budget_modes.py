"""Issue 29, item 4's spend cap in the modes beyond pointwise, pairwise and jury: the check-up, the agent judge,
the blind comparator and the ranker's batch `rank`. A priced judge with a tiny `--budget` stops the run at its
cap (invalid, `stopped: "budget"`, fewer units judged than planned, one request per judge call the report
counts); an unpriced judge with `--budget` is refused with one line and nothing stored."""

from decimal import Decimal

import pytest

from judgeapp.models import Judgment, Run, RunStatus, UnitStatus
from tests.checkup.builders import run_checkup_command
from tests.checkup.oracles import LabelOracle

pytestmark = pytest.mark.usefixtures("transactional_db")  # the commands write from their own threads

PRICES = {"input_price_per_million": Decimal("0.20"), "output_price_per_million": Decimal("0.60")}
# A few judge calls' worth at these prices (a call of these modes reads some hundreds of tokens).
TINY = "0.0002"


@pytest.fixture
def priced(make_judge):
    return make_judge("priced", **PRICES)


def assert_stopped_at_budget(result, fake_judge, *, planned: int, budget: str = TINY) -> dict:
    """The run stopped at its cap: invalid, its report says so, fewer units judged than planned, and the judge
    was asked once per call the report counts; the command says so and exits 1."""
    assert result.code == 1, result.err
    run = Run.objects.get()
    assert run.status == RunStatus.INVALID
    report = run.report
    assert report["stopped"] == "budget" and report["invalid"] is True
    judged = Judgment.objects.filter(run=run, judge__isnull=False, status=UnitStatus.DONE).count()
    assert 0 < judged < planned
    assert report["budget"]["units_judged"] == judged
    assert report["budget"]["units_judged"] + report["budget"]["units_not_judged"] == planned, report["usage"]
    assert report["budget"]["spent"] >= float(budget)
    assert len(fake_judge.chat_requests) == report["usage"]["calls"]
    assert any(f"stopped at its budget of ${budget}" in reason for reason in report["invalid_reasons"])
    assert f"stopped: budget: ${budget} reached after" in result.err
    return report


def assert_refused_unpriced(result, fake_judge):
    assert result.code == 2, result.err
    assert result.err.strip().splitlines()[-1].startswith("error: a budget needs prices for every judge")
    assert "Traceback" not in result.err
    assert not Run.objects.exists() and not Judgment.objects.exists()
    assert fake_judge.chat_requests == []


# --- The check-up --------------------------------------------------------------------------------------


class Result:
    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err


def command(capsys, name: str, *argv: str) -> Result:
    """`manage.py <name> …` as a shell runs it (exit status, one-line errors), in this process."""
    from django.core.management import load_command_class

    capsys.readouterr()
    try:
        load_command_class("judgeapp", name).run_from_argv(["manage.py", name, *argv])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return Result(code, out, err)


def checkup_cli(capsys, *argv):
    return Result(*run_checkup_command(capsys, *argv))


def test_a_check_up_stops_at_its_budget_and_leaves_the_unjudged_pairs_out_of_its_figures(capsys, priced, fake_judge):
    fake_judge.action = LabelOracle()
    result = checkup_cli(
        capsys, "--judge", "priced", "--set", "pandalm", "--sample", "10", "--concurrency", "1", "--budget", TINY
    )
    report = assert_stopped_at_budget(result, fake_judge, planned=20)
    entry = report["sets"]["pandalm"]
    judged_pairs = entry["counts"]["pairs"]
    assert entry["not_judged"] == 10 - judged_pairs and 0 < judged_pairs < 10
    # The pairs the cap left unjudged are not misses: the oracle judges every judged pair right.
    assert entry["figures"]["accuracy_all"]["value"] == 1.0
    assert f"{entry['not_judged']} pairs not judged: the check-up stopped at its budget" in result.out


def test_a_check_up_with_a_budget_needs_a_priced_judge(capsys, judge, fake_judge):
    assert_refused_unpriced(
        checkup_cli(capsys, "--judge", "judge-a", "--set", "pandalm", "--sample", "2", "--budget", "1"), fake_judge
    )


# --- The blind comparator -----------------------------------------------------------------------------


@pytest.fixture
def blind_inputs(tmp_path):
    from tests.blind.helpers import MIDDLING, STRONG, write_inputs, write_version

    a = write_version(tmp_path, "team-alpha", [MIDDLING, MIDDLING, MIDDLING])
    b = write_version(tmp_path, "team-beta", [STRONG, STRONG, STRONG])
    prompt, expectations = write_inputs(tmp_path)
    return ["--version", f"A={a}", "--version", f"B={b}", "--prompt", str(prompt), "--expectations", str(expectations),
            "--output", str(tmp_path / "comparison.json"), "--concurrency", "1"], tmp_path / "comparison.json"


def test_a_blind_comparison_stops_at_its_budget_and_writes_no_comparison(capsys, priced, fake_judge, blind_inputs):
    argv, output = blind_inputs
    # The rubric's call costs about $0.00024 at these prices, a run's scoring about as much.
    result = command(capsys, "blind-compare", *argv, "--judge", "priced", "--budget", "0.0006")
    report = assert_stopped_at_budget(result, fake_judge, planned=7, budget="0.0006")  # the rubric, then 6 runs scored
    runs = [entry for entries in report["runs"].values() for entry in entries]
    unscored = [entry for entry in runs if entry["error"] == "not judged: the run stopped at its budget"]
    assert len(unscored) == report["not_judged"] == report["budget"]["units_not_judged"] > 0
    assert report.get("written", []) == [] and not output.exists()
    assert report["comparison"] is None  # no winner named from part of the runs
    assert "No comparison was written." in result.err


def test_a_blind_comparison_with_a_budget_needs_a_priced_judge(capsys, judge, fake_judge, blind_inputs):
    argv, output = blind_inputs
    assert_refused_unpriced(command(capsys, "blind-compare", *argv, "--judge", "judge-a", "--budget", "1"), fake_judge)
    assert not output.exists()


# --- The agent judge ----------------------------------------------------------------------------------


@pytest.fixture
def agent_argv(tmp_path, settings):
    from tests.agent.helpers import REQUIREMENTS_MD, TASK, TRACE, make_workspace

    settings.AGENT_SANDBOX_ENABLED = False
    (tmp_path / "task.md").write_text(TASK)
    (tmp_path / "requirements.md").write_bytes(REQUIREMENTS_MD)  # three requirements, a conversation each
    (tmp_path / "trace.jsonl").write_bytes(TRACE)
    make_workspace(tmp_path / "ws", with_plot=False)
    return ["--task", str(tmp_path / "task.md"), "--requirements", str(tmp_path / "requirements.md"),
            "--workspace", str(tmp_path / "ws"), "--trace", str(tmp_path / "trace.jsonl"), "--concurrency", "1"]


def test_an_agent_judgment_stops_at_its_budget_its_unjudged_requirements_unverified(capsys, priced, fake_judge, agent_argv):
    result = command(capsys, "agent-judge", *agent_argv, "--judge", "priced", "--budget", TINY)
    report = assert_stopped_at_budget(result, fake_judge, planned=3)
    unjudged = [r for r in report["requirements"] if r["reason"] == "not judged: the run stopped at its budget"]
    assert len(unjudged) == report["budget"]["units_not_judged"] > 0
    assert all(r["verdict"] == "unverified" for r in unjudged)
    assert report["counts"]["unverified"] >= len(unjudged)
    # The requirements the cap left unjudged are not judge calls that failed.
    assert report["counts"]["no_reply"] == 0


def test_an_agent_judgment_with_a_budget_needs_a_priced_judge(capsys, judge, fake_judge, agent_argv):
    assert_refused_unpriced(command(capsys, "agent-judge", *agent_argv, "--judge", "judge-a", "--budget", "1"), fake_judge)


# --- The ranker's batch rank --------------------------------------------------------------------------


@pytest.fixture
def oracle():
    """Candidate files whose order only an oracle knows (tests/ranker/conftest.py)."""
    from tests.ranker.conftest import Oracle

    return Oracle()


@pytest.fixture
def priced_oracle(fake_judge, make_judge, oracle):
    from fakejudge import DemoBrain

    fake_judge.action = DemoBrain(artifact_quality_fn=oracle, tie_margin=1e-9)
    return make_judge("oracle", **PRICES)


def test_a_batch_rank_stops_at_its_spend_cap_and_reports_the_partial_ranklist(
    capsys, priced_oracle, oracle, fake_judge, tmp_path
):
    from judgeapp.models import Insertion, InsertionStatus

    oracle.write(tmp_path / "c", 12, seed=3)
    result = command(capsys, "rank", str(tmp_path / "c"), "--goal", "depth", "--judge", "oracle", "--budget-usd", TINY)
    assert result.code == 1, result.err
    run = Run.objects.get()
    report = run.report
    assert run.status == RunStatus.INVALID and report["stopped"] == "budget" and report["invalid"] is True
    placed = Insertion.objects.filter(status=InsertionStatus.DONE).count()
    assert 0 < placed < 12
    # The ranklist is the candidates placed before the cap; the others are said, not ranked.
    assert len(report["ranking"]) == placed and len(report["not_placed"]) == 12 - placed
    assert not set(report["ranking"]) & set(report["not_placed"])
    assert report["budget"]["candidates_not_placed"] == 12 - placed and report["budget"]["stopped"] is True
    assert report["budget"]["spent"] >= float(TINY)
    assert len(fake_judge.chat_requests) == report["usage"]["calls"]
    assert (
        f"stopped: budget: $0.0002 reached after {report['budget']['units_judged']} judgments; "
        f"{12 - placed} candidates not placed" in result.err
    )



def test_a_batch_rank_with_a_spend_cap_needs_a_priced_judge(capsys, judge, oracle, fake_judge, tmp_path):
    oracle.write(tmp_path / "c", 3)
    result = command(capsys, "rank", str(tmp_path / "c"), "--goal", "depth", "--judge", "judge-a", "--budget-usd", "1")
    assert_refused_unpriced(result, fake_judge)
