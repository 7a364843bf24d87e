"""`manage.py agent-judge`: judge an agent's workspace and trace against a numbered checklist (CONTRACT §3)."""

import sys
from pathlib import Path

from judgeapp.judging.errors import InputError
from judgeapp.management.base import JudgeCommand
from judgeapp.models import Executor, RunStatus
from judgeapp.agent.services import agent_inputs_read, agent_run_create, report_write
from judgeapp.judging.content import read_input_file
from judgeapp.judging.judges import judge_get
from judgeapp.judging.runs import run_execute_inline

VERDICT_LABELS = {"met": "met", "not_met": "not met", "unverified": "unverified"}


class Command(JudgeCommand):
    help = (
        "Judge an agent's final workspace (and trace) against a numbered requirements checklist, one requirement "
        "per conversation of a tool-using judge (Agent-as-a-Judge). Prints the report; exit 0 when every "
        "requirement was judged or recorded unverified, 1 when the judge could not be reached, 2 on bad input."
    )

    def add_arguments(self, parser):
        parser.add_argument("--task", required=True, metavar="F", help="the task the agent was given (text or Markdown; a DevAI task JSON works too)")
        parser.add_argument("--requirements", required=True, metavar="F",
                            help="numbered checklist ('1. saves the plot to out/accuracy.png'), a JSON/JSONL list, or a DevAI task JSON")
        parser.add_argument("--workspace", required=True, metavar="DIR", help="the agent's final workspace: a directory, or a .zip/.tar.gz of it")
        parser.add_argument("--trace", metavar="F", help="the agent's trace: JSONL, one step (a JSON object) a line, or a JSON array of steps")
        parser.add_argument("--judge", metavar="J", help="judge name from the judges file (default: the default judge)")
        parser.add_argument("--report", metavar="OUT.json", help="write the full JSON report (verdicts, evidence, every tool call) here")
        parser.add_argument("--run-id", metavar="R", help="id of the run (default <utc>_<short-uuid>)")
        parser.add_argument("--title", default="", help="a title shown on the run's page")
        parser.add_argument("--concurrency", type=int, default=4, metavar="N", help="requirements judged at once (default 4)")

    def handle(self, *args, **options):
        if options["concurrency"] < 1:
            raise InputError("--concurrency must be at least 1")
        report_path = Path(options["report"]) if options["report"] else None
        if report_path is not None and not report_path.parent.is_dir():
            raise InputError(f"--report {report_path}: the directory {report_path.parent} does not exist")
        task_path, requirements_path = Path(options["task"]), Path(options["requirements"])
        trace_path = Path(options["trace"]) if options["trace"] else None
        inputs = agent_inputs_read(
            task=read_input_file(task_path),
            task_name=str(task_path),
            requirements=read_input_file(requirements_path),
            requirements_name=str(requirements_path),
            trace=read_input_file(trace_path) if trace_path else None,
            trace_name=str(trace_path) if trace_path else "",
        )
        judge = judge_get(name=options["judge"])
        run = agent_run_create(
            inputs=inputs,
            workspace=Path(options["workspace"]),
            workspace_name=options["workspace"],
            judge=judge,
            run_id=options["run_id"],
            executor=Executor.INLINE,
            title=options["title"],
        )
        self.current_run = run
        with self.progress_bar(total=len(inputs.requirements), desc="requirements") as bar:
            run = run_execute_inline(run=run, concurrency=options["concurrency"], progress=self.progress_callback(bar))
        run.refresh_from_db()
        self.current_run = None
        report = run.report or {}
        if report_path is not None and report:
            report_write(report=report, path=report_path)
        self.print_report(run, report, report_path)
        if run.status != RunStatus.DONE:
            sys.exit(1)

    def print_report(self, run, report: dict, report_path: Path | None) -> None:
        out = self.stdout
        judge = report.get("judge") or {}
        out.write(f"Agent judge · run {run.run_id} · judge {judge.get('name')} ({judge.get('model')})")
        if report.get("notice"):
            out.write(f"NOTE: {report['notice']}")
        if run.status != RunStatus.DONE:
            out.write(f"Run {run.status}{': ' + run.error if run.error else ''}")
        counts = report.get("counts") or {}
        if counts:
            share = report.get("met_share")
            out.write(
                f"Met {counts['met']} of {counts['total']} requirements ({share:.0%}); "
                f"{counts['not_met']} not met, {counts['unverified']} unverified"
            )
        for requirement in report.get("requirements", []):
            label = VERDICT_LABELS[requirement["verdict"]]
            out.write(f"  {requirement['id']}. {label:<10} {requirement['text']}")
            if requirement["verdict"] == "unverified":
                out.write(f"       why: {requirement['reason']}")
            else:
                out.write(f"       evidence: {requirement['evidence']}")
            out.write(f"       tool calls: {requirement['tool_call_count']}")
        sandbox = report.get("sandbox") or {}
        if sandbox:
            out.write(
                f"Sandbox for run_file: {sandbox['mode']}, no network" if sandbox.get("available")
                else f"Sandbox for run_file: not available ({sandbox.get('reason')}); the judge could not run code"
            )
        for warning in report.get("warnings", []):
            out.write(f"warning: {warning}")
        if report_path is not None:
            out.write(f"Report: {report_path}")
