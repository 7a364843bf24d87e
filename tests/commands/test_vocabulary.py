"""Issue 30, item 6: every management command's output (stdout and stderr, run with typical arguments over the
demo data, judged by the scripted demo judge) in the words a reviewer uses: no specification document
("seed", "ranker.md"), no internals ("Celery", "Mode 2"), no wrong state word — the list the page crawl
reads (tests/web/test_vocabulary.py). Exit codes 1 and 2 are fine here (a blocked gate, a missing checkout):
their one line is output too. `--help` is left out: it names the flags a CI job types, `--strategy seed`
among them. `up` starts servers; what it prints about the demo is the demo fixture's lines, checked below."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from judgeapp.judging.cli import failure_line
from judgeapp.judging.errors import InputError
from tests.crawl import demo  # noqa: F401 (a fixture)
from tests.helpers import ROOT
from tests.web.test_vocabulary import internal_words_in

pytestmark = pytest.mark.slow

EVALS = ROOT / "evals"
SUPPORT = ["--testset", str(EVALS / "support/testset.jsonl"), "--rubric", str(EVALS / "support/rubric.toml")]
POSTMORTEMS = EVALS / "ranker/checkout-postmortems"
RUNBOOK = EVALS / "blind/runbook"


def commands_in_the_repo() -> set[str]:
    folders = [ROOT / "judgeapp/management/commands", ROOT / "calibration/management/commands"]
    return {path.stem for folder in folders for path in folder.glob("*.py") if not path.stem.startswith("_")}


def run(*argv: str) -> str:
    """The command's stdout and stderr together, whatever its exit status."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(*argv, stdout=out, stderr=err)
    except SystemExit:
        pass
    except (InputError, CommandError) as exc:  # bad input: `manage.py` prints its one line
        err.write(f"error: {exc}")
    except Exception as exc:  # anything else: one line too (tests/commands/test_exit_codes.py)
        err.write(f"error: {failure_line(exc)}")
    return out.getvalue() + err.getvalue()


