"""Issue 29, item 4 at the command line: `--dry-run` estimates a run's judge calls, tokens and cost from its
inputs (no judge asked, nothing stored) close to what the run then records; `--budget` stops a run at its cap
with `stopped: budget`, and the gate holds it invalid; every report carries `usage`, a recount of its judgments."""

import json
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.db.models import Count, Q, Sum

from judgeapp.models import Judgment, Run, RunStatus, UnitStatus

pytestmark = pytest.mark.django_db

DEMO = Path(settings.BASE_DIR) / "evals" / "support"
DEMO_TESTSET, DEMO_RUBRIC = str(DEMO / "testset.jsonl"), str(DEMO / "rubric.toml")


def evaluate(cli, *args):
    # One judge call at a time: the test's open transaction would lock SQLite against other threads' writes.
    return cli("evaluate", "pointwise", "--concurrency", "1", *args)


def recount(run: Run) -> dict:
    """The judgments' own figures, summed here, independent of the report's code."""
    units = Judgment.objects.filter(run=run, judge__isnull=False)
    return units.aggregate(
        calls=Sum("attempts"), cached=Count("id", filter=Q(cached=True)), input_tokens=Sum("prompt_tokens"),
        output_tokens=Sum("completion_tokens"),
    )


def test_dry_run_asks_no_judge_stores_no_run_and_estimates_within_ten_percent(cli, priced_judge, fake_judge, tmp_path):
    dry = evaluate(cli, "--testset", DEMO_TESTSET, "--rubric", DEMO_RUBRIC, "--judge", "priced", "--dry-run")
    assert dry.code == 0, dry.err
    assert fake_judge.chat_requests == []
    assert not Run.objects.exists()
    assert "Estimate: about 72 judge calls" in dry.out  # 24 cases × 3 criteria
    line = dry.out.splitlines()[0]
    tokens_in = int(line.split(" tokens in")[0].rsplit(" ", 1)[-1].replace(",", ""))
    tokens_out = int(line.split(" out")[0].rsplit(" ", 1)[-1].replace(",", ""))

    report_path = tmp_path / "report.json"
    real = evaluate(cli, "--testset", DEMO_TESTSET, "--rubric", DEMO_RUBRIC, "--judge", "priced", "--report", str(report_path))
    assert real.code in (0, 1), real.err
    run = Run.objects.get()
    recorded = recount(run)
    assert recorded["calls"] == len(fake_judge.chat_requests) == 72
    estimated_total, recorded_total = tokens_in + tokens_out, recorded["input_tokens"] + recorded["output_tokens"]
    assert abs(estimated_total - recorded_total) <= 0.10 * recorded_total, (tokens_in, tokens_out, recorded)
    assert abs(tokens_in - recorded["input_tokens"]) <= 0.10 * recorded["input_tokens"]

    # Once the judge has judged, its own tokens replace the defaults: closer still.
    again = evaluate(cli, "--testset", DEMO_TESTSET, "--rubric", DEMO_RUBRIC, "--judge", "priced", "--dry-run")
    assert again.code == 0 and "as the judge's last 72 judgments went" in again.out
    line = again.out.splitlines()[0]
    learned_out = int(line.split(" out")[0].rsplit(" ", 1)[-1].replace(",", ""))
    assert abs(learned_out - recorded["output_tokens"]) <= 0.02 * recorded["output_tokens"]
    assert len(fake_judge.chat_requests) == 72


def test_report_usage_is_a_recount_of_the_judgments_and_prices_them(cli, priced_judge, fake_judge, files, tmp_path):
    testset, rubric = files(n=6)
    report_path = tmp_path / "report.json"
    result = evaluate(cli, "--testset", testset, "--rubric", rubric, "--judge", "priced", "--report", str(report_path))
    assert result.code in (0, 1), result.err
    usage = json.loads(report_path.read_text())["usage"]
    recorded = recount(Run.objects.get())
    assert {k: usage[k] for k in recorded} == recorded
    assert usage["calls"] == len(fake_judge.chat_requests) == 6
    prices = Decimal("0.20"), Decimal("0.60")
    expected = (recorded["input_tokens"] * prices[0] + recorded["output_tokens"] * prices[1]) / 1_000_000
    assert usage["cost"] == pytest.approx(float(expected), abs=1e-6)
    assert usage["cost"] > 0
    assert f"Usage: 6 judge calls (0 cached), {recorded['input_tokens']:,} tokens in" in result.err
    assert "Usage: 6 judge calls" in result.out  # the Markdown summary says it too

    # Run again: every answer comes from the response cache, tokens recorded, nothing paid.
    again = tmp_path / "again.json"
    evaluate(cli, "--testset", testset, "--rubric", rubric, "--judge", "priced", "--report", str(again))
    usage = json.loads(again.read_text())["usage"]
    assert (usage["calls"], usage["cached"], usage["cost"]) == (0, 6, 0)
    assert usage["input_tokens"] == recorded["input_tokens"]


