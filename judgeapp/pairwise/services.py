"""Starting a pairwise A/B run: check every input first, then store the test set, the rubric, the run and
the versions' outputs in one transaction, so that bad input leaves nothing behind."""

from __future__ import annotations

from dataclasses import dataclass, replace
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
from judgeapp.judging.costs import GENERATED_REPLY_CHARS, Estimate, budget_check, estimate_from_prompts
from judgeapp.judging.errors import InputError, refused_when_disk_full
from judgeapp.judging.judges import family_warnings, judge_not_system_check
from judgeapp.judging.library import prompt_choose
from judgeapp.judging.noise import trials_check
from judgeapp.judging.outputs import output_set_replies, outputs_file_check, outputs_origin, run_outputs_store
from judgeapp.judging.runs import run_create, run_enqueue
from judgeapp.models import (
    Executor,
    Judge,
    OutputSet,
    PromptMode,
    PromptTemplate,
    Rubric,
    Run,
    RunKind,
    System,
    TestSet,
    content_hash,
    short_version,
)
from judgeapp.pairwise.core import sample_case_ids


@dataclass
class VersionSource:
    """Where one version's replies come from: a JSONL file of outputs, the outputs stored for a system version
    (`output_set`), or a system that generates them."""

    outputs: InputFile | None = None
    system: System | None = None
    output_set: OutputSet | None = None

    def describe(self) -> str:
        if self.output_set is not None:
            return str(self.output_set)
        return self.outputs.name if self.outputs else self.system.name


@dataclass
class PairwisePlan:
    """A pairwise run's inputs, checked (pairwise_check): what its store step writes and its estimate counts."""

    sources: dict[str, VersionSource]  # {"A": …, "B": …}, each naming its system
    trials: int
    budget: Decimal | None
    prompt: PromptTemplate | None  # a pairwise prompt of the library; None: the built-in
    sample: int | None
    seed: int | None  # 0 when a sample is drawn without one
    chosen: list[str]  # the case ids compared, in the test set's order
    outputs: dict[str, dict[str, str]]  # {slot: {case id: reply}} for each version whose replies are given
    warnings: list[str]


def _sample_check(sample: int | None, seed: int | None, case_count: int) -> None:
    if sample is None:
        if seed is not None:
            raise InputError("--seed without --sample: there is nothing to draw")
        return
    if sample < 1:
        raise InputError(f"--sample {sample}: give a positive number of cases")
    if sample > case_count:
        raise InputError(f"--sample {sample} is more than the test set's {case_count} cases")


def pairwise_estimate(
    *,
    testset: TestSet | InputFile,
    rubric: Rubric | InputFile,
    judge: Judge,
    version_a: VersionSource,
    version_b: VersionSource,
    sample: int | None = None,
    seed: int | None = None,
    trials: int | None = None,
    prompt: str | None = None,
) -> Estimate:
    """What the run `pairwise_run_create` would start asks its judge, from its inputs alone: no judge call,
    nothing stored; inputs it would refuse are the same InputError (pairwise_check). Every chosen case in both
    orders, once per trial; a reply a system would generate is taken as GENERATED_REPLY_CHARS long."""
    from judgeapp.judging.prompts import Prompt, user_message
    from judgeapp.judging.replies import rubric_text
    from judgeapp.pairwise.core import ORDERS, order_prompt

    plan = pairwise_check(
        testset=testset, rubric=rubric, judge=judge, version_a=version_a, version_b=version_b, sample=sample, seed=seed,
        trials=trials, prompt=prompt,
    )
    template = Prompt(name=plan.prompt.name, text=plan.prompt.text) if plan.prompt is not None else None
    chosen = set(plan.chosen)
    replies = {slot: plan.outputs.get(slot, {}) for slot in ("A", "B")}
    rubric_block = rubric_text(rubric)
    generated = "x" * GENERATED_REPLY_CHARS

    def prompts():
        for row in case_rows(testset):
            if row.case_id not in chosen:
                continue
            reply_a, reply_b = (replies[slot].get(row.case_id, generated) for slot in ("A", "B"))
            for order in ORDERS:
                yield user_message(order_prompt(order, rubric=rubric_block, input=row.input, reply_a=reply_a, reply_b=reply_b,
                                                prompt=template))

    return estimate_from_prompts(
        judge=judge, mode="pairwise", prompts=prompts(), count=len(chosen) * len(ORDERS), trials=plan.trials
    )


