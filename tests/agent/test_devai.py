"""Agreement with the DevAI human verdicts, on a made-up checkout in the benchmark's layout."""

import json

import pytest
from django.core.management import call_command

from judgeapp.agent.core import MET, NOT_MET, UNVERIFIED
from judgeapp.agent.core.agreement import compare
from judgeapp.judging.errors import InputError


def test_agreement_leaves_unverified_out_and_counts_it_in_the_strict_figure():
    counts = compare(
        [("0", MET), ("1", NOT_MET), ("2", MET), ("3", UNVERIFIED), ("4", NOT_MET)], [True, False, False, False, None],
    )
    figures = counts.as_dict()
    assert figures["compared"] == 4 and figures["unverified"] == 1
    assert figures["agreement"] == round(2 / 3, 4)
    assert figures["agreement_unverified_as_not_met"] == 0.75
    assert figures["disagreements"] == ["2"] and figures["judge_met_human_not"] == 1


@pytest.fixture
def checkout(tmp_path):
    """Two DevAI-shaped tasks (made-up content) with a workspace and human verdicts each."""
    bench = tmp_path / "agent-as-a-judge" / "benchmark"
    for name, files, satisfied in [
        ("01_Plot_Task_ML", {"results/accuracy.txt": "0.91\n"}, [True, False]),
        (
            "02_Report_Task_ML", {"results/accuracy.txt": "0.80\n", "results/figures/plot.png": "not really a png\n"},
            [True, False],
        ),
    ]:
        instance = {
            "name": name,
            "query": "Train a model; save the accuracy in `results/accuracy.txt` and a plot in `results/figures/plot.png`.",
            "requirements": [
                {
                    "requirement_id": 0, "prerequisites": [], "criteria": "Accuracy is saved in `results/accuracy.txt`.",
                    "satisfied": None,
                },
                {
                    "requirement_id": 1, "prerequisites": [0], "criteria": "A plot is saved as `results/figures/plot.png`.",
                    "satisfied": None,
                },
            ],
        }
        (bench / "devai" / "instances").mkdir(parents=True, exist_ok=True)
        (bench / "devai" / "instances" / f"{name}.json").write_text(json.dumps(instance))
        human = {**instance, "requirements": [{**r, "satisfied": s} for r, s in zip(instance["requirements"], satisfied)]}
        (bench / "judgment" / "OpenHands" / "human_as_a_judge").mkdir(parents=True, exist_ok=True)
        (bench / "judgment" / "OpenHands" / "human_as_a_judge" / f"{name}.json").write_text(json.dumps(human))
        for rel, text in files.items():
            path = bench / "workspaces" / "OpenHands" / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return tmp_path / "agent-as-a-judge"


@pytest.mark.django_db
def test_devai_agreement_command_judges_each_task_and_compares_with_people(judge, checkout, capsys, tmp_path, settings):
    settings.AGENT_SANDBOX_ENABLED = False
    report = tmp_path / "agreement.json"
    call_command(
        "agent-devai-agreement", "--checkout", str(checkout), "--judge", judge.name, "--concurrency", "1", "--report",
        str(report),
    )
    out = capsys.readouterr().out
    assert "01_Plot_Task_ML: 2/2 agree (100%), 0 unverified" in out
    # People judged 02's plot not satisfied (it is not a real PNG); the scripted judge only saw it exists.
    assert "02_Report_Task_ML: 1/2 agree (50%), 0 unverified" in out
    assert "Agreement with people: 75.0% of 4 verified requirements" in out
    summary = json.loads(report.read_text())
    assert (
        summary["total"]["agreement"] == 0.75 and summary["total"]["compared"] == 4
        and [t["task"] for t in summary["tasks"]] == ["01_Plot_Task_ML", "02_Report_Task_ML"]
    )


@pytest.mark.django_db
def test_devai_agreement_needs_the_benchmark_layout(judge, tmp_path):
    with pytest.raises(InputError, match="no such directory"):
        call_command("agent-devai-agreement", "--checkout", str(tmp_path), "--judge", judge.name)