def test_cost_is_null_when_the_judge_has_no_price(cli, judge, files, tmp_path):
    testset, rubric = files(n=2)
    report_path = tmp_path / "report.json"
    result = evaluate(cli, "--testset", testset, "--rubric", rubric, "--report", str(report_path))
    assert result.code in (0, 1), result.err
    usage = json.loads(report_path.read_text())["usage"]
    assert usage["cost"] is None and usage["calls"] == 2 and usage["input_tokens"] > 0
    assert "cost no price" in result.err


def test_budget_stops_the_run_at_its_cap_and_the_gate_holds_it_invalid(cli, make_judge, fake_judge, files, tmp_path):
    # $1 a thousand input tokens: each pointwise call of these files costs about 20 cents, so 50 cents buys three.
    make_judge("dear", input_price_per_million=Decimal("1000"), output_price_per_million=Decimal("1000"))
    testset, rubric = files(n=20)
    report_path = tmp_path / "report.json"
    result = cli(
        "evaluate", "pointwise", "--testset", testset, "--rubric", rubric, "--judge", "dear", "--budget", "0.50",
        "--concurrency", "1",
        "--report", str(report_path),
    )
    assert result.code == 1, result.err
    report = json.loads(report_path.read_text())
    run = Run.objects.get()
    assert run.status == RunStatus.INVALID and report["stopped"] == "budget"
    judged = Judgment.objects.filter(run=run, status=UnitStatus.DONE).count()
    assert 0 < judged < 20
    assert Judgment.objects.filter(run=run, status=UnitStatus.CANCELLED).count() == 20 - judged
    assert len(fake_judge.chat_requests) == judged
    cost = report["usage"]["cost"]
    per_call = cost / judged
    assert 0.50 <= cost < 0.50 + per_call  # stopped at the first call past the cap, none after
    assert report["budget"]["units_judged"] == judged and report["budget"]["units_not_judged"] == 20 - judged
    assert report["budget"]["cases_judged"] == [f"c{i:03d}" for i in range(judged)]
    assert report["invalid"] is True
    assert report["gate"]["passed"] is False
    assert any("stopped at its budget of $0.5000" in reason for reason in report["gate"]["reasons"])
    assert "stopped: budget: $0.5000 reached after" in result.err
    # The units the cap left unjudged are not counted as replies that never came.
    assert report["invalid_reasons"] == ["the run stopped at its budget of $0.5000 before every unit was judged"]


def test_budget_needs_a_priced_judge_and_a_positive_amount(cli, judge, files):
    testset, rubric = files(n=2)
    unpriced = evaluate(cli, "--testset", testset, "--rubric", rubric, "--budget", "1")
    assert unpriced.code == 2
    last = unpriced.err.strip().splitlines()[-1]
    assert last.startswith("error: a budget needs prices for every judge, and judge judge-a has none")
    for bad in ("-1", "0", "lots", "nan"):
        refused = evaluate(cli, "--testset", testset, "--rubric", rubric, "--budget", bad)
        assert refused.code == 2 and "Traceback" not in refused.err
        assert refused.err.strip().splitlines()[-1].startswith("error: ")
    assert not Run.objects.exists()


def test_a_dry_run_estimates_the_run_its_arguments_name(cli, judge, files, make_system, tmp_path, fake_judge):
    """--dry-run reads the inputs as the run would: a stored test set and rubric by name, the system version's
    outputs by --outputs-version, the library prompt --prompt names; what the run refuses, it refuses too."""
    from judgeapp.judging.content import testset_store
    from tests.factories import testset_bytes

    testset, rubric = files(n=2)
    first = evaluate(cli, "--testset", testset, "--rubric", rubric, "--format", "json")  # stores "support" v1, the rubric
    assert first.code in (0, 1), first.err
    testset_store(data=testset_bytes(5), name="support.jsonl")  # v2
    rubric_name = Run.objects.get().rubric.name
    criteria = Run.objects.get().rubric.criteria.count()
    by_name = evaluate(cli, "--testset", "support", "--rubric", rubric_name, "--dry-run")
    assert by_name.code == 0, by_name.err
    assert f"Estimate: about {5 * criteria} judge calls" in by_name.out
    assert Run.objects.count() == 1

    make_system("support-bot")
    given = tmp_path / "v21.jsonl"
    given.write_text("".join(json.dumps({"id": f"c00{i}", "output": "x"}) + "\n" for i in range(2)), encoding="utf-8")
    added = cli("outputs", "add", "--system", "support-bot", "--label", "v2.1", "--testset", testset, "--file", str(given))
    assert added.code == 0, added.err
    unknown_label = evaluate(cli, "--testset", testset, "--rubric", rubric, "--system", "support-bot", "--outputs-version", "v9",
                             "--dry-run")
    assert unknown_label.code == 2 and "support-bot has no outputs labelled 'v9' for this test set" in unknown_label.err
    unknown_prompt = evaluate(cli, "--testset", testset, "--rubric", rubric, "--prompt", "nothing-so-named", "--dry-run")
    assert unknown_prompt.code == 2 and "no pointwise prompt named 'nothing-so-named'" in unknown_prompt.err
    assert Run.objects.count() == 1 and len(fake_judge.chat_requests) == 2 * criteria