@refused_when_disk_full
def pairwise_run_create(
    *,
    testset: TestSet | InputFile,
    rubric: Rubric | InputFile,
    judge: Judge,
    version_a: VersionSource,
    version_b: VersionSource,
    sample: int | None = None,
    seed: int | None = None,
    trials: int | None = None,
    run_id: str | None = None,
    title: str = "",
    executor: str = Executor.CELERY,
    prompt: str | None = None,
    created_by=None,
    budget=None,
) -> Run:
    """A queued pairwise run, or InputError (one line) with nothing stored. `prompt` names a pairwise prompt
    of the library (`NAME` or `NAME@vN`); without one the judge reads the built-in pairwise prompt.

    With `sample`, that many cases are drawn from the test set with `seed` (0 when not given, recorded in
    the report): the draw depends on the test set alone, so both versions answer identical inputs.
    """
    plan = pairwise_check(
        testset=testset, rubric=rubric, judge=judge, version_a=version_a, version_b=version_b, sample=sample, seed=seed,
        trials=trials, prompt=prompt, budget=budget,
    )
    return _pairwise_run_store(
        plan=plan, testset=testset, rubric=rubric, judge=judge, run_id=run_id, title=title, executor=executor,
        created_by=created_by,
    )


def pairwise_check(
    *,
    testset: TestSet | InputFile,
    rubric: Rubric | InputFile,
    judge: Judge,
    version_a: VersionSource,
    version_b: VersionSource,
    sample: int | None = None,
    seed: int | None = None,
    trials: int | None = None,
    prompt: str | None = None,
    budget=None,
) -> PairwisePlan:
    """Everything about a pairwise run's inputs that can be wrong, found before anything is stored (it reads,
    never writes; the versions given are left as they are): InputError, one line, or the plan to store."""
    trials = trials_check(trials)
    budget = budget_check(budget=budget, judges=[judge])  # a spend cap in dollars (judging/costs.py)
    chosen_prompt = prompt_choose(mode=PromptMode.PAIRWISE, spec=prompt)
    sources = {"A": replace(version_a), "B": replace(version_b)}
    _sources_check(sources, judge=judge)
    case_ids, _has_output = testset_case_ids(testset)
    rubric_warnings = rubric_check(rubric)
    _sample_check(sample, seed, len(case_ids))
    if sample is not None and seed is None:
        seed = 0
    chosen = sample_case_ids(case_ids, sample=sample, seed=seed)
    outputs = {
        slot: _replies_of(source, slot=slot, testset=testset, case_ids=case_ids, chosen=chosen)
        for slot, source in sources.items()
        if source.output_set is not None or source.outputs is not None
    }
    warnings = list(rubric_warnings) + _pair_warnings(sources, judge=judge, outputs=outputs)
    return PairwisePlan(
        sources=sources, trials=trials, budget=budget, prompt=chosen_prompt, sample=sample, seed=seed, chosen=chosen,
        outputs=outputs, warnings=warnings,
    )


