"""Recalibration without new labels: candidate configurations of a judge, judged on exactly the labelled
items of a sample, and a lead's adoption of one.

Adopting a candidate makes it the judge's configuration: the judge row takes the candidate's model and
structured-output setting (and becomes admin-owned, so the judges file no longer overwrites it), later
pointwise runs of the judge use the candidate's prompt text, and the candidate's agreement with the sample's
labels becomes the judge's newest evidence — which unlocks the judge if it reaches the level.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from calibration.models import AgreementResult, Candidate, LabelKind, Sample
from calibration.runkind import candidate_endpoint
from calibration.selectors.run_judges import judge_configurations_for_run, primary_judge_for_run
from calibration.selectors.samples import labelled_items_for_sample
from calibration.services.audit import calibration_audit
from judgeapp.judging.content import InputFile, prompt_register, rubric_save
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import parse_rubric
from judgeapp.judging.noise import trials_check
from judgeapp.judging.prompts import Prompt, load_prompt
from judgeapp.judging.runs import endpoint_snapshots, run_create, run_enqueue
from judgeapp.models import (
    AuditLog,
    EndpointSource,
    Executor,
    Judge,
    PromptTemplate,
    Rubric,
    RunKind,
    RunStatus,
    StructuredOutput,
    content_hash,
    short_version,
)
from judgeapp.roles import Role, has_role

PROMPT_PLACEHOLDERS = {"rubric", "input", "output"}


def _prompt_check(text: str) -> Prompt:
    text = text.replace("\r\n", "\n")
    if not text.strip():
        raise InputError("the prompt text is empty")
    prompt = Prompt(name="pointwise", text=text)
    missing = PROMPT_PLACEHOLDERS - prompt.placeholders
    unknown = prompt.placeholders - PROMPT_PLACEHOLDERS
    if missing:
        raise InputError(
            f"the prompt text lacks {', '.join('{{' + m + '}}' for m in sorted(missing))}: the candidate must see the rubric, "
            f"the message and the reply"
        )
    if unknown:
        raise InputError(
            f"the prompt text names unknown placeholder(s) {', '.join('{{' + u + '}}' for u in sorted(unknown))}; use only "
            f"{{rubric}}, {{input}}, {{output}}"
        )
    return prompt


def _same_text(given: str, stored: str) -> bool:
    return given.replace("\r\n", "\n").strip() == stored.replace("\r\n", "\n").strip()


@dataclass
class CandidatePlan:
    """A candidate checked, nothing stored yet: the judge it reconfigures, the configuration, the prompt and
    rubric it judges with (the run's own rows, or a text and a file stored with the candidate) and what changed."""

    judge: Judge
    base_version: str
    config: dict  # {"model", "structured_output"}
    endpoint: Judge  # the judge as the candidate configures it, unsaved
    prompt: PromptTemplate | Prompt
    rubric: Rubric | InputFile
    items: list[dict]
    changes: list[str]
    label: str
    title: str
    trials: int


def candidate_create(
    *,
    sample: Sample,
    label: str = "",
    model: str | None = None,
    structured_output: str | None = None,
    prompt_text: str | None = None,
    rubric: InputFile | None = None,
    trials: int | None = None,
    executor: str = Executor.CELERY,
    created_by=None,
) -> Candidate:
    """A candidate configuration of the sample's judge and its run on exactly the sample's labelled items
    (sent to the workers once its transaction commits; in this process with the inline executor)."""
    plan = candidate_check(
        sample=sample, label=label, model=model, structured_output=structured_output, prompt_text=prompt_text,
        rubric=rubric, trials=trials,
    )
    return _candidate_store(sample=sample, plan=plan, executor=executor, created_by=created_by)


def candidate_check(
    *,
    sample: Sample,
    label: str,
    model: str | None,
    structured_output: str | None,
    prompt_text: str | None,
    rubric: InputFile | None,
    trials: int | None,
) -> CandidatePlan:
    """Everything about a candidate that can be wrong, found before anything is stored (one InputError)."""
    trials = trials_check(trials)
    judge = _sample_judge(sample)
    run = sample.run
    items = labelled_items_for_sample(sample=sample)
    if not items:
        raise InputError("no item of this sample is labelled yet: a candidate is measured against people's labels")
    model = (model or judge.model).strip()
    structured_output = structured_output or judge.structured_output
    if structured_output not in StructuredOutput.values:
        raise InputError(f"structured output must be one of {', '.join(StructuredOutput.values)}")
    prompt = _candidate_prompt(run, prompt_text)
    rubric = _candidate_rubric(run.rubric, rubric, needed={item["criterion"] for item in items})
    rubric_version = rubric.version if isinstance(rubric, Rubric) else short_version(content_hash(rubric.data))
    base_version = judge_configurations_for_run(run=run)[judge.name]["version"]
    config = {"model": model, "structured_output": structured_output}
    endpoint = candidate_endpoint(judge, config)
    changes = [
        *(["prompt"] if prompt.version != run.versions.get("prompt") else []),
        *(["rubric"] if rubric_version != run.versions.get("rubric") else []),
        *([f"model {model}"] if model != judge.model else []),
        *([f"structured output {structured_output}"] if structured_output != judge.structured_output else []),
    ]
    if not changes and endpoint.version == base_version:
        raise InputError("the candidate is the judge as it is: change its prompt text, rubric, model or structured output")
    label = " ".join(label.split())[:100]
    return CandidatePlan(
        judge=judge, base_version=base_version, config=config, endpoint=endpoint, prompt=prompt, rubric=rubric, items=items,
        changes=changes, label=label,
        title=f"candidate {label or ', '.join(changes)} for {judge.name} on sample {sample.short_id}", trials=trials,
    )


def _sample_judge(sample: Sample) -> Judge:
    """The judge a candidate reconfigures: the one the sample's pointwise run stands on, still configured."""
    run = sample.run
    if sample.label_kind != LabelKind.SCORE or run.kind != RunKind.POINTWISE or run.config.get("imported"):
        raise InputError("candidates are judged on samples of pointwise runs (1–5 scores); this sample is not one")
    name = primary_judge_for_run(run=run)
    judge = Judge.objects.filter(name=name).first() if name else None
    if judge is None:
        raise InputError(f"the judge of run {run.run_id} is no longer configured")
    return judge


@transaction.atomic
def _candidate_store(*, sample: Sample, plan: CandidatePlan, executor: str, created_by) -> Candidate:
    """The candidate, its prompt and rubric when new, and its run; a Celery run is sent to the workers once this
    transaction commits."""
    prompt_row = plan.prompt if isinstance(plan.prompt, PromptTemplate) else prompt_register(prompt=plan.prompt)
    candidate_run = _candidate_run(
        sample=sample, plan=plan, prompt_row=prompt_row, rubric_row=rubric_save(plan.rubric), executor=executor,
        created_by=created_by,
    )
    candidate = Candidate.objects.create(
        sample=sample,
        judge_name=plan.judge.name,
        base_version=plan.base_version,
        run=candidate_run,
        label=plan.label,
        model=plan.config["model"],
        structured_output=plan.config["structured_output"],
        config_version=plan.endpoint.version,
        changes=plan.changes,
        created_by=created_by if getattr(created_by, "is_authenticated", False) else None,
    )
    if executor == Executor.CELERY:
        run_enqueue(run=candidate_run)
    return candidate


def _candidate_run(*, sample: Sample, plan: CandidatePlan, prompt_row, rubric_row, executor: str, created_by):
    """The candidate's run on the sample's labelled items, recording the configuration it judges with: the
    candidate's, not the judge row's."""
    run = sample.run
    candidate_run = run_create(
        kind=RunKind.CANDIDATE,
        executor=executor,
        created_by=created_by,
        title=plan.title,
        judge=plan.judge,
        testset=run.testset,
        rubric=rubric_row,
        prompt=prompt_row,
        options={"sample": str(sample.uuid), "trials": plan.trials},
    )
    candidate_run.config["judges"] = endpoint_snapshots(plan.endpoint)
    candidate_run.config["candidate"] = {
        "judge": plan.judge.name,
        **plan.config,
        "sample": str(sample.uuid),
        "source_run": run.pk,
        "items": plan.items,
        "scripted_demo": plan.judge.scripted_demo,
    }
    candidate_run.versions["judge"] = plan.endpoint.version
    candidate_run.save(update_fields=["config", "versions", "updated_at"])
    return candidate_run


def _candidate_prompt(run, prompt_text: str | None) -> PromptTemplate | Prompt:
    """The candidate's prompt: the run's, or the text given when it differs (checked; stored with the candidate)."""
    prompt = run.prompt if run.prompt_id else load_prompt("pointwise")
    if prompt_text is not None and prompt_text.strip() and not _same_text(prompt_text, prompt.text):
        return _prompt_check(prompt_text)
    return prompt


def _candidate_rubric(rubric_row, rubric: InputFile | None, *, needed: set[str]) -> Rubric | InputFile:
    """The candidate's rubric: the run's, or the file given when it differs (it must keep the labelled criteria;
    stored with the candidate). A text box gives back the rubric with other line ends or blank edges: the same
    text is the same rubric."""
    if rubric is None or (rubric_row and _same_text(rubric.data.decode("utf-8", "replace"), rubric_row.raw)):
        return rubric_row
    spec = parse_rubric(rubric.data, rubric.name)
    missing = needed - {c.name for c in spec.criteria}
    if missing:
        raise InputError(f"{rubric.name}: the candidate rubric lacks the labelled criteria {', '.join(sorted(missing))}")
    return rubric


def candidate_adopt(*, candidate: Candidate, actor, reason: str = "") -> Candidate:
    """A lead adopts a candidate: it becomes the judge's configuration, and its agreement on the sample the
    judge's newest evidence (the lock follows it). Audited."""
    from calibration.services.locks import locks_evaluate

    if not has_role(actor, Role.LEAD):
        raise PermissionDenied("only a lead adopts a candidate")
    with transaction.atomic():
        candidate = Candidate.objects.select_for_update().select_related("run", "sample", "sample__run").get(pk=candidate.pk)
        pooled, judge = _adoption_check(candidate)
        previous = _judge_reconfigure(judge, candidate)
        now = timezone.now()
        candidate.adopted_at = now
        candidate.adopted_by = actor
        candidate.save(update_fields=["adopted_at", "adopted_by", "updated_at"])
        AgreementResult.objects.filter(candidate=candidate).update(effective_at=now)
        _adoption_audit(candidate=candidate, actor=actor, reason=reason, pooled=pooled, previous=previous)
        locks_evaluate(configs=[(candidate.judge_name, candidate.config_version)])
    return candidate


def _adoption_check(candidate: Candidate) -> tuple[AgreementResult, Judge]:
    """The candidate's pooled agreement and its judge (locked), or one InputError when it cannot be adopted; in
    the adoption's transaction, the candidate row locked."""
    if candidate.adopted_at is not None:
        raise InputError(f"candidate {candidate.title} is already adopted")
    if candidate.run.status != RunStatus.DONE:
        raise InputError(f"the candidate's run is {candidate.run.status}; only a finished candidate can be adopted")
    pooled = AgreementResult.objects.filter(candidate=candidate, criterion="").first()
    if pooled is None:
        raise InputError("the candidate has no agreement with the people's labels yet")
    judge = Judge.objects.select_for_update().get(name=candidate.judge_name)
    if judge.version not in (candidate.base_version, candidate.config_version):
        raise InputError(
            f"judge {judge.name} changed since the candidate was made (configuration {judge.version}, not "
            f"{candidate.base_version}): run the candidate again"
        )
    return pooled, judge


def _judge_reconfigure(judge: Judge, candidate: Candidate) -> dict:
    """The judge row takes the candidate's model and structured output; what it had before, for the audit."""
    previous = {
        "model": judge.model, "structured_output": judge.structured_output, "source": judge.source, "version": judge.version
    }
    if (judge.model, judge.structured_output) != (candidate.model, candidate.structured_output):
        if judge.model != candidate.model and judge.family:
            judge.family = ""  # derived from the new model's name
        judge.model = candidate.model
        judge.structured_output = candidate.structured_output
        # The judges file (or JUDGE_MODEL) no longer owns the row: a sync would undo the adoption.
        judge.source = EndpointSource.ADMIN
        judge.save()
    return previous


def _adoption_audit(*, candidate: Candidate, actor, reason: str, pooled: AgreementResult, previous: dict) -> None:
    calibration_audit(
        action=AuditLog.Action.CANDIDATE_ADOPTED,
        actor=actor,
        subject=f"judge {candidate.judge_name} configuration {candidate.config_version[:12]}",
        reason=reason.strip() or f"adopted candidate {candidate.title}",
        run=candidate.sample.run,
        detail={
            "judge": candidate.judge_name,
            "judge_version": candidate.config_version,
            "candidate": str(candidate.uuid),
            "candidate_run": candidate.run.run_id,
            "sample": str(candidate.sample.uuid),
            "changes": candidate.changes,
            "prompt_version": candidate.run.versions.get("prompt"),
            "rubric_version": candidate.run.versions.get("rubric"),
            "kappa": pooled.kappa,
            "agreement": pooled.agreement,
            "n_items": pooled.n_items,
            "previous": previous,
        },
    )
