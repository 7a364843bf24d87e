"""Agent-as-a-Judge commands: `agent-judge`, and `agent-devai-agreement` (agreement with DevAI's human verdicts)."""

import json
import re
import sys
from pathlib import Path

from calibration.selectors.status import preflight_for_run
from judgeapp.agent.core.agreement import AgreementCounts, compare
from judgeapp.agent.services import agent_inputs_read, agent_run_create, report_write
from judgeapp.judging.accounting import counts_line
from judgeapp.judging.cli import EXIT_FAILED, JudgeCommand, budget_argument, run_ended_without_verdict, usage_write
from judgeapp.judging.content import read_input_file
from judgeapp.judging.errors import InputError
from judgeapp.judging.runs import run_execute_inline
from judgeapp.models import Executor, RunStatus

# agent-judge: `manage.py agent-judge`: judge an agent's workspace and trace against a numbered checklist (CONTRACT §3).
VERDICT_LABELS = {"met": "met", "not_met": "not met", "unverified": "unverified"}


class AgentJudgeCommand(JudgeCommand):
    help = (
        "Judge an agent's final workspace (and trace) against a numbered requirements checklist, one requirement "
        "per conversation of a tool-using judge (Agent-as-a-Judge). Prints the report; exit 0 when every "
        "requirement was judged or recorded unverified, 1 when a requirement's judge call failed, the judge never "
        "used its tools or the run is otherwise not judged, 2 anything else (bad input, a failed run)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--task", required=True, metavar="F",
                            help="the task the agent was given (text or Markdown; a DevAI task JSON works too)")
        parser.add_argument("--requirements", required=True, metavar="F",
                            help="numbered checklist ('1. saves the plot to out/accuracy.png'), a JSON/JSONL list, "
                                 "or a DevAI task JSON")
        parser.add_argument("--workspace", required=True, metavar="DIR",
                            help="the agent's final workspace: a directory, or a .zip/.tar.gz of it")
        parser.add_argument("--trace", metavar="F",
                            help="the agent's trace: JSONL, one step (a JSON object) a line, or a JSON array of steps")
        parser.add_argument("--judge", metavar="J", help="judge name from the judges file (default: the default judge)")
        parser.add_argument("--report", metavar="OUT.json",
                            help="write the full JSON report (verdicts, evidence, every tool call) here")
        parser.add_argument("--run-id", metavar="R", help="id of the run (default <utc>_<short-uuid>)")
        parser.add_argument("--title", default="", help="a title shown on the run's page")
        parser.add_argument("--concurrency", type=int, default=4, metavar="N", help="requirements judged at once (default 4)")
        budget_argument(parser)

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
        judge = self.judge_get(name=options["judge"])
        run = agent_run_create(
            inputs=inputs,
            workspace=Path(options["workspace"]),
            workspace_name=options["workspace"],
            judge=judge,
            run_id=options["run_id"],
            executor=Executor.INLINE,
            title=options["title"],
            budget=options.get("budget"),
        )
        self.warnings_print(preflight_for_run(judges=[judge]))
        self.current_run = run
        with self.progress_bar(total=len(inputs.requirements), desc="requirements") as bar:
            run = run_execute_inline(run=run, concurrency=options["concurrency"], progress=self.progress_callback(bar))
        run.refresh_from_db()
        self.current_run = None
        report = run.report or {}
        if report_path is not None and report:
            report_write(report=report, path=report_path)
        self.print_report(run, report, report_path)
        # A run fails without an error of its own when no requirement's judge call worked: each says why.
        why = next((r["reason"] for r in report.get("requirements", []) if r.get("reason")), "")
        if run_ended_without_verdict(self, run, reason=why):
            sys.exit(EXIT_FAILED)
        usage_write(self, report)
        failed = (report.get("counts") or {}).get("no_reply", 0)
        if run.status != RunStatus.DONE or failed:
            if report.get("not_judged_reasons"):
                self.stderr.write(f"error: not judged: {'; '.join(report['not_judged_reasons'])}")
            elif failed:
                self.stderr.write(f"error: {failed} requirement(s) could not be judged: the judge call failed")
            sys.exit(1)

    def print_report(self, run, report: dict, report_path: Path | None) -> None:
        out = self.stdout
        judge = report.get("judge") or {}
        out.write(f"Agent judge · run {run.run_id} · judge {judge.get('name')} ({judge.get('model')})")
        if report.get("notice"):
            out.write(f"NOTE: {report['notice']}")
        if run.status != RunStatus.DONE:
            out.write(f"Run {run.status}{': ' + run.error if run.error else ''}")
        for reason in report.get("not_judged_reasons", []):
            out.write(f"NOT JUDGED: {reason}")
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
                f"Sandbox for run_file: {sandbox['mode']}, no network, no host file or socket" if sandbox.get("available")
                else f"Sandbox for run_file: not available ({sandbox.get('reason')}); the judge could not run code"
            )
        if "units" in counts:
            out.write(counts_line(counts))
        for warning in report.get("warnings", []):
            out.write(f"warning: {warning}")
        if report_path is not None:
            out.write(f"Report: {report_path}")


# agent-devai-agreement: `manage.py agent-devai-agreement`: measure the agent judge against the published human verdicts of the
def _human_verdicts(path: Path, count: int) -> list[bool | None]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    rows = doc.get("requirements", []) if isinstance(doc, dict) else []
    verdicts = [row.get("satisfied") if isinstance(row, dict) else None for row in rows]
    verdicts = [v if isinstance(v, bool) else None for v in verdicts]
    return (verdicts + [None] * count)[:count]


