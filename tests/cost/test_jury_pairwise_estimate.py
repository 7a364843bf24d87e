"""`evaluate jury` and `evaluate pairwise --dry-run`: every juror's calls, tokens and cost from the inputs, no juror asked; its
tokens close to what the run then records. And the jury's summary says its usage."""

import json
from decimal import Decimal

import pytest

from judgeapp.models import Judgment, Run
from tests.factories import GOOD_REPLY
from tests.pairwise.builders import run_evaluate, write_files

pytestmark = pytest.mark.usefixtures("transactional_db")

JURORS = [("llama", "llama-3.1-8b-instruct", "meta"), ("mistral", "mistral-7b-instruct", "mistral"),
          ("gemma", "gemma-2-9b-it", "google")]


def test_jury_dry_run_asks_no_juror_and_its_tokens_are_near_the_run_s(make_judge, fake_judge, tmp_path, capsys):
    for name, model, family in JURORS:
        make_judge(
            name, model=model, family=family, input_price_per_million=Decimal("0.2"), output_price_per_million=Decimal("0.6"),
        )
    files = write_files(tmp_path, n=6, a={}, b={}, testset_outputs=lambda i: GOOD_REPLY)
    args = ("jury", "--testset", files["testset"], "--rubric", files["rubric"], "--judges", "llama,mistral,gemma")
    code, out, err = run_evaluate(capsys, *args, "--dry-run")
    assert code == 0, err
    assert fake_judge.chat_requests == [] and not Run.objects.exists()
    assert out.startswith("Estimate: about 18 judge calls")  # 6 cases × 3 jurors
    tokens_in = int(out.split(" tokens in")[0].rsplit(" ", 1)[-1].replace(",", ""))

    code, out, err = run_evaluate(capsys, *args, "--report", str(tmp_path / "jury.json"))
    assert code in (0, 1), err
    recorded = sum(Judgment.objects.values_list("prompt_tokens", flat=True))
    assert abs(tokens_in - recorded) <= 0.10 * recorded, (tokens_in, recorded)
    usage = json.loads((tmp_path / "jury.json").read_text())["usage"]
    assert usage["calls"] == 18 == len(fake_judge.chat_requests) and usage["cost"] > 0
    assert "Usage: 18 judge calls (0 cached)" in err


def test_pairwise_dry_run_asks_no_judge_and_its_tokens_are_near_the_run_s(make_judge, fake_judge, tmp_path, capsys):
    make_judge("judge-a", input_price_per_million=Decimal("0.2"), output_price_per_million=Decimal("0.6"))
    files = write_files(tmp_path, n=6)
    args = ("pairwise", "--testset", files["testset"], "--a", files["a"], "--b", files["b"], "--rubric", files["rubric"],
            "--judge", "judge-a")
    code, out, err = run_evaluate(capsys, *args, "--dry-run")
    assert code == 0, err
    assert fake_judge.chat_requests == [] and not Run.objects.exists()
    assert out.startswith("Estimate: about 12 judge calls")  # 6 cases × 2 orders
    tokens_in = int(out.split(" tokens in")[0].rsplit(" ", 1)[-1].replace(",", ""))

    code, out, err = run_evaluate(capsys, *args)
    assert code in (0, 1), err
    recorded = sum(Judgment.objects.values_list("prompt_tokens", flat=True))
    assert abs(tokens_in - recorded) <= 0.10 * recorded, (tokens_in, recorded)
    assert "Usage: 12 judge calls (0 cached)" in err


@pytest.mark.parametrize("mode", ["pairwise", "jury"])
def test_a_budget_stops_a_pairwise_or_jury_run_invalid_with_exit_1(mode, make_judge, fake_judge, tmp_path, capsys):
    dear = {"input_price_per_million": Decimal("1000"), "output_price_per_million": Decimal("1000")}
    for name, model, family in JURORS:
        make_judge(name, model=model, family=family, **dear)
    files = write_files(tmp_path, n=10, testset_outputs=lambda i: GOOD_REPLY)
    which = (
        ("--a", files["a"], "--b", files["b"], "--judge", "llama") if mode == "pairwise"
        else ("--judges", "llama,mistral,gemma")
    )
    code, out, err = run_evaluate(
        capsys, mode, "--testset", files["testset"], "--rubric", files["rubric"], *which, "--budget", "0.5",
        "--concurrency", "1", "--report", str(tmp_path / "report.json"),
    )
    assert code == 1, err
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["stopped"] == "budget" and Run.objects.get().status == "invalid"
    assert 0 < report["budget"]["units_judged"] < report["budget"]["units_judged"] + report["budget"]["units_not_judged"]
    assert report["usage"]["calls"] == len(fake_judge.chat_requests) == report["budget"]["units_judged"]
    assert "stopped: budget: $0.5000 reached after" in err


def test_a_pairwise_dry_run_refuses_a_version_s_outputs_as_the_run_does(make_judge, fake_judge, tmp_path, capsys):
    make_judge("judge-a", input_price_per_million=Decimal("0.2"), output_price_per_million=Decimal("0.6"))
    files = write_files(tmp_path, n=4)
    short = tmp_path / "short.jsonl"
    short.write_bytes(b'{"id": "c000", "output": "hi"}\n')
    args = ("pairwise", "--testset", files["testset"], "--a", files["a"], "--b", str(short), "--rubric", files["rubric"],
            "--judge", "judge-a")
    for extra in (("--dry-run",), ()):
        code, out, err = run_evaluate(capsys, *args, *extra)
        assert code == 2 and "short.jsonl: no output for case(s) c001, c002, c003 of the test set (version B)" in err, err
    assert fake_judge.chat_requests == [] and not Run.objects.exists()
