"""Agent runs through the run machinery, against the fake judge server over real HTTP."""

import json
from pathlib import Path

import pytest
from django.conf import settings

from fakejudge import Status, ToolCalls
from judgeapp.judging import runs
from judgeapp.judging.errors import InputError
from judgeapp.models import Run, RunStatus, UnitStatus
from tests.agent.helpers import agent_run, make_workspace, tar_bytes, zip_bytes

pytestmark = pytest.mark.django_db


def by_id(report):
    return {r["id"]: r for r in report["requirements"]}


def test_present_file_is_met_with_evidence_naming_it(judge, fake_judge, tmp_path):
    run = agent_run(judge, make_workspace(tmp_path / "ws"), requirements=b"1. saves the plot to out/accuracy.png\n")
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    requirement = by_id(run.report)["1"]
    assert requirement["verdict"] == "met"
    assert "out/accuracy.png" in requirement["evidence"]
    assert requirement["tool_calls"][0]["name"] == "read_file"
    assert requirement["tool_calls"][0]["arguments"] == {"path": "out/accuracy.png"}
    # The judge was offered the tools through tool calling, and saw the seed prompt.
    first = fake_judge.chat_requests[0]
    assert {"list_files", "read_file", "search", "read_trace_step"} <= set(first.tool_names)
    assert first.prompt.startswith("You are checking whether another agent's work meets one requirement.")


def test_missing_file_is_not_met_with_evidence_naming_it(judge, tmp_path):
    run = agent_run(
        judge, make_workspace(tmp_path / "ws", with_plot=False), requirements=b"1. saves the plot to out/accuracy.png\n",
    )
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    requirement = by_id(run.report)["1"]
    assert requirement["verdict"] == "not_met" and "out/accuracy.png" in requirement["evidence"]
    assert run.report["failures"] == [
        {"id": "1", "text": "saves the plot to out/accuracy.png", "evidence": requirement["evidence"]}
    ]


def test_judge_that_keeps_calling_tools_is_unverified_after_exactly_15_calls(judge, fake_judge, tmp_path):
    fake_judge.action = ToolCalls(("list_files", {"path": "."}))
    run = agent_run(judge, make_workspace(tmp_path / "ws"), requirements=b"1. saves the plot to out/accuracy.png\n")
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    requirement = by_id(run.report)["1"]
    assert requirement["verdict"] == "unverified"
    assert requirement["tool_call_count"] == 15 and len(requirement["tool_calls"]) == 15
    assert len(fake_judge.chat_requests) == 15
    assert run.report["unverified"] == [{"id": "1", "text": "saves the plot to out/accuracy.png",
                                         "reason": "the judge used all 15 tool calls without reaching a verdict"}]
    assert run.report["met_share"] == 0.0


def test_report_has_the_contract_keys_and_one_conversation_per_requirement(judge, fake_judge, tmp_path, settings):
    settings.AGENT_SANDBOX_ENABLED = False  # the report says so; the judge is not offered run_file
    run = agent_run(judge, make_workspace(tmp_path / "ws", with_plot=False))
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    report = run.report
    assert report["run_id"] == run.run_id and report["kind"] == "agent"
    for requirement in report["requirements"]:
        assert {"id", "text", "verdict", "evidence", "tool_calls"} <= set(requirement)
        assert requirement["verdict"] in ("met", "not_met", "unverified")
    verdicts = {r["id"]: r["verdict"] for r in report["requirements"]}
    assert verdicts == {"1": "not_met", "2": "met", "3": "met"}
    assert report["met_share"] == round(2 / 3, 4)
    assert report["counts"] == {**report["counts"], "total": 3, "met": 2, "not_met": 1, "unverified": 0}
    # CONTRACT §6: every requirement's unit accounted for, beside the verdict counts.
    assert report["counts"] == {**report["counts"], "units": 3, "parsed": 3, "parse_failures": 0, "truncated": 0, "no_reply": 0}
    assert report["sandbox"]["available"] is False and "AGENT_SANDBOX_ENABLED" in report["sandbox"]["reason"]
    assert fake_judge.chat_requests and all("run_file" not in r.tool_names for r in fake_judge.chat_requests)
    # Each conversation is about one requirement only.
    prompts = {r.prompt for r in fake_judge.chat_requests}
    assert len(prompts) == 3 and all(p.count("<requirement>") == 1 for p in prompts)
    assert set(report["versions"]) >= {"task", "requirements", "workspace", "trace", "prompt", "judge"}
    judgment = run.judgments.get(key="req/2")
    assert judgment.transcript["turns"][0]["role"] == "prompt" and judgment.transcript["tool_calls"]


def test_judge_runs_a_file_in_the_sandbox_when_the_requirement_asks(judge, tmp_path):
    from judgeapp.agent.core import sandbox_status

    if not sandbox_status().available:
        pytest.skip(sandbox_status().reason)
    workspace = make_workspace(tmp_path / "ws")
    run = agent_run(judge, workspace, requirements=b"1. train.py prints the test accuracy when run\n")
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    requirement = by_id(run.report)["1"]
    assert requirement["verdict"] == "met"
    assert [c["name"] for c in requirement["tool_calls"]] == ["read_file", "run_file"]
    assert "test accuracy: 0.93" in requirement["tool_calls"][1]["output"]
    assert "python3 train.py" in requirement["evidence"]
    # The run wrote out/metrics.json in its copy; the stored workspace is as it was.
    assert (run.run_dir / "workspace" / "out" / "metrics.json").read_text() == '{"accuracy": 0.93}\n'


