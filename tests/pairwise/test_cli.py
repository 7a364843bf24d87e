"""`manage.py evaluate pairwise` as a user or a CI script runs it."""

import json

import pytest

from fakejudge import DemoBrain
from judgeapp.models import Output, Run
from judgeapp.models import TestSet as StoredTestSet
from tests.factories import GOOD_REPLY
from tests.pairwise.builders import good_and_bad, run_evaluate, write_files

pytestmark = pytest.mark.usefixtures("transactional_db")


def oracle(reply: str, message: str = "") -> float:
    return 1.0 if GOOD_REPLY in reply else 0.0


def put(path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def stored() -> tuple[int, int, int]:
    return Run.objects.count(), StoredTestSet.objects.count(), Output.objects.count()


def test_conclusive_comparison_prints_the_winner_writes_the_report_and_exits_0(judge, fake_judge, tmp_path, capsys):
    fake_judge.action = DemoBrain(quality=oracle)
    files = write_files(tmp_path, n=6)
    code, out, err = run_evaluate(
        capsys, "pairwise", "--testset", files["testset"], "--a", files["a"], "--b", files["b"],
        "--rubric", files["rubric"], "--judge", "judge-a", "--report", str(tmp_path / "report.json"), "--run-id", "ab-cli",
    )
    assert code == 0, err
    assert "Result: A wins (100.0% of decisive cases)" in out
    # 6 cases, both orders
    assert "\n" + (
        "Units: 12: 12 parsed, 0 parse failures, 0 truncated, 0 no reply (after one retry each; 0 unusable, 0.0%)."
    ) in out
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["run_id"] == "ab-cli" and report["kind"] == "pairwise"
    assert (report["wins_a"], report["wins_b"], report["ties"], report["winner"]) == (6, 0, 0, "A")
    assert report["inconclusive"] is False and report["versions"]["testset"]
    assert not list(tmp_path.glob(".report.json.*"))  # the temp file was renamed into place


def test_a_position_biased_judge_makes_it_inconclusive_exit_1(judge, fake_judge, tmp_path, capsys):
    fake_judge.action = DemoBrain(quality=oracle, position_bias=1.0)
    files = write_files(tmp_path, n=4)
    code, out, _ = run_evaluate(
        capsys, "pairwise", "--testset", files["testset"], "--a", files["a"], "--b", files["b"],
        "--rubric", files["rubric"], "--judge", "judge-a", "--json",
    )
    assert code == 1
    report = json.loads(out)
    assert report["inconclusive"] is True and report["winner"] is None and report["tie_rate"] == 1.0


def test_systems_generate_the_versions_on_a_seeded_sample_in_parallel(judge, make_system, fake_judge, tmp_path, capsys):
    fake_judge.action = DemoBrain(quality=lambda reply, message="": min(1.0, len(reply) / 100))
    make_system("bot-v1", system_prompt="Be brief.")
    make_system("bot-v2", system_prompt="Give concrete next steps.")
    files = write_files(tmp_path, n=12, a={}, b={})
    argv = ["pairwise", "--testset", files["testset"], "--system-a", "bot-v1", "--system-b", "bot-v2",
            "--rubric", files["rubric"], "--judge", "judge-a", "--sample", "5", "--seed", "42", "--concurrency", "4", "--json"]
    code, out, err = run_evaluate(capsys, *argv)
    assert code == 0, err
    report = json.loads(out)
    assert report["winner"] == "B" and report["judged"] == 5
    assert report["sample"] == {"size": 5, "seed": 42, "of": 12}
    code, again, _ = run_evaluate(capsys, *argv)
    assert [c["case_id"] for c in json.loads(again)["cases"]] == [c["case_id"] for c in report["cases"]]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda f, p: f.update(testset=str(p / "missing.jsonl")), "missing.jsonl: no such file"),
        (lambda f, p: f.update(testset=put(p / "bin.jsonl", b"\x00\x01\x02")), "binary file"),
        (lambda f, p: f.update(a=put(p / "empty.jsonl", b"")), "the file is empty"),
        (lambda f, p: f.update(rubric=put(p / "r.toml", b"name = 'x'\n")), "missing 'criteria'"),
        (lambda f, p: f.update(b=put(p / "short.jsonl", b'{"id": "c000", "output": "hi"}\n')),
         r"short.jsonl: no output for case\(s\) c001, c002, c003 of the test set \(version B\)"),
        (lambda f, p: f.update(judge="nobody"), "unknown judge 'nobody'"),
        (lambda f, p: f.update(report=str(p / "no-such-dir" / "r.json")), "no such directory"),
    ],
)
def test_bad_input_is_one_line_on_stderr_exit_2_and_nothing_stored(judge, tmp_path, capsys, change, message):
    import re

    files = {**write_files(tmp_path, n=4), "judge": "judge-a", "report": str(tmp_path / "r.json")}
    change(files, tmp_path)
    before = stored()
    code, out, err = run_evaluate(
        capsys, "pairwise", "--testset", files["testset"], "--a", files["a"], "--b", files["b"],
        "--rubric", files["rubric"], "--judge", files["judge"], "--report", files["report"],
    )
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and re.search(message, err), err
    assert "Traceback" not in err and out == ""
    assert stored() == before


def test_an_unknown_system_is_refused(judge, tmp_path, capsys):
    files = write_files(tmp_path, n=2)
    code, _, err = run_evaluate(
        capsys, "pairwise", "--testset", files["testset"], "--system-a", "ghost", "--b", files["b"],
        "--rubric", files["rubric"], "--judge", "judge-a",
    )
    assert code == 2 and "unknown system 'ghost'" in err and Run.objects.count() == 0


def test_a_and_b_outputs_with_the_winner_on_mixed_cases(judge, fake_judge, tmp_path, capsys):
    fake_judge.action = DemoBrain(quality=oracle)
    a, b = good_and_bad(8, a_better=lambda i: i % 4 == 0)
    files = write_files(tmp_path, a=a, b=b, n=8)
    code, out, _ = run_evaluate(
        capsys, "pairwise", "--testset", files["testset"], "--a", files["a"], "--b", files["b"],
        "--rubric", files["rubric"], "--judge", "judge-a",
    )
    assert code == 0
    assert "wins A 2, wins B 6, ties 0" in out and "Result: B wins (75.0% of decisive cases)" in out
