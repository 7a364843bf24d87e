"""Pairwise and jury runs with a prompt of the library (`--prompt`): the judge reads that text over HTTP and
the report names it; without one, the built-in prompt, named `default`."""

import json

import pytest

from fakejudge import DemoBrain
from judgeapp.judging.audit import cli_actor
from judgeapp.judging.library import prompt_template_save
from judgeapp.judging.prompts import library_prompt
from tests.factories import GOOD_REPLY
from tests.pairwise.builders import run_evaluate, write_files

pytestmark = pytest.mark.usefixtures("transactional_db")

# The seed's tags (which the demo judge reads), another task: the same slots, the reasoning first.
CODE_REVIEW = library_prompt("pairwise").text.replace(
    "Two assistants answered the same customer message.", "Two reviewers commented on the same code change."
)
JURY_SUMMARIES = library_prompt("jury").text.replace(
    "Judge the reply only against\nthe rubric.", "Judge the summary only against\nthe rubric; a summary adds no fact."
)
JURORS = [
    ("llama", "llama-3.1-8b-instruct", "meta"), ("mistral", "mistral-7b-instruct", "mistral"),
    ("gemma", "gemma-2-9b-it", "google"),
]


def oracle(reply: str, message: str = "") -> float:
    return 1.0 if GOOD_REPLY in reply else 0.0


def test_a_pairwise_run_with_a_custom_prompt_sends_it_and_names_it(judge, fake_judge, tmp_path, capsys):
    fake_judge.action = DemoBrain(quality=oracle)
    template = prompt_template_save(mode="pairwise", name="code-review", text=CODE_REVIEW, actor=cli_actor())
    files = write_files(tmp_path, n=3)
    code, out, err = run_evaluate(
        capsys, "pairwise", "--testset", files["testset"], "--a", files["a"], "--b", files["b"], "--rubric", files["rubric"],
        "--judge", "judge-a", "--report", str(tmp_path / "report.json"), "--prompt", "code-review",
    )
    assert code == 0, err
    prompts = [r.prompt for r in fake_judge.chat_requests]
    assert len(prompts) == 6 and all(p.startswith("Two reviewers commented on the same code change.") for p in prompts)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["prompt"] == {"name": "code-review", "version": "v1", "hash": template.version}
    assert report["versions"]["prompt"] == template.version


def test_a_pairwise_run_without_a_prompt_names_the_built_in_one(judge, fake_judge, tmp_path, capsys):
    fake_judge.action = DemoBrain(quality=oracle)
    files = write_files(tmp_path, n=2)
    code, out, err = run_evaluate(
        capsys, "pairwise", "--testset", files["testset"], "--a", files["a"], "--b", files["b"], "--rubric", files["rubric"],
        "--judge", "judge-a", "--report", str(tmp_path / "report.json"),
    )
    assert code == 0, err
    assert all(r.prompt.startswith("Two assistants answered") for r in fake_judge.chat_requests)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["prompt"] == {"name": "default", "version": "built-in", "hash": library_prompt("pairwise").version}


def test_a_jury_run_with_a_custom_prompt_sends_it_to_every_juror_and_names_it(make_judge, fake_judge, tmp_path, capsys):
    fake_judge.action = DemoBrain(quality=oracle)
    for name, model, family in JURORS:
        make_judge(name, model=model, family=family)
    template = prompt_template_save(mode="jury", name="summaries", text=JURY_SUMMARIES, actor=cli_actor())
    files = write_files(tmp_path, n=2, a={}, b={}, testset_outputs=lambda i: GOOD_REPLY)
    code, out, err = run_evaluate(
        capsys, "jury", "--testset", files["testset"], "--rubric", files["rubric"], "--judges", "llama,mistral,gemma",
        "--report", str(tmp_path / "jury.json"), "--prompt", "summaries",
    )
    assert code == 0, err
    prompts = [r.prompt for r in fake_judge.chat_requests]
    assert len(prompts) == 6 and all("a summary adds no fact" in p for p in prompts)
    report = json.loads((tmp_path / "jury.json").read_text())
    assert report["prompt"] == {"name": "summaries", "version": "v1", "hash": template.version}


def test_an_unknown_jury_prompt_is_one_line_and_exit_2(make_judge, fake_judge, tmp_path, capsys):
    for name, model, family in JURORS:
        make_judge(name, model=model, family=family)
    files = write_files(tmp_path, n=2, a={}, b={}, testset_outputs=lambda i: GOOD_REPLY)
    code, out, err = run_evaluate(
        capsys, "jury", "--testset", files["testset"], "--rubric", files["rubric"], "--judges", "llama,mistral,gemma", "--prompt",
        "nosuch",
    )
    assert code == 2 and err == "error: no jury prompt named 'nosuch'; the library has default\n"
    assert not fake_judge.chat_requests
