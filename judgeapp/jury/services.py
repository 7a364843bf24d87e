"""Starting a jury run: the panel is checked against the seed's rules before anything is stored."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction

from judgeapp.judging.content import (
    InputFile,
    case_rows,
    prompt_register,
    rubric_check,
    rubric_save,
    testset_case_ids,
    testset_save,
)
from judgeapp.judging.costs import (
    GENERATED_REPLY_CHARS,
    PROMPTS_MEASURED,
    Estimate,
    budget_check,
    estimate_from_prompts,
    estimates_sum,
)
from judgeapp.judging.errors import InputError, refused_when_disk_full
from judgeapp.judging.files import ids_shown
from judgeapp.judging.judges import endpoint_identity, family_warnings, judge_get
from judgeapp.judging.library import prompt_choose
from judgeapp.judging.noise import trials_check
from judgeapp.judging.outputs import SystemReplies, run_outputs_store, system_replies
from judgeapp.judging.runs import run_create, run_enqueue
from judgeapp.jury.core import Panelist, panel_check
from judgeapp.models import Executor, Judge, OutputSet, PromptMode, PromptTemplate, Rubric, Run, RunKind, System, TestSet
from judgeapp.models.families import recognised_family


@dataclass
class JuryPlan:
    """A jury run's inputs, checked (jury_check): what its store step writes and its estimate counts."""

    system: System | None  # the system the run is labelled with
    trials: int
    budget: Decimal | None
    prompt: PromptTemplate | None  # a jury prompt of the library; None: the built-in juror prompt
    warnings: list[str]
    family_check: dict  # the report's system_family_check
    given: SystemReplies  # the replies judged when they do not come with the test set


def system_family(system: System | None) -> str | None:
    """The family of the system under test when it is known: set on the system, or recognised from its
    model name. None when there is no system or its model matches no known family."""
    if system is None:
        return None
    return system.family.lower() if system.family else recognised_family(system.model)


def jury_panel_get(names: str | list[str]) -> list[Judge]:
    """The judges of a panel by name ("J1,J2,J3" or a list); InputError for an unknown one."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",")]
    names = [n for n in names if n]
    if not names:
        raise InputError("jury: no judges given; pass --judges J1,J2,J3")
    return [judge_get(name=name) for name in names]


def jury_panel_check(*, judges: list[Judge], system: System | None) -> tuple[list[str], dict]:
    """(warnings, the family check for the report), or InputError when the panel breaks a rule."""
    family = system_family(system)
    warnings = panel_check(
        [Panelist(j.name, j.effective_family, endpoint_identity(j)) for j in judges],
        system_family=family,
        system_identity=endpoint_identity(system) if system is not None else None,
    )
    if system is not None and family is None:
        # panel_check's generic warning says the check was skipped; say why.
        warnings = [
            (f"the model family of the system under test {system.name} ({system.model}) is unknown: the rule that no "
             f"juror shares it was not checked; set the system's family")
        ]
    warnings += family_warnings(judges)
    check = {
        "name": system.name if system else None,
        "model": system.model if system else None,
        "family": family,
        "family_known": family is not None,
        "checked": family is not None,
    }
    return warnings, check


def jury_estimate(
    *,
    testset: TestSet | InputFile,
    rubric: Rubric | InputFile,
    judges: list[Judge],
    system: System | None = None,
    generate: bool = False,
    outputs: InputFile | None = None,
    output_set: OutputSet | None = None,
    outputs_version: str | None = None,
    trials: int | None = None,
    prompt: str | None = None,
) -> Estimate:
    """What the run `jury_run_create` would start asks its jurors, from its inputs alone: no judge call, nothing
    stored. Every juror judges every case once per trial with the identical prompt, on the replies the run
    would judge (an outputs file, a system version's stored outputs, else the test set's own); a reply the
    system would generate is taken as GENERATED_REPLY_CHARS long. Inputs the run would refuse are the same
    InputError (jury_check)."""
    from judgeapp.judging.prompts import Prompt, user_message
    from judgeapp.judging.replies import rubric_text
    from judgeapp.jury.core import render_juror_prompt

    plan = jury_check(
        testset=testset, rubric=rubric, judges=judges, system=system, generate=generate, outputs=outputs,
        output_set=output_set, outputs_version=outputs_version, trials=trials, prompt=prompt,
    )
    replies = plan.given.replies or {}
    template = Prompt(name=plan.prompt.name, text=plan.prompt.text) if plan.prompt is not None else None
    rubric_block = rubric_text(rubric)
    rows = list(case_rows(testset))

    def prompts():
        for row in rows[:PROMPTS_MEASURED]:
            output = replies.get(row.case_id, row.output)
            reply = "x" * GENERATED_REPLY_CHARS if generate or output is None else output
            yield user_message(render_juror_prompt(rubric=rubric_block, input=row.input, output=reply, prompt=template))

    # Every juror reads the identical prompt: rendered once, measured for each juror's own tokens.
    rendered = list(prompts())
    return estimates_sum([
        estimate_from_prompts(judge=judge, mode="jury", prompts=rendered, count=len(rows), trials=plan.trials) for judge in judges
    ])


@refused_when_disk_full
def jury_run_create(
    *,
    testset: TestSet | InputFile,
    rubric: Rubric | InputFile,
    judges: list[Judge],
    system: System | None = None,
    generate: bool = False,
    outputs: InputFile | None = None,
    output_set: OutputSet | None = None,
    outputs_version: str | None = None,
    trials: int | None = None,
    run_id: str | None = None,
    title: str = "",
    executor: str = Executor.CELERY,
    prompt: str | None = None,
    created_by=None,
    budget=None,
) -> Run:
    """A queued jury run, or InputError (one line) with nothing stored. `prompt` names a jury prompt of the
    library (`NAME` or `NAME@vN`); without one every juror reads the built-in juror prompt.

    A run labelled with a system judges that system's replies, as pointwise does: an outputs file, the
    outputs stored for one of its versions (`output_set`, or `outputs_version` its label; default its newest
    for this test set), or replies it generates (`generate`); never the test set's own outputs."""
    plan = jury_check(
        testset=testset, rubric=rubric, judges=judges, system=system, generate=generate, outputs=outputs,
        output_set=output_set, outputs_version=outputs_version, trials=trials, prompt=prompt, budget=budget,
    )
    return _jury_run_store(
        plan=plan, testset=testset, rubric=rubric, judges=judges, generate=generate, run_id=run_id, title=title,
        executor=executor, created_by=created_by,
    )


