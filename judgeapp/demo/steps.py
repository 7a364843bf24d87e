"""The demo's runs, one step per mode."""

from judgeapp.demo import EVALS, DemoContext, step
from judgeapp.models import Executor, RunKind
from judgeapp.services.content import prompt_register, rubric_load, testset_load
from judgeapp.services.runs import run_create, run_execute_inline


@step("demo-pointwise")
def pointwise(ctx: DemoContext) -> str:
    """support-bot-v1's replies (they come with the test set), scored and then released by the lead: the
    baseline the next version is held to."""
    from judgeapp.core.errors import InputError
    from judgeapp.services.pointwise import InputFile, pointwise_create
    from judgeapp.services.releases import release_mark

    run = pointwise_create(
        testset=InputFile.from_path(EVALS / "support" / "testset.jsonl"),
        rubric=InputFile.from_path(EVALS / "support" / "rubric.toml"),
        judge=ctx.judge,
        system=ctx.systems[0],
        threshold=3.0,
        executor=Executor.INLINE,
        run_id="demo-pointwise",
        title="support-bot-v1 on the support-quality rubric (scripted demo judge)",
        created_by=ctx.lead,
    )
    run = run_execute_inline(run=run, concurrency=8)
    released = ""
    try:
        release_mark(run=run, actor=ctx.lead, label="v1.0", note="Demo: the version in production.")
        released = ", released as v1.0"
    except InputError as exc:
        released = f", not released ({exc})"
    return f"demo: pointwise run {run.run_id} {run.status}, mean {run.report and run.report.get('mean')}{released}"


@step("demo-pointwise-v2")
def pointwise_v2(ctx: DemoContext) -> str:
    """support-bot-v2 answers every case itself; the gate compares it with v1's release, and the lead
    approves (or, if the gate is closed, blocks) with a reason."""
    from judgeapp.selectors_releases import gate_evaluate
    from judgeapp.services.pointwise import InputFile, pointwise_create
    from judgeapp.services.releases import gate_decide

    run = pointwise_create(
        testset=InputFile.from_path(EVALS / "support" / "testset.jsonl"),
        rubric=InputFile.from_path(EVALS / "support" / "rubric.toml"),
        judge=ctx.judge,
        system=ctx.systems[1],
        generate=True,
        threshold=3.5,
        executor=Executor.INLINE,
        run_id="demo-pointwise-v2",
        title="support-bot-v2 generates its replies; gate against v1's release (scripted demo judge)",
        created_by=ctx.lead,
    )
    run = run_execute_inline(run=run, concurrency=8)
    gate = gate_evaluate(run=run)
    if gate["passed"]:
        decision = gate_decide(run=run, actor=ctx.lead, verdict="approved", reason="Demo: mean above v1's release; lowest cases read and acceptable.")
    else:
        decision = gate_decide(run=run, actor=ctx.lead, verdict="blocked", reason="Demo: " + "; ".join(gate["reasons"]))
    return f"demo: pointwise run {run.run_id} {run.status}, mean {run.report and run.report.get('mean')}, lead {decision.verdict}"