def typical_runs(tmp: Path) -> dict[str, list[list[str]]]:
    """Each command with the arguments its README line uses, over the demo's runs, judges and files."""
    (tmp / "v11.jsonl").write_text("".join(
        json.dumps({"id": json.loads(line)["id"], "output": "Sorry about that; here is how to fix it."}) + "\n"
        for line in (EVALS / "support/testset.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    ))
    (tmp / "labels.csv").write_text("run_id,case_id,criterion,annotator,label\ndemo-pointwise,refund-01,helpfulness,ann-x,4\n")
    ranked = tmp / "ranked"
    ranked.mkdir()
    for path in sorted(POSTMORTEMS.glob("*.md"))[:5]:
        (ranked / path.name).write_bytes(path.read_bytes())
    versions = sorted((RUNBOOK / "versions").iterdir())
    return {
        "evaluate": [
            [
                "evaluate", "pointwise", *SUPPORT, "--judge", "demo-judge", "--system", "support-bot-v1", "--generate",
                "--run-id", "vocab-pw",
            ],
            ["evaluate", "pairwise", "--testset", str(EVALS / "support/testset.jsonl"), "--system-a", "support-bot-v1",
             "--system-b", "support-bot-v2", "--rubric", str(EVALS / "support/rubric.toml"), "--judge", "demo-judge",
             "--sample", "3", "--seed", "1", "--run-id", "vocab-pair"],
            [
                "evaluate", "jury", *SUPPORT, "--judges", "demo-juror-llama,demo-juror-mistral,demo-juror-gemma", "--run-id",
                "vocab-jury",
            ],
        ],
        "gate": [["gate", "demo-pointwise"], ["gate", "demo-pointwise-candidate"], ["gate", "vocab-pw"]],
        "compare-runs": [["compare-runs", "demo-pointwise-candidate", "demo-pointwise", "--limit", "3"]],
        "compare": [
            ["compare", str(ranked / "alder.md"), str(ranked / "birch.md"), "--judge", "demo-judge", "--run-id", "vocab-cmp"]
        ],
        "rank": [["rank", str(ranked), "--goal", "a postmortem that explains the root cause", "--judge", "demo-judge",
                  "--max-size", "3", "--run-id", "vocab-rank", "--set", "postmortems"]],
        "insert": [["insert", str(POSTMORTEMS / "fir.md"), "--ranklist",
                    str(tmp / "data/sst-llm-judge-ranker/vocab-rank/ranking_state/postmortems.ranklist.json")]],
        "agent-judge": [["agent-judge", "--task", str(EVALS / "agent/flowers/task.md"), "--requirements",
                         str(EVALS / "agent/flowers/requirements.md"), "--workspace", str(EVALS / "agent/flowers/workspace"),
                         "--trace", str(EVALS / "agent/flowers/trace.jsonl"), "--judge", "demo-judge", "--run-id",
                         "vocab-agent"]],
        "agent-devai-agreement": [["agent-devai-agreement", "--checkout", str(tmp / "no-checkout"), "--judge", "demo-judge"]],
        "blind-compare": [["blind-compare", *[f"--version={label}={path}" for label, path in zip("ABC", versions)],
                           "--prompt", str(RUNBOOK / "task.md"), "--expectations", str(RUNBOOK / "expectations.txt"),
                           "--output", str(tmp / "comparison.json"), "--judge", "demo-judge", "--run-id", "vocab-blind"]],
        "judge-checkup": [["judge-checkup", "--judge", "demo-judge", "--set", "llmbar-natural", "--sample", "4", "--seed", "1",
                           "--run-id", "vocab-checkup"]],
        "api-token": [["api-token", "create", "reviewer", "--name", "ci"], ["api-token", "list"]],
        "outputs": [["outputs", "add", "--system", "support-bot-v1", "--label", "v1.1", "--testset", "support",
                     "--file", str(tmp / "v11.jsonl")], ["outputs", "list"]],
        "datasets": [["datasets", "list"], ["datasets", "list", "--kind", "outputs"],
                     ["datasets", "show", "rubric", "support-quality"], ["datasets", "show", "testset", "support"],
                     ["datasets", "show", "outputs", "support-bot"]],
        "agreement": [["agreement"], ["agreement", "--judge", "gpt-3.5-turbo"]],
        "import-labels": [["import-labels", str(tmp / "labels.csv")]],
        "import-pandalm": [["import-pandalm", "--dir", str(tmp / "no-pandalm")]],
        "webhooks": [
            ["webhooks", "add", "vocab-hook", "http://127.0.0.1:9/hook", "--event", "gate.blocked"], ["webhooks", "list"],
        ],
        "prompts": [["prompts", "list"], ["prompts", "show", "summaries"], ["prompts", "show", "default", "--mode", "jury"],
                    ["prompts", "add", "--mode", "pointwise", "--name", "other", "--file", str(EVALS / "support/rubric.toml")]],
        "rubric-skeleton": [["rubric-skeleton", "Is the summary faithful to the source?"]],
    }


# Committed: a command judges on threads of its own, which see only what is committed.
@pytest.mark.django_db(transaction=True)
def test_every_commands_output_speaks_a_reviewers_words(demo, django_db_blocker, tmp_path, settings):
    settings.DATA_DIR = tmp_path / "data"
    runs = typical_runs(tmp_path)
    assert commands_in_the_repo() - {"up"} == set(runs), "a new command needs its typical arguments here"
    problems, outputs = [], {}
    with django_db_blocker.unblock():
        for name, argvs in runs.items():
            for argv in argvs:
                output = run(*argv)
                outputs[" ".join(argv[:2])] = output
                problems += [f"{' '.join(argv[:3])}: {word!r}" for word in internal_words_in(output)]
                if "Traceback" in output:
                    problems.append(f"{' '.join(argv[:3])}: a traceback")
    # The runs really ran: a silent command would pass any word list.
    assert "Placed: fir.md" in outputs[f"insert {POSTMORTEMS / 'fir.md'}"], outputs
    assert "Ranklist:" in outputs[f"rank {tmp_path / 'ranked'}"]
    assert all(outputs[key].strip() for key in outputs), json.dumps(outputs, indent=1)[:3000]
    assert not problems, "\n".join(problems) + "\n\n" + json.dumps(outputs, indent=1)[:6000]


def test_ups_demo_lines_speak_a_reviewers_words(demo):
    assert demo and not internal_words_in("\n".join(demo)), demo
