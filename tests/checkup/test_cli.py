"""`manage.py judge-checkup` as a user or a CI script runs it."""

import json

import pytest

from fakejudge import ReplyJSON
from judgeapp.models import Judgment, Rubric, Run
from judgeapp.models import TestSet as StoredTestSet
from tests.checkup.builders import run_checkup_command
from tests.checkup.oracles import LabelOracle

pytestmark = pytest.mark.usefixtures("transactional_db")


def stored() -> tuple[int, int, int, int]:
    return Run.objects.count(), StoredTestSet.objects.count(), Rubric.objects.count(), Judgment.objects.count()


def test_a_check_up_prints_each_sets_figures_beside_the_published_ones_and_writes_the_report(judge, fake_judge, tmp_path, capsys):
    fake_judge.action = LabelOracle()
    report_path = tmp_path / "checkup.json"
    code, out, err = run_checkup_command(
        capsys, "--judge", "judge-a", "--set", "llmbar-natural,mt-bench-human", "--sample", "5", "--seed", "7",
        "--report", str(report_path), "--run-id", "checkup-cli", "--concurrency", "4",
    )
    assert code == 0, err
    assert out.startswith("Check-up checkup-cli of judge judge-a (fake-judge, version ")
    assert "  llmbar-natural: 5 of 100 pairs, 5 judged in both orders" in out
    assert "  mt-bench-human: 5 of 200 pairs, 5 judged in both orders" in out
    assert "    accuracy over all pairs (a disagreement is a miss): 100.0% [" in out
    assert "    position consistency (both orders agree): 100.0% [" in out
    assert "    Cohen's kappa with the human label: 1.00" in out
    assert "      published: GPT-4 92.0% (the basic prompt (LLMBar's Vanilla); both orders right" in out
    assert "      published: GPT-4 85.0% (agreement with the experts on non-tie votes" in out
    assert "  calls: 20 judgments called the judge (20 HTTP requests), 0 came from the response cache" in out
    assert (
        "\n  Units: 20: 20 parsed, 0 parse failures, 0 truncated, 0 no reply (after one retry each; 0 unusable, 0.0%).\n" in out
    )
    assert "Wilson" in out and "bootstrap" in out
    assert out.rstrip().endswith("\nverdict: passed")
    report = json.loads(report_path.read_text())
    assert report["verdict"] == {
        "passed": True, "text": "passed", "failures": [], "notes": [],
        "floors": {"position_consistency": 0.6, "accuracy_consistent": 0.6, "kappa": 0.4},
    }
    assert report["run_id"] == "checkup-cli" and report["kind"] == "checkup"
    assert (
        report["sample"] == {"size": 5, "seed": 7} and report["versions"]["rubric"]
        and report["versions"]["judge"] == judge.version
    )
    assert not list(tmp_path.glob(".checkup.json.*"))  # written by temp file and rename


def test_a_second_check_up_of_the_unchanged_judge_says_no_call_was_made(judge, fake_judge, capsys):
    fake_judge.action = LabelOracle()
    argv = ["--judge", "judge-a", "--set", "pandalm", "--sample", "3"]
    assert run_checkup_command(capsys, *argv)[0] == 0
    before = len(fake_judge.chat_requests)
    code, out, _ = run_checkup_command(capsys, *argv, "--json")
    assert code == 0 and len(fake_judge.chat_requests) == before
    assert json.loads(out)["calls"]["summary"] == "no judge call made: all 6 judgments came from the response cache"


def test_a_judge_that_always_says_1_is_shown_to_favour_the_first_position_and_fails_its_check_up(judge, fake_judge, capsys):
    fake_judge.action = ReplyJSON({"reasoning": "The first is better.", "winner": "1"})
    code, out, _ = run_checkup_command(capsys, "--judge", "judge-a", "--set", "mt-bench-human", "--sample", "12")
    assert code == 1  # a failed check-up exits 1, as an invalid one does
    assert out.rstrip().endswith("\nverdict: failed: position consistency 0% (floor 60%); kappa 0.00 (floor 0.40)")
    assert (
        "  note: accuracy over consistent verdicts is undefined on mt-bench-human, so it was not compared with its floor "
        "(60%)" in out
    )
    assert "    position consistency (both orders agree): 0.0% [" in out
    assert ("    when the orders disagreed (12): Reply 1 both times 12, Reply 2 both times 0, a tie in one order 0: "
            "favours Reply 1 (Reply 1 in 100.0% [") in out
    assert "chance alone" not in out


def test_a_judge_with_unusable_replies_exits_1_with_the_reason(judge, fake_judge, capsys):
    fake_judge.action = ReplyJSON({"reasoning": "no idea", "winner": "both"})
    code, out, _ = run_checkup_command(capsys, "--judge", "judge-a", "--set", "llmbar-natural", "--sample", "4")
    assert code == 1
    assert "parse failures 8, truncated replies 0" in out
    assert (
        "  invalid: 8 of 8 judge replies failed to parse after a retry, were cut at max_tokens or never came "
        "(8 unparsable, 0 truncated, 0 no reply)" in out
    )
    assert out.rstrip().endswith(
        "\nverdict: failed: the check-up is invalid (8 of 8 judge replies failed to parse after a retry, were cut at "
        "max_tokens or never came (8 unparsable, 0 truncated, 0 no reply): 100.0% > 5%; the figures count them as misses)"
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--judge", "nobody"], "unknown judge 'nobody'"),
        (
            ["--judge", "judge-a", "--set", "llmbar,pandalm"],
            "unknown set 'llmbar': choose from llmbar-natural, mt-bench-human, pandalm",
        ),
        (["--judge", "judge-a", "--seed", "3"], "--seed without --sample"),
        (["--judge", "judge-a", "--sample", "0"], "--sample 0: give a positive number of pairs"),
        (["--judge", "judge-a", "--report", "/no/such/dir/r.json"], "--report /no/such/dir/r.json: no such directory"),
        (["--judge", "judge-a", "--concurrency", "0"], "--concurrency 0: give at least 1"),
        (["--judge", "judge-a", "--run-id", "../x"], "run id '../x'"),
    ],
)
def test_bad_input_is_one_line_on_stderr_exit_2_and_nothing_stored(judge, fake_judge, capsys, argv, message):
    before = stored()
    code, _out, err = run_checkup_command(capsys, *argv)
    assert code == 2
    assert err.strip().startswith("error: ") and message in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and stored() == before
    assert fake_judge.chat_requests == []


def test_the_command_is_registered_with_its_flags_documented():
    from django.core.management import get_commands, load_command_class

    assert get_commands()["judge-checkup"] == "judgeapp"
    parser = load_command_class("judgeapp", "judge-checkup").create_parser("manage.py", "judge-checkup")
    text = parser.format_help()
    for flag in ("--judge", "--set", "--sample", "--seed", "--report"):
        assert flag in text
