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


@step("demo-rank")
def rank(ctx: DemoContext) -> str:
    import shutil

    from judgeapp.models import Run as RunModel
    from judgeapp.services.ranker import candidates_in_dir, rank_create

    # The demo's own directory, left by an earlier database: the demo is rebuilt from scratch.
    shutil.rmtree(RunModel(run_id="demo-rank", kind=RunKind.RANK).run_dir, ignore_errors=True)
    run = rank_create(
        candidates=candidates_in_dir(EVALS / "ranker" / "checkout-postmortems"),
        goal="a postmortem of the checkout outage that explains the root cause, the customer impact and concrete follow-up actions",
        judge=ctx.judge,
        set_name="checkout-postmortems",
        max_size=5,
        run_id="demo-rank",
        executor=Executor.INLINE,
        created_by=ctx.lead,
        title="Eight postmortems of one outage, top 5 kept (scripted demo judge)",
    )
    run = run_execute_inline(run=run)
    top = ", ".join(run.report["ranking"][:3]) if run.report else "-"
    return f"demo: batch rank {run.run_id} {run.status}, top 3: {top}"