def test_judging_the_same_inputs_again_costs_no_call(judge, fake_judge, tmp_path, settings):
    settings.AGENT_SANDBOX_ENABLED = False
    workspace = make_workspace(tmp_path / "ws", with_plot=False)
    runs.run_execute_inline(run=agent_run(judge, workspace))
    calls = len(fake_judge.chat_requests)
    again = agent_run(judge, workspace)
    runs.run_execute_inline(run=again)
    again.refresh_from_db()
    assert len(fake_judge.chat_requests) == calls
    cached = list(again.judgments.values_list("cached", flat=True))
    assert len(cached) == 3 and all(cached)
    assert [r["verdict"] for r in again.report["requirements"]] == ["not_met", "met", "met"]


def test_unreachable_judge_fails_the_run_and_leaves_every_requirement_unverified(judge, fake_judge, tmp_path):
    fake_judge.action = Status(503)
    run = agent_run(judge, make_workspace(tmp_path / "ws"), requirements=b"1. saves out/accuracy.png\n")
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    requirement = by_id(run.report)["1"]
    assert requirement["verdict"] == "unverified" and "HTTP 503" in requirement["reason"]
    assert run.judgments.get().status == UnitStatus.FAILED


def test_uploaded_archive_is_taken_in_and_judged(judge, tmp_path):
    data = tar_bytes(
        {"proj/out/metrics.json": b'{"accuracy": 0.9}\n', "proj/train.py": b"print(1)\n"}, symlinks={"proj/etc": "/etc"},
    )
    run = agent_run(judge, data, workspace_name="proj.tar.gz", requirements=b"1. writes the metrics to out/metrics.json\n")
    assert sorted(p.name for p in (run.run_dir / "workspace").iterdir()) == ["out", "train.py"]
    assert run.config["options"]["workspace"]["skipped"] == ["etc: symbolic link to /etc, which is outside the workspace"]
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert by_id(run.report)["1"]["verdict"] == "met"
    assert any("left out of the workspace" in w for w in run.report["warnings"])


def test_bad_archive_stores_nothing(judge, tmp_path):
    before = Run.objects.count()
    with pytest.raises(InputError, match="leads outside the workspace"):
        agent_run(judge, zip_bytes({"../escape.txt": b"x"}), workspace_name="evil.zip")
    assert Run.objects.count() == before
    runs_dir = Path(settings.DATA_DIR) / "runs"
    assert not [p for p in runs_dir.iterdir() if p.name.startswith(".incoming-")]


def test_taken_run_id_is_refused_before_anything_is_copied(judge, tmp_path):
    first = agent_run(judge, make_workspace(tmp_path / "ws"))
    with pytest.raises(InputError, match="already taken"):
        agent_run(judge, tmp_path / "does-not-exist", run_id=first.run_id)


def test_verdicts_for_calibration_are_pass_or_fail_per_requirement(judge, tmp_path, settings):
    settings.AGENT_SANDBOX_ENABLED = False
    run = agent_run(judge, make_workspace(tmp_path / "ws", with_plot=False))
    runs.run_execute_inline(run=run)
    from judgeapp.judging import selectors
    verdicts = {(v.case_id, v.value) for v in selectors.verdicts_for_run(run=Run.objects.get(pk=run.pk))}
    assert verdicts == {("1", "fail"), ("2", "pass"), ("3", "pass")}
    assert json.dumps(run.report)  # the whole report is JSON


def test_a_directory_left_by_a_deleted_run_is_kept_aside_not_overwritten(judge, tmp_path):
    first = agent_run(judge, make_workspace(tmp_path / "ws"), run_id=f"reused-{tmp_path.name[-10:]}")
    (first.run_dir / "note.txt").write_text("keep me")
    run_id, old_dir = first.run_id, first.run_dir
    first.delete()
    second = agent_run(judge, make_workspace(tmp_path / "ws2", with_plot=False), run_id=run_id)
    assert not (second.run_dir / "workspace" / "out" / "accuracy.png").exists()
    kept = [p for p in old_dir.parent.iterdir() if p.name.startswith(f".orphan-{run_id}-")]
    assert len(kept) == 1 and (kept[0] / "note.txt").read_text() == "keep me"


def test_report_transcript_points_at_tool_calls_instead_of_repeating_their_output(judge, tmp_path, settings):
    settings.AGENT_SANDBOX_ENABLED = False
    run = agent_run(judge, make_workspace(tmp_path / "ws"), requirements=b"1. writes the metrics to out/metrics.json\n")
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    requirement = by_id(run.report)["1"]
    assert [t["role"] for t in requirement["transcript"]] == ["prompt", "judge", "tool", "judge", "verdict"]
    assert requirement["transcript"][2] == {"role": "tool", "n": 1, "name": "read_file"}
    assert '"accuracy": 0.93' in requirement["tool_calls"][0]["output"]
