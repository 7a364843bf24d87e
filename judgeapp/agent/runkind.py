"""Agent-as-a-Judge: one unit per requirement, each one conversation of the tool-using judge (the loop is
judgeapp/agent/core/loop.py). Units run in parallel like any other kind's; every chat call goes through
the response cache, so a requirement resumed after a crash replays its conversation without new calls
as far as its tool results are the same."""

from django.conf import settings

from judgeapp.agent.core import (
    MET,
    NOT_MET,
    UNVERIFIED,
    Requirement,
    Sandbox,
    SandboxLimits,
    ToolBox,
    Trace,
    Workspace,
    WorkspaceLimits,
    judge_requirement,
    parse_trace,
    summarize,
)
from judgeapp.judging.accounting import counts_reason, unit_category, unit_counts
from judgeapp.judging.judge_calls import messages_hash
from judgeapp.judging.outcomes import outcome, share_words
from judgeapp.judging.runkind import UNIT_REPORT_FIELDS, RunFailed, RunHandler, UnitResult, UnitSpec, Verdict, register
from judgeapp.models import Purpose, Run, RunKind, RunStatus, UnitStatus

SCRIPTED_NOTICE = (
    "These verdicts come from the repo's scripted demo judge server (a fixed script), not a language model."
)


def requirement_key(requirement_id: str) -> str:
    return f"req/{requirement_id}"


def _turns_without_tool_output(turns: list[dict]) -> list[dict]:
    """The conversation for the report: each tool turn points at its call (`n`), whose arguments and
    output are in the requirement's `tool_calls`, so the report does not carry every output twice."""
    return [{"role": "tool", "n": t.get("n"), "name": t.get("name")} if t.get("role") == "tool" else t for t in turns]

# Where a run keeps what it judges: DATA_DIR/runs/<run-id>/workspace/ and trace.jsonl (written by the service).
WORKSPACE_DIR = "workspace"
TRACE_FILE = "trace.jsonl"


def workspace_limits() -> WorkspaceLimits:
    return WorkspaceLimits(
        max_bytes=settings.AGENT_WORKSPACE_MAX_BYTES,
        max_files=settings.AGENT_WORKSPACE_MAX_FILES,
        max_file_bytes=settings.AGENT_FILE_MAX_BYTES,
    )


def agent_sandbox() -> Sandbox | None:
    """The run_file sandbox as configured; None when turned off (AGENT_SANDBOX_ENABLED=false)."""
    if not settings.AGENT_SANDBOX_ENABLED:
        return None
    limits = SandboxLimits(
        timeout_seconds=settings.AGENT_SANDBOX_TIMEOUT_SECONDS,
        memory_bytes=settings.AGENT_SANDBOX_MEMORY_MB * 1024 * 1024,
        max_processes=settings.AGENT_SANDBOX_MAX_PROCESSES,
        disk_bytes=settings.AGENT_SANDBOX_DISK_MB * 1024 * 1024,
        output_bytes=settings.AGENT_SANDBOX_OUTPUT_BYTES,
    )
    # Nothing of the app is mounted in the sandbox; these are hidden even if they lie inside the runtime.
    hidden = (str(settings.BASE_DIR), str(settings.DATA_DIR))
    return Sandbox(limits, python=settings.AGENT_SANDBOX_PYTHON, hidden=hidden)


def sandbox_summary() -> dict:
    """What the report says about code execution on this machine."""
    sandbox = agent_sandbox()
    if sandbox is None:
        return {"available": False, "mode": "", "network": "not run", "reason": "turned off (AGENT_SANDBOX_ENABLED=false)"}
    return {**sandbox.status.as_dict(), "limits": sandbox.limits.as_dict(), "python": sandbox.python}


def run_workspace(run: Run) -> Workspace:
    return Workspace(run.run_dir / WORKSPACE_DIR)


def run_trace(run: Run) -> Trace | None:
    path = run.run_dir / TRACE_FILE
    if not path.exists():
        return None
    return parse_trace(path.read_bytes(), TRACE_FILE)


TOOLS_UNUSED = "judge did not use its tools"


# A verdict the loop could not read is recorded as an unverified requirement (status done), so why is in
# the verdict: its reply_problem names the count it falls in.
REPLY_PROBLEM_COUNTS = {"truncated": "truncated", "unparsable": "parse_failures"}