@transaction.atomic
def _pairwise_run_store(
    *, plan: PairwisePlan, testset: TestSet | InputFile, rubric: Rubric | InputFile, judge: Judge, run_id: str | None,
    title: str, executor: str, created_by,
) -> Run:
    """The checked run's inputs stored with the run, queued, and the versions' given replies; a Celery run is
    sent once the transaction commits."""
    sources = plan.sources
    version_options = {slot: _version_record(source) for slot, source in sources.items()}
    version_ids = {slot.lower(): _version_id(source) for slot, source in sources.items()}
    stored_testset = testset_save(testset)
    run = run_create(
        kind=RunKind.PAIRWISE,
        run_id=run_id,
        executor=executor,
        created_by=created_by,
        title=title or f"{sources['A'].describe()} vs {sources['B'].describe()}",
        judge=judge,
        testset=stored_testset,
        rubric=rubric_save(rubric),
        prompt=plan.prompt or prompt_register(prompt="pairwise"),
        budget=plan.budget,
        options={
            "versions": version_options, "sample": plan.sample, "seed": plan.seed,
            "case_ids": plan.chosen if plan.sample is not None else None, "warnings": plan.warnings, "trials": plan.trials,
        },
        versions=version_ids,
    )
    for slot, by_id in plan.outputs.items():
        owner = sources[slot].output_set.system if sources[slot].output_set else None
        run_outputs_store(run=run, testset=stored_testset, replies=by_id, system=owner, slot=slot)
    if executor == Executor.CELERY:
        run_enqueue(run=run)
    return run


def _sources_check(sources: dict[str, VersionSource], *, judge: Judge) -> None:
    """Each version is an outputs file, a stored system version, or a system that generates its replies —
    one of them — and the judge is neither system."""
    for slot, source in sources.items():
        if source.output_set is not None:
            if source.outputs is not None:
                raise InputError(f"version {slot}: give its outputs file or a stored system version, not both")
            source.system = source.output_set.system  # named (family checks, the page); it generates nothing
            continue
        if (source.outputs is None) == (source.system is None):
            raise InputError(f"version {slot}: give either its outputs file or the system that generates them")
    judge_not_system_check(judge=judge, systems=[source.system for source in sources.values()])


def _replies_of(source: VersionSource, *, slot: str, testset, case_ids: list[str], chosen: list[str]) -> dict[str, str]:
    """A version's replies to the cases compared, from its file or its stored system version (checked)."""
    where = f" (version {slot})"
    if source.output_set is not None:
        return output_set_replies(source.output_set, testset=testset, case_ids=case_ids, system=None, judged=chosen, where=where)
    return outputs_file_check(source.outputs, case_ids, judged=chosen, where=where)


def _pair_warnings(sources: dict[str, VersionSource], *, judge: Judge, outputs: dict[str, dict[str, str]]) -> list[str]:
    version_a, version_b = sources["A"], sources["B"]
    warnings = family_warnings([judge, version_a.system, version_b.system])
    if version_a.outputs and version_b.outputs and outputs["A"] == outputs["B"]:
        warnings.append("versions A and B have identical outputs")
    if version_a.system and version_b.system and version_a.system.pk == version_b.system.pk:
        warnings.append(f"versions A and B are the same system ({version_a.system.name})")
    for slot, source in sources.items():
        if source.system and source.system.effective_family == judge.effective_family:
            warnings.append(
                f"the judge {judge.name} is of the {judge.effective_family} family, like version {slot}'s system "
                f"{source.system.name}: a judge of another family is less likely to favour its own"
            )
    return warnings


def _version_record(source: VersionSource) -> dict:
    """What the run records of where a version's replies come from (the report's `versions`)."""
    if source.output_set is not None:
        return outputs_origin(output_set=source.output_set)
    if source.outputs is not None:
        return {"source": "file", "file": source.outputs.name, "content_hash": content_hash(source.outputs.data)}
    system = source.system
    return {
        "source": "system",
        "system": system.name,
        "system_id": system.pk,
        "model": system.model,
        "family": system.effective_family,
        "config": system.config_snapshot() | {"version": system.version},
    }


def _version_id(source: VersionSource) -> str:
    if source.output_set is not None:
        return short_version(source.output_set.content_hash)
    if source.outputs is not None:
        return short_version(content_hash(source.outputs.data))
    return source.system.version