def jury_check(
    *,
    testset: TestSet | InputFile,
    rubric: Rubric | InputFile,
    judges: list[Judge],
    system: System | None = None,
    generate: bool = False,
    outputs: InputFile | None = None,
    output_set: OutputSet | None = None,
    outputs_version: str | None = None,
    trials: int | None = None,
    prompt: str | None = None,
    budget=None,
) -> JuryPlan:
    """Everything about a jury run's inputs that can be wrong, the panel first, found before anything is
    stored (it reads, never writes): InputError, one line, or the plan to store."""
    trials = trials_check(trials)
    budget = budget_check(budget=budget, judges=judges)  # a spend cap in dollars (judging/costs.py)
    chosen_prompt = prompt_choose(mode=PromptMode.JURY, spec=prompt)
    if output_set is not None and system is None:
        system = output_set.system  # the run is labelled with the system whose outputs it judges
    warnings, family_check = jury_panel_check(judges=judges, system=system)
    case_ids, has_output = testset_case_ids(testset)
    warnings += rubric_check(rubric)
    if generate and system is None:
        raise InputError("jury: --generate needs --system S, the system that answers the test set")
    given = system_replies(
        testset=testset, case_ids=case_ids, system=system, generate=generate, outputs=outputs, output_set=output_set,
        outputs_version=outputs_version,
    )
    if not generate and given.replies is None:
        _outputs_present_check(case_ids, has_output)
    return JuryPlan(
        system=system, trials=trials, budget=budget, prompt=chosen_prompt, warnings=warnings, family_check=family_check,
        given=given,
    )


def _outputs_present_check(case_ids: list[str], has_output: dict[str, bool]) -> None:
    """Judging the test set's own outputs: every case must carry one."""
    without = [c for c in case_ids if not has_output[c]]
    if without:
        raise InputError(
            f"test set: case(s) {ids_shown(without, 5)} have no 'output' to judge; add outputs, or pass --system S --generate"
        )


@transaction.atomic
def _jury_run_store(
    *, plan: JuryPlan, testset: TestSet | InputFile, rubric: Rubric | InputFile, judges: list[Judge], generate: bool,
    run_id: str | None, title: str, executor: str, created_by,
) -> Run:
    """The checked run's inputs stored with the run, queued, and the replies it judges; a Celery run is sent
    once the transaction commits."""
    options = {
        "judge_ids": [j.pk for j in judges],
        "generate": generate,
        "warnings": plan.warnings,
        "system_family_check": plan.family_check,
        "trials": plan.trials,
    }
    # One line for the run page; the report has them as a table.
    versions = {"judges": ", ".join(f"{j.name}@{j.version}" for j in judges)}
    given = plan.given
    if given.option is not None:
        options["outputs"], versions["outputs"] = given.option, given.version
    testset_row = testset_save(testset)
    run = run_create(
        kind=RunKind.JURY,
        run_id=run_id,
        executor=executor,
        created_by=created_by,
        title=title or f"Jury of {', '.join(j.name for j in judges)}",
        judges=judges,
        system=plan.system,
        testset=testset_row,
        rubric=rubric_save(rubric),
        prompt=plan.prompt or prompt_register(prompt="juror"),
        budget=plan.budget,
        options=options,
        versions=versions,
    )
    if given.replies is not None:
        owner = given.output_set.system if given.output_set is not None else None
        run_outputs_store(run=run, testset=testset_row, replies=given.replies, system=owner)
    if executor == Executor.CELERY:
        run_enqueue(run=run)
    return run
