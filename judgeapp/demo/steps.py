"""The demo's runs, one step per mode."""

from judgeapp.demo import EVALS, DemoContext, step
from judgeapp.models import Executor, RunKind
from judgeapp.services.content import prompt_register, rubric_load, testset_load
from judgeapp.services.runs import run_create, run_execute_inline


@step("demo-pointwise")
def pointwise(ctx: DemoContext) -> str:
    run = run_create(
        kind=RunKind.POINTWISE,
        run_id="demo-pointwise",
        executor=Executor.INLINE,
        title="Support replies on the support-quality rubric (scripted demo judge)",
        judge=ctx.judge,
        testset=testset_load(path=EVALS / "support" / "testset.jsonl"),
        rubric=rubric_load(path=EVALS / "support" / "rubric.toml"),
        prompt=prompt_register(prompt="pointwise"),
        options={"threshold": 3.5},
    )
    run = run_execute_inline(run=run, concurrency=8)
    return f"demo: pointwise run {run.run_id} {run.status}, mean {run.report and run.report.get('mean')}"


@step("demo-agent")
def agent(ctx: DemoContext) -> str:
    """An agent's finished workspace and trace (evals/agent/flowers), judged requirement by requirement."""
    from judgeapp.services.agent import agent_inputs_read, agent_run_create

    base = EVALS / "agent" / "flowers"
    inputs = agent_inputs_read(
        task=(base / "task.md").read_bytes(),
        task_name="evals/agent/flowers/task.md",
        requirements=(base / "requirements.md").read_bytes(),
        requirements_name="evals/agent/flowers/requirements.md",
        trace=(base / "trace.jsonl").read_bytes(),
        trace_name="evals/agent/flowers/trace.jsonl",
    )
    run = agent_run_create(
        inputs=inputs,
        workspace=base / "workspace",
        workspace_name="evals/agent/flowers/workspace",
        judge=ctx.judge,
        run_id="demo-agent",
        executor=Executor.INLINE,
        title="An agent's flower classifier, checked against its checklist (scripted demo judge)",
    )
    run = run_execute_inline(run=run, concurrency=4)
    counts = (run.report or {}).get("counts", {})
    return f"demo: agent run {run.run_id} {run.status}, {counts.get('met')} of {counts.get('total')} requirements met"
