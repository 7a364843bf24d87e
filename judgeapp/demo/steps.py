"""The demo's runs, one step per mode."""

from judgeapp.demo import EVALS, DemoContext, step
from judgeapp.models import Executor, RunKind
from judgeapp.services.content import prompt_register, rubric_load, testset_load
from judgeapp.services.runs import run_create, run_execute_inline


def _demo_support_bot(ctx: DemoContext):
    """One system with a release history: the demo's support-bot-v2 configuration under a product name, so
    that its candidate is gated against its own last release."""
    from judgeapp.models import EndpointSource, System

    template = ctx.systems[-1]
    system, _ = System.objects.update_or_create(
        name="support-bot",
        defaults={
            "model": template.model,
            "family": template.family,
            "base_url": ctx.judge_url,
            "api_key_env": template.api_key_env,
            "source": EndpointSource.DEMO,
            "scripted_demo": True,
            "system_prompt": template.system_prompt,
        },
    )
    return system


@step("demo-pointwise")
def pointwise(ctx: DemoContext) -> str:
    """The replies support-bot gives in production (they come with the test set), scored and released by
    the lead as v1.0: the baseline its next version is held to."""
    from judgeapp.core.errors import InputError
    from judgeapp.services.pointwise import InputFile, pointwise_create
    from judgeapp.services.releases import release_mark

    run = pointwise_create(
        testset=InputFile.from_path(EVALS / "support" / "testset.jsonl"),
        rubric=InputFile.from_path(EVALS / "support" / "rubric.toml"),
        judge=ctx.judge,
        system=_demo_support_bot(ctx),
        threshold=3.0,
        executor=Executor.INLINE,
        run_id="demo-pointwise",
        title="support-bot v1.0: the replies in production, on the support-quality rubric (scripted demo judge)",
        created_by=ctx.lead,
    )
    run = run_execute_inline(run=run, concurrency=8)
    return f"demo: pointwise run {run.run_id} {run.status}, mean {run.report and run.report.get('mean')}"


@step("demo-blind")
def blind(ctx: DemoContext) -> str:
    """Two blind comparisons of the example runbooks (evals/blind/runbook): three clean versions, one with
    a failing run, compared to the end; and two versions whose files give their configuration away,
    stopped on leakage before any judging. The examples are copied under the first BROWSE_ROOT so that
    they can be picked from the "New blind comparison" form too."""
    import shutil

    from django.conf import settings

    from judgeapp.core.blind_inputs import expectations_from_lines
    from judgeapp.services.blind import blind_compare_create, version_from_browse

    source = EVALS / "blind" / "runbook"
    inbox = settings.BROWSE_ROOTS[0]
    for group, target in (("versions", "runbook-demo"), ("leaky", "runbook-demo-leaky")):
        shutil.copytree(source / group, inbox / target, dirs_exist_ok=True)

    def versions(target: str, names: list[str]):
        return [version_from_browse(f"0:{target}/{name}") for name in names]  # 0: the first BROWSE_ROOT

    task = (source / "task.md").read_text(encoding="utf-8").strip()
    expectations = expectations_from_lines((source / "expectations.txt").read_text(encoding="utf-8"))
    leaked = blind_compare_create(
        versions=versions("runbook-demo-leaky", ["with-skill", "without-skill"]),
        eval_prompt=task, expectations=expectations, judge=ctx.judge, executor=Executor.INLINE, created_by=ctx.lead,
    )
    outcome = blind_compare_create(
        versions=versions("runbook-demo", ["runbook-terse", "runbook-stepwise", "runbook-prose"]),
        eval_prompt=task, expectations=expectations, judge=ctx.judge, executor=Executor.INLINE, created_by=ctx.lead,
        run_id="demo-blind",
    )
    if outcome.leaked:  # the examples themselves must be clean; say so rather than hide it
        return f"demo: blind comparison stopped on {len(outcome.flags)} leakage flag(s): {outcome.flags[0].detail}"
    run = run_execute_inline(run=outcome.run, concurrency=4)
    winner = (run.report or {}).get("comparison", {}) or {}
    return (
        f"demo: blind comparison {run.run_id} {run.status}, winner {winner.get('winner') or 'none'}; "
        f"another stopped on {len(leaked.flags)} leakage flags (scripted demo judge)"
    )
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
@step("demo-calibration")
def calibration(ctx: DemoContext) -> str:
    """PandaLM's real human labels and GPT-3.5 verdicts, and a blind sample of the pointwise demo for the
    demo annotators (idempotent: there is no run called demo-calibration, so this runs on every load)."""
    from calibration.demo import calibration_demo

    return calibration_demo(lead=ctx.lead)
    try:
        release_mark(run=run, actor=ctx.lead, label="v1.0", note="Demo: the version in production.")
        released = ", released as v1.0"
    except InputError as exc:
        released = f", not released ({exc})"
    return f"demo: pointwise run {run.run_id} {run.status}, mean {run.report and run.report.get('mean')}{released}"


@step("demo-pointwise-candidate")
def pointwise_candidate(ctx: DemoContext) -> str:
    """support-bot's candidate answers every case itself; the gate compares it with the v1.0 release, and
    the lead approves it (or, if the gate is closed, blocks it) with a reason."""
    from judgeapp.selectors_releases import gate_evaluate
    from judgeapp.services.pointwise import InputFile, pointwise_create
    from judgeapp.services.releases import gate_decide

    run = pointwise_create(
        testset=InputFile.from_path(EVALS / "support" / "testset.jsonl"),
        rubric=InputFile.from_path(EVALS / "support" / "rubric.toml"),
        judge=ctx.judge,
        system=_demo_support_bot(ctx),
        generate=True,
        threshold=3.5,
        executor=Executor.INLINE,
        run_id="demo-pointwise-candidate",
        title="support-bot candidate: replies generated by its new configuration, gated against v1.0 (scripted demo judge)",
        created_by=ctx.lead,
    )
    run = run_execute_inline(run=run, concurrency=8)
    gate = gate_evaluate(run=run)
    if gate["passed"]:
        reason = "Demo: mean above the v1.0 release and the threshold; lowest cases read and acceptable."
        decision = gate_decide(run=run, actor=ctx.lead, verdict="approved", reason=reason)
    else:
        decision = gate_decide(run=run, actor=ctx.lead, verdict="blocked", reason="Demo: " + "; ".join(gate["reasons"]))
    return f"demo: pointwise run {run.run_id} {run.status}, mean {run.report and run.report.get('mean')}, lead {decision.verdict}"