def _accounting(unit) -> str:
    """Which count (CONTRACT §6) a requirement's unit falls in (AgentHandler.unit_accounting in SQL)."""
    problem = (unit.parsed or {}).get("reply_problem", "") if unit.status == UnitStatus.DONE else ""
    return unit_category(
        usable=unit.status == UnitStatus.DONE and problem not in REPLY_PROBLEM_COUNTS,
        unreadable=problem in REPLY_PROBLEM_COUNTS, truncated=problem == "truncated",
    )


@register
class AgentHandler(RunHandler):
    kind = RunKind.AGENT
    page_template = "judgeapp/agent/run.html"
    outcomes = ("result",)
    # People do not label agent requirements in the calibration queue; agreement with people is measured
    # against published human verdicts instead (docs/agent.md, `agent-devai-agreement`).
    label_kind = None
    # A tool loop: a call per turn and the tools' runs between them. Its units get UNIT_SOFT_TIME_LIMIT.
    calls_per_unit = None

    def outcome(self, run):
        counts = (run.report or {}).get("counts") or {}
        met, total = counts.get("met", 0), counts.get("total", 0)
        unverified = f", {counts['unverified']} unverified" if counts.get("unverified") else ""
        return outcome("result", f"{met} of {total} requirements met", "ok" if total and met == total else "warn",
                       f"share met {share_words(met, total)}{unverified}")

    def plan(self, run, stage):
        if stage != 0:
            return None
        return [
            UnitSpec(
                key=requirement_key(r["id"]), judge_id=run.judge_id, payload={"id": r["id"], "text": r["text"], "position": i}
            )
            for i, r in enumerate(run.options.get("requirements", []))
        ]

    def execute(self, unit):
        from judgeapp.judging.endpoints import client_for, max_tokens_for

        run = unit.run
        workspace = run_workspace(run)
        if not workspace.root.is_dir():
            raise RunFailed(
                f"the workspace of run {run.run_id} is not at {workspace.root}; every worker needs the same DATA_DIR"
            )
        toolbox = ToolBox(workspace, run_trace(run), agent_sandbox())
        client = client_for(unit.judge)
        replies = []

        def chat(messages, tools):
            # A copy: the loop appends to its list, and the cache key must be the conversation as sent.
            reply = client.chat(list(messages), tools=tools, max_tokens=max_tokens_for(unit.judge, "agent"))
            replies.append(reply)
            return reply

        requirement = Requirement(unit.payload["id"], unit.payload["text"])
        outcome = judge_requirement(chat=chat, task=run.options["task"], requirement=requirement, toolbox=toolbox)
        return UnitResult(
            ok=True,
            fields={
                "messages": outcome.messages,
                "prompt_hash": messages_hash(outcome.messages[:1]),
                "raw_reply": replies[-1].text if replies else "",
                "parsed": outcome.parsed(),
                "transcript": {
                    "turns": outcome.transcript,
                    "tool_calls": outcome.tool_calls,
                    "tools": toolbox.names,
                    "sandbox": toolbox.sandbox.status.mode if toolbox.sandbox else "",
                },
                "attempts": min(32767, sum(r.attempts for r in replies)),
                "parse_attempts": min(32767, outcome.judge_turns),
                "prompt_tokens": sum(r.prompt_tokens for r in replies),
                "completion_tokens": sum(r.completion_tokens for r in replies),
                "latency_ms": sum(r.latency_ms for r in replies),
                "cached": bool(replies) and all(r.cached for r in replies),
                "truncated": outcome.reply_problem == "truncated",
            },
        )

    def unit_accounting(self):
        """`_accounting` as a query expression: a done unit whose verdict says its reply could not be read is
        a parse failure or a truncation, not a parsed reply."""
        from django.db.models import Case, CharField, Value, When

        problems = [
            When(status=UnitStatus.DONE, parsed__reply_problem=problem, then=Value(count))
            for problem, count in REPLY_PROBLEM_COUNTS.items()
        ]
        return Case(
            *problems, When(status=UnitStatus.DONE, then=Value("parsed")), default=Value("no_reply"), output_field=CharField()
        )

    def requirement_rows(self, run) -> list[dict]:
        """Every requirement in checklist order, with its verdict (unverified when its unit failed or never ran)."""
        units = {j.key: j for j in run.judgments.filter(purpose=Purpose.JUDGE)}
        rows = []
        for requirement in run.options.get("requirements", []):
            unit = units.get(requirement_key(requirement["id"]))
            row = {"id": requirement["id"], "text": requirement["text"], "verdict": UNVERIFIED, "evidence": "", "reason": "",
                   "tool_calls": [], "tool_call_count": 0, "evidence_check": None, "transcript": [],
                   "judgment": str(unit.uuid) if unit else None}

            if unit is not None and unit.status == UnitStatus.DONE and unit.parsed:
                parsed = unit.parsed
                row.update(
                    verdict=parsed["verdict"], evidence=parsed.get("evidence", ""), reason=parsed.get("reason", ""),
                    evidence_check=parsed.get("evidence_check"),
                    tool_calls=(unit.transcript or {}).get("tool_calls", []),
                    tool_call_count=parsed.get("tool_call_count", 0),
                    transcript=_turns_without_tool_output((unit.transcript or {}).get("turns", [])),
                )
            elif unit is not None and unit.status == UnitStatus.FAILED:
                row["reason"] = f"the judge could not be asked: {unit.error}"
            elif run.stopped and (unit is None or unit.status == UnitStatus.CANCELLED):
                row["reason"] = "not judged: the run stopped at its budget"
            else:
                row["reason"] = "not judged (the run stopped first)"
            rows.append(row)
        return rows

    def finalize(self, run):
        rows = self.requirement_rows(run)
        units = list(run.judgments.filter(purpose=Purpose.JUDGE).only(*UNIT_REPORT_FIELDS))
        if run.stopped:
            # Stopped at its budget: the requirements the cap left unjudged are unverified with that reason, and
            # are not replies that never came in the counts (the report's `budget` counts them).
            units = [unit for unit in units if unit.status != UnitStatus.CANCELLED]
        options = run.options
        judge_config = next(iter(run.config.get("judges", {}).values()), {})
        report = {
            "run_id": run.run_id,
            "kind": run.kind,
            "task": options.get("task", ""),
            **summarize(rows),
            "max_tool_calls": options.get("max_tool_calls"),
            "versions": {k: run.versions.get(k) for k in ("task", "requirements", "workspace", "trace", "prompt", "judge")},
            "judge": {
                "name": run.judge.name if run.judge else None,
                "model": run.judge.model if run.judge else None,
                "family": run.judge.effective_family if run.judge else None,
                "temperature": 0.0,
                "scripted_demo": bool(judge_config.get("scripted_demo")),
            },
            "workspace": options.get("workspace"),
            "trace": options.get("trace"),
            "sandbox": sandbox_summary(),
            "warnings": list(options.get("warnings", [])),
        }
        if run.uses_scripted_judge:
            report["notice"] = SCRIPTED_NOTICE
        counts = unit_counts(_accounting(unit) for unit in units)
        # The verdict counts (total, met, not met, unverified) and the ones every report carries, side by side.
        report["counts"] = {**report["counts"], **counts}
        failed = sum(1 for unit in units if unit.status == UnitStatus.FAILED)
        if failed:
            report["warnings"].append(f"{failed} requirement(s) could not be judged: the judge call failed (see each reason)")
        answered = [unit for unit in units if unit.status == UnitStatus.DONE]
        tool_calls = sum((unit.parsed or {}).get("tool_call_count", 0) for unit in answered)
        not_judged = []
        if answered and not tool_calls:
            # Without a tool call the judge has seen nothing of the workspace: its verdicts are not judgments.
            not_judged.append(TOOLS_UNUSED)
        reason = counts_reason(counts)
        if reason:
            # Each such requirement is unverified with its reason; the share is said, not hidden.
            report["warnings"].append(reason)
        report["judged"] = not not_judged and failed < len(rows)
        report["not_judged_reasons"] = not_judged
        if rows and failed == len(rows):
            return RunStatus.FAILED, report
        if not_judged:
            return RunStatus.INVALID, report
        return RunStatus.DONE, report

    def verdicts(self, run):
        judge = run.judge.name if run.judge else ""
        return [
            Verdict(case_id=row["id"], criterion="requirement", judge=judge, value="pass" if row["verdict"] == MET else "fail")
            for row in self.requirement_rows(run)
            if row["verdict"] in (MET, NOT_MET)
        ]
