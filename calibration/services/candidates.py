"""Recalibration without new labels: candidate configurations of a judge, judged on exactly the labelled
items of a sample, and a lead's adoption of one.

Adopting a candidate makes it the judge's configuration: the judge row takes the candidate's model and
structured-output setting (and becomes admin-owned, so the judges file no longer overwrites it), later
pointwise runs of the judge use the candidate's prompt text, and the candidate's agreement with the sample's
labels becomes the judge's newest evidence — which unlocks the judge if it reaches the level.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from calibration.models import AgreementResult, Candidate, LabelKind, Sample
from calibration.runkind import candidate_endpoint
from calibration.selectors.run_judges import judge_configurations, primary_judge
from calibration.selectors.samples import labelled_items
from calibration.services.audit import calibration_audit
from judgeapp.judging.content import InputFile, prompt_register, rubric_store
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import parse_rubric
from judgeapp.judging.noise import trials_check
from judgeapp.judging.prompts import Prompt
from judgeapp.judging.runs import endpoint_snapshots, run_create, run_enqueue
from judgeapp.models import AuditLog, EndpointSource, Executor, Judge, RunKind, RunStatus, StructuredOutput
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


@transaction.atomic
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
    (sent to the workers once this transaction commits; in this process with the inline executor)."""
    trials = trials_check(trials)
    run = sample.run
    if sample.label_kind != LabelKind.SCORE or run.kind != RunKind.POINTWISE or run.config.get("imported"):
        raise InputError("candidates are judged on samples of pointwise runs (1–5 scores); this sample is not one")
    name = primary_judge(run=run)
    judge = Judge.objects.filter(name=name).first() if name else None
    if judge is None:
        raise InputError(f"the judge of run {run.run_id} is no longer configured")
    items = labelled_items(sample=sample)
    if not items:
        raise InputError("no item of this sample is labelled yet: a candidate is measured against people's labels")
    model = (model or judge.model).strip()
    structured_output = structured_output or judge.structured_output
    if structured_output not in StructuredOutput.values:
        raise InputError(f"structured output must be one of {', '.join(StructuredOutput.values)}")

    prompt_row = run.prompt if run.prompt_id else prompt_register(prompt="pointwise")
    if prompt_text is not None and prompt_text.strip() and not _same_text(prompt_text, prompt_row.text):
        prompt_row = prompt_register(prompt=_prompt_check(prompt_text))
    rubric_row = _candidate_rubric(run.rubric, rubric, needed={item["criterion"] for item in items})

    base_version = judge_configurations(run=run)[name]["version"]
    config = {"model": model, "structured_output": structured_output}
    endpoint = candidate_endpoint(judge, config)
    changes = [
        *(["prompt"] if prompt_row.version != run.versions.get("prompt") else []),
        *(["rubric"] if rubric_row.version != run.versions.get("rubric") else []),
        *([f"model {model}"] if model != judge.model else []),
        *([f"structured output {structured_output}"] if structured_output != judge.structured_output else []),
    ]
    if not changes and endpoint.version == base_version:
        raise InputError("the candidate is the judge as it is: change its prompt text, rubric, model or structured output")

    label = " ".join(label.split())[:100]
    candidate_run = _candidate_run(
        sample=sample, judge=judge, endpoint=endpoint, prompt_row=prompt_row, rubric_row=rubric_row, items=items,
        config=config, title=f"candidate {label or ', '.join(changes)} for {name} on sample {sample.short_id}",
        trials=trials, executor=executor, created_by=created_by,
    )
    candidate = Candidate.objects.create(
        sample=sample,
        judge_name=name,
        base_version=base_version,
        run=candidate_run,
        label=label,
        model=model,
        structured_output=structured_output,
        config_version=endpoint.version,
        changes=changes,
        created_by=created_by if getattr(created_by, "is_authenticated", False) else None,
    )
    if executor == Executor.CELERY:
        run_enqueue(run=candidate_run)
    return candidate


def _candidate_run(*, sample, judge, endpoint, prompt_row, rubric_row, items, config, title, trials, executor, created_by):
    """The candidate's run on the sample's labelled items, recording the configuration it judges with: the
    candidate's, not the judge row's."""
    run = sample.run
    candidate_run = run_create(
        kind=RunKind.CANDIDATE,
        executor=executor,
        created_by=created_by,
        title=title,
        judge=judge,
        testset=run.testset,
        rubric=rubric_row,
        prompt=prompt_row,
        options={"sample": str(sample.uuid), "trials": trials},
    )
    candidate_run.config["judges"] = endpoint_snapshots(endpoint)
    candidate_run.config["candidate"] = {
        "judge": judge.name,
        **config,
        "sample": str(sample.uuid),
        "source_run": run.pk,
        "items": items,
        "scripted_demo": judge.scripted_demo,
    }
    candidate_run.versions["judge"] = endpoint.version
    candidate_run.save(update_fields=["config", "versions", "updated_at"])
    return candidate_run


def _candidate_rubric(rubric_row, rubric: InputFile | None, *, needed: set[str]):
    """The candidate's rubric: the run's, or the one given when it differs (it must keep the labelled criteria).
    A text box gives back the rubric with other line ends or blank edges: the same text is the same rubric."""
    if rubric is None or (rubric_row and _same_text(rubric.data.decode("utf-8", "replace"), rubric_row.raw)):
        return rubric_row
    spec = parse_rubric(rubric.data, rubric.name)
    missing = needed - {c.name for c in spec.criteria}
    if missing:
        raise InputError(f"{rubric.name}: the candidate rubric lacks the labelled criteria {', '.join(sorted(missing))}")
    return rubric_store(data=rubric.data, name=rubric.name, source_path=rubric.source_path, git_commit=rubric.git_commit)


def candidate_adopt(*, candidate: Candidate, actor, reason: str = "") -> Candidate:
    """A lead adopts a candidate: it becomes the judge's configuration, and its agreement on the sample the
    judge's newest evidence (the lock follows it). Audited."""
    from calibration.services.locks import locks_evaluate

    if not has_role(actor, Role.LEAD):
        raise PermissionDenied("only a lead adopts a candidate")
    with transaction.atomic():
        candidate = Candidate.objects.select_for_update().select_related("run", "sample", "sample__run").get(pk=candidate.pk)
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
        previous = {
            "model": judge.model, "structured_output": judge.structured_output, "source": judge.source, "version": judge.version
        }
        if (judge.model, judge.structured_output) != (candidate.model, candidate.structured_output):
            if judge.model != candidate.model and judge.family and candidate.model != judge.model:
                judge.family = ""  # derived from the new model's name
            judge.model = candidate.model
            judge.structured_output = candidate.structured_output
            # The judges file (or JUDGE_MODEL) no longer owns the row: a sync would undo the adoption.
            judge.source = EndpointSource.ADMIN
            judge.save()
        now = timezone.now()
        candidate.adopted_at = now
        candidate.adopted_by = actor
        candidate.save(update_fields=["adopted_at", "adopted_by", "updated_at"])
        AgreementResult.objects.filter(candidate=candidate).update(effective_at=now)
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
        locks_evaluate(configs=[(candidate.judge_name, candidate.config_version)])
    return candidate
