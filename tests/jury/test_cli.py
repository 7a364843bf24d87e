"""`manage.py evaluate jury` as a user or a CI script runs it."""

import json

import pytest

from fakejudge import DemoBrain, Status, When
from judgeapp.models import Run
from judgeapp.models import TestSet as StoredTestSet
from tests.factories import BAD_REPLY, GOOD_REPLY
from tests.pairwise.builders import run_evaluate, write_files

pytestmark = pytest.mark.usefixtures("transactional_db")

JURORS = [("llama", "llama-3.1-8b-instruct", "meta"), ("mistral", "mistral-7b-instruct", "mistral"),
          ("gemma", "gemma-2-9b-it", "google"), ("qwen", "qwen2.5-7b-instruct", "qwen")]


def oracle(reply: str, message: str = "") -> float:
    return 1.0 if GOOD_REPLY in reply else 0.0


@pytest.fixture
def jurors(make_judge):
    return [make_judge(name, model=model, family=family) for name, model, family in JURORS]


def mixed(i: int) -> str:
    return GOOD_REPLY if i % 3 else BAD_REPLY


def test_jury_prints_the_pool_writes_the_report_and_exits_0(jurors, make_system, fake_judge, tmp_path, capsys):
    fake_judge.action = DemoBrain(quality=oracle)
    make_system("support-bot", model="gpt-4o-mini", family="openai")
    # support-bot's own outputs (a run labelled with a system never judges the test set's)
    files = write_files(tmp_path, n=6, a={f"c{i:03d}": mixed(i) for i in range(6)}, b={}, testset_outputs=None)
    code, out, err = run_evaluate(
        capsys, "jury", "--testset", files["testset"], "--rubric", files["rubric"], "--judges", "llama,mistral,gemma",
        "--system", "support-bot", "--outputs", files["a"], "--report", str(tmp_path / "jury.json"),
    )
    assert code == 0, err
    assert "pooled: 4 pass, 2 fail, 0 unjudged of 6 cases; pass rate 66.7%" in out
    report = json.loads((tmp_path / "jury.json").read_text())
    assert report["kind"] == "jury" and report["pass_rate"] == pytest.approx(4 / 6)
    assert report["per_judge_agreement"] == {"llama": 1.0, "mistral": 1.0, "gemma": 1.0}
    assert report["system"] == {
        "name": "support-bot", "model": "gpt-4o-mini", "family": "openai", "family_known": True, "checked": True,
    }
    assert [c["pooled"] for c in report["cases"]] == ["fail", "pass", "pass", "fail", "pass", "pass"]


def test_one_juror_down_the_others_pool_and_the_report_says_so(jurors, fake_judge, tmp_path, capsys):
    fake_judge.action = When(lambda r: r.model == "gemma-2-9b-it", Status(503), DemoBrain(quality=oracle))
    files = write_files(tmp_path, n=2, a={}, b={}, testset_outputs=mixed)
    code, out, _ = run_evaluate(
        capsys, "jury", "--testset", files["testset"], "--rubric", files["rubric"], "--judges", "llama,mistral,gemma", "--json",
    )
    report = json.loads(out)
    assert code == 1  # nothing could be pooled: the run is invalid
    from judgeapp.jury.cli import jury_summary

    # 2 cases x 3 jurors; gemma's server answered 503 on both (no reply), as the summary's Units line says.
    summary = jury_summary(Run.objects.get(run_id=report["run_id"]))
    assert "\nUnits: 6: 4 parsed, 0 parse failures, 0 truncated, 2 no reply (after one retry each; 2 unusable, 33.3%)." in summary
    assert report["unjudged"] == 2
    assert any("gemma gave no usable answer on 2 case(s)" in w for w in report["warnings"])
    assert any("not checked" in w for w in report["warnings"])


@pytest.mark.parametrize(
    "judges, system, message",
    [
        ("llama,mistral", None, "a jury needs at least 3"),
        ("llama,mistral,gemma,qwen", None, "4 judges can tie on a pass/fail vote; use an odd number"),
        ("llama,mistral,gemma", "gemma-bot", "gemma is of the google family, the family of the system under test"),
        ("llama,mistral,nobody", None, "unknown judge 'nobody'"),
        ("llama,llama,gemma", None, "judge llama is named twice"),
    ],
)
def test_a_panel_breaking_the_rules_is_one_line_exit_2_nothing_stored(
    jurors, make_system, tmp_path, capsys, judges, system, message
):
    make_system("gemma-bot", model="gemma-2-27b-it", family="google")
    files = write_files(tmp_path, n=2, a={}, b={}, testset_outputs=mixed)
    argv = ["jury", "--testset", files["testset"], "--rubric", files["rubric"], "--judges", judges]
    if system:
        argv += ["--system", system]
    code, out, err = run_evaluate(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert Run.objects.count() == 0 and StoredTestSet.objects.count() == 0


def test_a_test_set_without_outputs_needs_a_generating_system(jurors, make_system, fake_judge, tmp_path, capsys):
    make_system("support-bot")
    files = write_files(tmp_path, n=2, a={}, b={}, testset_outputs=None)
    base = ["jury", "--testset", files["testset"], "--rubric", files["rubric"], "--judges", "llama,mistral,gemma"]
    code, _, err = run_evaluate(capsys, *base)
    assert code == 2 and "have no 'output' to judge" in err
    code, out, err = run_evaluate(capsys, *base, "--system", "support-bot", "--generate", "--json")
    assert code == 0, err
    assert len(json.loads(out)["cases"]) == 2
