"""Pairwise on real data: LLMBar's natural set (100 instructions, two outputs each, the objectively
better one labelled; datasets/llmbar, MIT). The fake judge is told the truth (or a bias), so what is
tested is the both-order machinery on real texts: mapping back, ties, the length split."""

import json
from pathlib import Path

import pytest
from django.conf import settings

from fakejudge import DemoBrain
from judgeapp.judging import runs
from judgeapp.judging.content import InputFile
from judgeapp.pairwise.services import VersionSource, pairwise_run_create
from tests.factories import RUBRIC_ONE
from tests.pairwise.builders import jsonl

pytestmark = pytest.mark.django_db

LLMBAR = Path(settings.BASE_DIR) / "datasets" / "llmbar" / "natural.json"


@pytest.fixture(scope="module")
def items():
    # The first 50 of the 100 items keep the test quick (two judge calls each).
    return json.loads(LLMBAR.read_text(encoding="utf-8"))[:50]


def llmbar_run(judge, items):
    ids = [f"natural-{i:03d}" for i in range(len(items))]
    return pairwise_run_create(
        testset=InputFile(data=jsonl({"id": i, "input": x["input"]} for i, x in zip(ids, items)), name="llmbar-natural.jsonl"),
        rubric=InputFile(data=RUBRIC_ONE, name="rubric.toml"),
        judge=judge,
        version_a=VersionSource(
            outputs=InputFile(data=jsonl({"id": i, "output": x["output_1"]} for i, x in zip(ids, items)), name="output_1.jsonl")
        ),
        version_b=VersionSource(
            outputs=InputFile(data=jsonl({"id": i, "output": x["output_2"]} for i, x in zip(ids, items)), name="output_2.jsonl")
        ),
    )


def test_on_llmbar_natural_a_judge_that_knows_the_better_output_recovers_every_label(judge, fake_judge, items):
    better = {(x["output_1"] if x["label"] == 1 else x["output_2"]).strip() for x in items}
    fake_judge.action = DemoBrain(quality=lambda reply, message="": 1.0 if reply.strip() in better else 0.0)
    run = llmbar_run(judge, items)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    report = run.report
    assert [c["verdict"] for c in report["cases"]] == ["A" if x["label"] == 1 else "B" for x in items]
    labels = [x["label"] for x in items]
    assert (report["wins_a"], report["wins_b"], report["ties"]) == (labels.count(1), labels.count(2), 0)
    assert report["winner"] is None and report["inconclusive"] is False  # 25 and 25: no winner, yet conclusive
    assert report["sign_test"]["significant"] is False  # 25 of 50: exactly even


def test_on_llmbar_a_length_biased_judge_shows_in_the_length_split(judge, fake_judge, items):
    fake_judge.action = DemoBrain(quality=lambda reply, message="": min(1.0, len(reply) / 5000), tie_margin=0.0)
    run = llmbar_run(judge, items)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    split = run.report["length_split"]
    assert split["longer_win_rate"] == 1.0
    assert split["A_longer"]["win_rate_a"] == 1.0 and split["B_longer"]["win_rate_a"] == 0.0
    # Against LLMBar's labels such a judge is right only where the longer output is the better one.
    gold = ["A" if x["label"] == 1 else "B" for x in items]
    longer_is_better = sum((len(x["output_1"]) > len(x["output_2"])) == (x["label"] == 1) for x in items)
    right = sum(c["verdict"] == g for c, g in zip(run.report["cases"], gold))
    assert right == longer_is_better < len(items)


def test_on_llmbar_a_position_biased_judge_is_inconclusive(judge, fake_judge, items):
    fake_judge.action = DemoBrain(position_bias=1.0)
    run = llmbar_run(judge, items[:30])
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.report["inconclusive"] is True and run.report["tie_rate"] == 1.0
