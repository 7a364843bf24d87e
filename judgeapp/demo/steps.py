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


@step("demo-calibration")
def calibration(ctx: DemoContext) -> str:
    """PandaLM's real human labels and GPT-3.5 verdicts, and a blind sample of the pointwise demo for the
    demo annotators (idempotent: there is no run called demo-calibration, so this runs on every load)."""
    from calibration.demo import calibration_demo

    return calibration_demo(lead=ctx.lead)
