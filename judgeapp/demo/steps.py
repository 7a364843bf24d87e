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


@step("demo-pairwise")
def pairwise(ctx: DemoContext) -> str:
    from judgeapp.services.pairwise import FileInput, VersionSource, pairwise_run_create

    brief, thorough = ctx.systems[0], ctx.systems[1]
    run = pairwise_run_create(
        run_id="demo-pairwise",
        executor=Executor.INLINE,
        title=f"{brief.name} vs {thorough.name} on the support test set (scripted demo judge and systems)",
        testset=FileInput.from_path(EVALS / "support" / "testset.jsonl"),
        rubric=FileInput.from_path(EVALS / "support" / "rubric.toml"),
        judge=ctx.judge,
        version_a=VersionSource(system=brief),
        version_b=VersionSource(system=thorough),
    )
    run = run_execute_inline(run=run, concurrency=8)
    report = run.report or {}
    result = "inconclusive" if report.get("inconclusive") else f"winner {report.get('winner')}"
    return f"demo: pairwise run {run.run_id} {run.status}, {result}"


@step("demo-jury")
def jury(ctx: DemoContext) -> str:
    from judgeapp.services.jury import jury_run_create
    from judgeapp.services.pairwise import FileInput

    run = jury_run_create(
        run_id="demo-jury",
        executor=Executor.INLINE,
        title="Support replies judged by a panel of three scripted demo jurors",
        testset=FileInput.from_path(EVALS / "support" / "testset.jsonl"),
        rubric=FileInput.from_path(EVALS / "support" / "rubric.toml"),
        judges=ctx.jurors,
        system=ctx.systems[0],
    )
    run = run_execute_inline(run=run, concurrency=8)
    return f"demo: jury run {run.run_id} {run.status}, pass rate {run.report and run.report.get('pass_rate')}"