class DevaiAgreementCommand(JudgeCommand):
    help = (
        "Run the agent judge on DevAI tasks from a local checkout of metauto-ai/agent-as-a-judge and report its "
        "agreement with the published human verdicts (benchmark/judgment/<developer>/human_as_a_judge)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--checkout", required=True, metavar="DIR",
                            help="local checkout of github.com/metauto-ai/agent-as-a-judge")
        parser.add_argument("--developer", default="OpenHands",
                            help="developer agent whose workspaces are judged (OpenHands, MetaGPT, GPT-Pilot)")
        parser.add_argument("--judge", metavar="J", help="judge name (default: the default judge)")
        parser.add_argument("--tasks", default="", help="comma-separated task names or number prefixes (e.g. 01,21); default all")
        parser.add_argument("--limit", type=int, default=0, help="judge at most this many tasks")
        parser.add_argument("--no-trace", action="store_true", help="judge without the trajectories (black box)")
        parser.add_argument("--concurrency", type=int, default=4, help="requirements judged at once (default 4)")
        parser.add_argument("--report", metavar="OUT.json", help="write the per-task and total agreement here")

    def handle(self, *args, **options):
        root = Path(options["checkout"]) / "benchmark"
        developer = options["developer"]
        instances = root / "devai" / "instances"
        workspaces = root / "workspaces" / developer
        humans = root / "judgment" / developer / "human_as_a_judge"
        trajectories = root / "trajectories" / developer
        for needed in (instances, workspaces, humans):
            if not needed.is_dir():
                raise InputError(f"{needed}: no such directory (is --checkout a checkout of metauto-ai/agent-as-a-judge "
                                 "with its workspaces downloaded?)")
        report_path = Path(options["report"]) if options["report"] else None
        if report_path is not None and not report_path.parent.is_dir():
            raise InputError(f"--report {report_path}: the directory {report_path.parent} does not exist")
        wanted = [t.strip() for t in options["tasks"].split(",") if t.strip()]
        judge = self.judge_get(name=options["judge"])
        tasks = _devai_tasks(instances, workspaces, humans, wanted=wanted, limit=options["limit"])
        if not tasks:
            raise InputError(f"no DevAI task has both a workspace under {workspaces} and human verdicts under {humans}")
        self.warnings_print(preflight_for_run(judges=[judge]))

        total = AgreementCounts()
        per_task = []
        self.stdout.write(f"Judging {len(tasks)} DevAI task(s) of {developer} with {judge.name} ({judge.model})")
        for instance in tasks:
            data = instance.read_bytes()
            trace_path = trajectories / instance.name
            use_trace = trace_path.exists() and not options["no_trace"]
            try:
                inputs = agent_inputs_read(
                    task=data, task_name=str(instance), requirements=data, requirements_name=str(instance),
                    trace=trace_path.read_bytes() if use_trace else None, trace_name=str(trace_path) if use_trace else "",
                )
                run = agent_run_create(
                    inputs=inputs, workspace=workspaces / instance.stem, workspace_name=str(workspaces / instance.stem),
                    judge=judge, executor=Executor.INLINE, title=f"DevAI {instance.stem} ({developer})",
                )
            except InputError as exc:
                self.stdout.write(f"  {instance.stem}: skipped ({exc})")
                per_task.append({"task": instance.stem, "skipped": str(exc)})
                continue
            run = run_execute_inline(run=run, concurrency=max(1, options["concurrency"]))
            run.refresh_from_db()
            rows = (run.report or {}).get("requirements", [])
            counts = compare([(r["id"], r["verdict"]) for r in rows], _human_verdicts(humans / instance.name, len(rows)),
                             prefix=f"{instance.stem}#")
            total.merge(counts)
            figures = counts.as_dict()
            per_task.append({"task": instance.stem, "run_id": run.run_id, "trace": use_trace, **figures})
            shown = f"{figures['agreement']:.0%}" if figures["agreement"] is not None else "n/a"
            self.stdout.write(
                f"  {instance.stem}: {counts.agree}/{counts.verified} agree ({shown}), "
                f"{counts.unverified} unverified · run {run.run_id}"

            )
        figures = total.as_dict()
        summary = {"developer": developer, "judge": {"name": judge.name, "model": judge.model}, "tasks": per_task,
                   "total": {k: v for k, v in figures.items() if k != "disagreements"}}
        if figures["agreement"] is None:
            self.stdout.write("No requirement could be compared.")
        else:
            self.stdout.write(
                f"Agreement with people: {figures['agreement']:.1%} of {total.verified} verified requirements; "
                f"{figures['agreement_unverified_as_not_met']:.1%} counting the {total.unverified} unverified as not met "
                "(the benchmark's own agent judge: about 90%)"
            )
        if report_path is not None:
            report_write(report=summary, path=report_path)
            self.stdout.write(f"Report: {report_path}")


def _devai_tasks(instances: Path, workspaces: Path, humans: Path, *, wanted: list[str], limit: int | None) -> list[Path]:
    """The DevAI tasks asked for (all when `wanted` is empty), in their number's order, that have both a
    workspace and people's verdicts; the first `limit` of them."""

    def number(path: Path) -> int:
        match = re.match(r"(\d+)", path.stem)
        return int(match.group(1)) if match else 10**6

    tasks = []
    for instance in sorted(instances.glob("*.json"), key=lambda p: (number(p), p.stem)):
        if wanted and not any(instance.stem == w or instance.stem.startswith(f"{w}_") for w in wanted):
            continue
        if (workspaces / instance.stem).is_dir() and (humans / instance.name).exists():
            tasks.append(instance)
    return tasks[:limit] if limit else tasks
