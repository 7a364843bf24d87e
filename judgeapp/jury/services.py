"""Starting a jury run: the panel is checked against the seed's rules before anything is stored."""

from __future__ import annotations

from django.db import transaction

from judgeapp.judging.content import InputFile, prompt_register, rubric_check, rubric_save, testset_case_ids, testset_save
from judgeapp.judging.errors import InputError, refused_when_disk_full
from judgeapp.judging.judges import endpoint_identity, family_warnings, judge_get
from judgeapp.judging.noise import trials_check
from judgeapp.judging.runs import run_create, run_enqueue
from judgeapp.jury.core import Panelist, panel_check
from judgeapp.models import Executor, Judge, Rubric, Run, RunKind, System, TestSet
from judgeapp.models.families import recognised_family


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
            f"the model family of the system under test {system.name} ({system.model}) is unknown: the rule that no "
            f"juror shares it was not checked; set the system's family"
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


@refused_when_disk_full
def jury_run_create(
    *,
    testset: TestSet | InputFile,
    rubric: Rubric | InputFile,
    judges: list[Judge],
    system: System | None = None,
    generate: bool = False,
    trials: int | None = None,
    run_id: str | None = None,
    title: str = "",
    executor: str = Executor.CELERY,
    created_by=None,
) -> Run:
    """A queued jury run, or InputError (one line) with nothing stored."""
    trials = trials_check(trials)
    warnings, family_check = jury_panel_check(judges=judges, system=system)
    case_ids, has_output = testset_case_ids(testset)
    warnings += rubric_check(rubric)
    if generate and system is None:
        raise InputError("jury: --generate needs --system S, the system that answers the test set")
    if not generate:
        without = [c for c in case_ids if not has_output[c]]
        if without:
            shown = ", ".join(without[:5]) + (f" and {len(without) - 5} more" if len(without) > 5 else "")
            raise InputError(
                f"test set: case(s) {shown} have no 'output' to judge; add outputs, or pass --system S --generate"
            )
    with transaction.atomic():
        run = run_create(
            kind=RunKind.JURY,
            run_id=run_id,
            executor=executor,
            created_by=created_by,
            title=title or f"Jury of {', '.join(j.name for j in judges)}",
            judges=judges,
            system=system,
            testset=testset_save(testset),
            rubric=rubric_save(rubric),
            prompt=prompt_register(prompt="juror"),
            options={
                "judge_ids": [j.pk for j in judges],
                "generate": generate,
                "warnings": warnings,
                "system_family_check": family_check,
                "trials": trials,
            },
            # One line for the run page; the report has them as a table.
            versions={"judges": ", ".join(f"{j.name}@{j.version}" for j in judges)},
        )
        if executor == Executor.CELERY:
            run_enqueue(run=run)
    return run
