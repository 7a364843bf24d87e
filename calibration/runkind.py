"""Candidate runs: a candidate configuration of a judge scores exactly the labelled items of a sample.

The unit is one labelled item (a case and one rubric criterion); the candidate sees what the judge saw —
the rubric criterion, the customer message and the reply — through the seed's pointwise prompt (or the
candidate's own prompt text), and nothing of the people's labels, the sample, or the judge's verdict. The
figures are measured against the sample's labels when the run finishes and again whenever they change
(`candidate_results_store`, called by the agreement task).
"""

from __future__ import annotations

from collections import defaultdict

from calibration.core import handling as handling_rules
from calibration.core.agreement import inter_annotator
from calibration.core.alt_test import judge_beside_people
from calibration.core.labels import label_value
from calibration.models import Adjudication, AgreementResult, Assignment, AssignmentState, CalibrationPolicy, Candidate
from judgeapp.judging.files import render_criterion
from judgeapp.judging.parsing import score_spec
from judgeapp.judging.prompts import user_message
from judgeapp.judging.replies import criterion_spec, run_prompt
from judgeapp.judging.runkind import RunHandler, UnitResult, UnitSpec, Verdict, register, score_verdict
from judgeapp.judging.selectors import noise_for_run
from judgeapp.judging.trials import MEAN, judge_trials
from judgeapp.models import Judge, Output, Purpose, RunKind, RunStatus, UnitStatus

DEFAULT_RESAMPLES = 1000


def candidate_endpoint(judge: Judge, candidate: dict) -> Judge:
    """The judge as the candidate configures it (an unsaved row: nothing is stored until it is adopted).
    Same server, key and limits, so the candidate shares the judge's concurrency slots."""
    model = candidate["model"]
    return Judge(
        name=judge.name,
        model=model,
        family=judge.family if model == judge.model else "",
        base_url=judge.base_url,
        api_key_env=judge.api_key_env,
        max_concurrency=judge.max_concurrency,
        structured_output=candidate["structured_output"],
        timeout_seconds=judge.timeout_seconds,
        source=judge.source,
        scripted_demo=judge.scripted_demo,
    )


@register
class CandidateHandler(RunHandler):
    kind = RunKind.CANDIDATE
    page_template = "calibration/candidate_run.html"
    label_kind = None  # its items are labelled already: a candidate run is not sampled again

    def plan(self, run, stage):
        if stage > 0:
            return None
        config = run.config["candidate"]
        criteria = {c.name: c for c in run.rubric.criteria.all()}
        outputs = dict(Output.objects.filter(run_id=config["source_run"], slot="").values_list("case_id", "text"))
        # Only the reply travels with the unit: the payload is what the candidate is shown, and no label is in it.
        return [
            UnitSpec(
                key=f"{item['case_key']}/{item['criterion']}",
                case_id=item["case"],
                criterion_id=criteria[item["criterion"]].pk,
                judge_id=run.judge_id,
                payload={"output": outputs.get(item["case"], "")},
            )
            for item in config["items"]
            if item["criterion"] in criteria
        ]

    def execute(self, unit):
        from judgeapp.judging.endpoints import client_for

        endpoint = candidate_endpoint(unit.judge, unit.run.config["candidate"])
        output = unit.payload.get("output", "")
        text = run_prompt(unit.run, "pointwise").render(
            rubric=render_criterion(criterion_spec(unit.criterion)), input=unit.case.input, output=output
        )
        low, high = unit.criterion.scale_bounds
        return UnitResult.from_outcome(
            judge_trials(
                client_for(endpoint), user_message(text), score_spec(low, high), judged=(unit.case.input, output),
                trials=unit.run.options.get("trials") or 1, field="score", rule=MEAN,
            )
        )

    def verdicts(self, run):
        name = run.config["candidate"]["judge"]
        done = run.judgments.filter(purpose=Purpose.JUDGE, status=UnitStatus.DONE)
        return [
            Verdict(case_id=case_id, criterion=criterion, judge=name, value=score_verdict(parsed["score"]))
            for case_id, criterion, parsed in done.values_list(
                "case__case_id", "criterion__name", "parsed"
            ).iterator(chunk_size=2000)
        ]

    def finalize(self, run):
        from django.conf import settings

        units = list(run.judgments.filter(purpose=Purpose.JUDGE).values_list("status", "parse_error", "error"))
        judged = sum(1 for status, _, _ in units if status == UnitStatus.DONE)
        parse_failures = sum(
            1 for status, parse_error, error in units if status == UnitStatus.FAILED and parse_error and not error
        )
        candidate = Candidate.objects.select_related("sample", "run").filter(run=run).first()
        pooled = None
        if candidate is not None:
            results = candidate_results_store(
                candidate=candidate, resamples=getattr(settings, "CALIBRATION_BOOTSTRAP_RESAMPLES", DEFAULT_RESAMPLES)
            )
            pooled = next((r for r in results if r.criterion == ""), None)
        report = {
            "run_id": run.run_id,
            "kind": run.kind,
            "candidate": str(candidate.uuid) if candidate else None,
            "sample": run.config["candidate"]["sample"],
            "judge": run.config["candidate"]["judge"],
            "units": len(units),
            "judged": judged,
            "parse_failures": parse_failures,
            "parse_failure_rate": parse_failures / len(units) if units else None,
            "judge_errors": sum(1 for status, _, error in units if status == UnitStatus.FAILED and error),
            "n_items": pooled.n_items if pooled else 0,
            "kappa": pooled.kappa if pooled else None,
            "agreement": pooled.agreement if pooled else None,
            "versions": {k: run.versions.get(k) for k in ("testset", "rubric", "prompt", "judge")},
            "noise": noise_for_run(run=run, rule=MEAN),
        }
        return (RunStatus.DONE if judged else RunStatus.INVALID), report


def sample_labels(sample) -> dict[tuple[str, str], dict[str, int | str]]:
    """{(case id, criterion): {annotator: label}} of a sample's labelled items."""
    labels: dict = defaultdict(dict)
    rows = (
        Assignment.objects.filter(item__sample=sample, state=AssignmentState.LABELLED)
        .values_list("item__case_key", "item__criterion", "annotator__username", "value")
        .order_by("item__position", "annotator__username")
    )
    for case_key, criterion, annotator, value in rows:
        labels[(case_key, criterion)][annotator] = label_value(value, label_kind=sample.label_kind)
    return dict(labels)


def sample_resolved(sample) -> dict[tuple[str, str], int | str]:
    """{(case id, criterion): a lead's resolved label} of a sample's resolved items."""
    rows = Adjudication.objects.filter(item__sample=sample).values_list("item__case_key", "item__criterion", "value")
    return {(case_key, criterion): label_value(value, label_kind=sample.label_kind) for case_key, criterion, value in rows}


def candidate_results_store(*, candidate: Candidate, resamples: int = DEFAULT_RESAMPLES) -> list[AgreementResult]:
    """Measure a finished candidate run against its sample's labels now; one result per criterion and
    every criterion pooled (""), replacing the previous ones."""
    sample = candidate.sample
    run = candidate.run
    labels = sample_labels(sample)
    resolved = sample_resolved(sample)
    scales = {c.name: c.scale_bounds for c in run.rubric.criteria.all()} if run.rubric_id else {}
    verdicts = {
        (case_key, criterion): (parsed or {}).get("score")
        for case_key, criterion, parsed in run.judgments.filter(purpose=Purpose.JUDGE, status=UnitStatus.DONE).values_list(
            "case__case_id", "criterion__name", "parsed"
        )
    }
    # A labelled item the candidate gave no usable verdict on counts as a disagreement, as the judge's own do
    # (calibration.services.agreement): a candidate cannot reach the level by not answering the hard items.
    unusable = {(case_key, criterion) for case_key, criterion, _judge in CandidateHandler().unusable(run)}
    # The policy in force, read here (this room is below the selectors): the latest a lead set, or the default.
    policy = CalibrationPolicy.objects.first() or CalibrationPolicy()
    declared = handling_rules.effective(policy.declared_handling, label_kind=sample.label_kind)
    criteria = sorted({criterion for (_, criterion) in labels if criterion})
    keys = sorted(labels)
    index = {key: i for i, key in enumerate(keys)}
    stored = []
    for criterion in ([""] + criteria) if criteria else [""]:
        in_group = {key: by for key, by in labels.items() if not criterion or key[1] == criterion}
        judged = _group_verdicts(in_group, verdicts, unusable, index)
        measured = _group_measured(
            sample=sample, in_group=in_group, judged=judged, index=index, keys=keys, scales=scales,
            resolved=resolved, declared=declared, resamples=resamples,
        )
        if measured is None:
            continue
        figures, human_only = measured
        stored.append(_candidate_result_store(candidate=candidate, criterion=criterion, figures=figures, human_only=human_only))
    AgreementResult.objects.filter(candidate=candidate).exclude(pk__in=[r.pk for r in stored]).delete()
    return stored


def _group_verdicts(in_group: dict, verdicts: dict, unusable: set, index: dict) -> dict:
    """{item index: the candidate's score, or None where it gave no usable one} for a group's labelled items."""
    judged = {}
    for key in in_group:
        verdict = verdicts.get(key)
        if not isinstance(verdict, int):
            if key not in unusable:
                continue  # not planned for the candidate (a criterion its rubric lacks)
            verdict = None
        judged[index[key]] = verdict
    return judged


def _group_measured(
    *, sample, in_group: dict, judged: dict, index: dict, keys: list, scales: dict, resolved: dict,
    declared: handling_rules.Handling, resamples: int,
) -> tuple[dict, dict] | None:
    """(the candidate's figures against one group's labels, the people's agreement among themselves), or None
    when the group has nothing to measure. The figures' details name items by (case id, criterion)."""
    bounds = [scales.get(key[1], (1, 5)) for key in in_group] or [(1, 5)]
    scale = (min(b[0] for b in bounds), max(b[1] for b in bounds))
    seed = sample.seed or 0
    people = {index[key]: by for key, by in in_group.items()}  # {item index: {annotator: label}}
    figures = handling_rules.measured(
        people, judged, declared=declared, label_kind=sample.label_kind, scale=scale,
        scales={index[key]: scales.get(key[1], (1, 5)) for key in in_group}, n_resamples=resamples, seed=seed,
        resolved={index[key]: value for key, value in resolved.items() if key in in_group},
    )
    if figures is None:
        return None
    human_only = inter_annotator(people, label_kind=sample.label_kind, scale=scale, n_resamples=resamples, seed=seed)
    details = figures["details"]
    details["disagreements"] = [{**row, "item": list(keys[row["item"]])} for row in details["disagreements"]]
    details["unreadable"] = [list(keys[i]) for i in details["unreadable"]]
    details.update(
        judge_beside_people(people, handling_rules.answered(judged, declared), figures["pairs"], label_kind=sample.label_kind)
    )
    return figures, human_only


def _candidate_result_store(*, candidate: Candidate, criterion: str, figures: dict, human_only: dict) -> AgreementResult:
    """The candidate's result on one criterion ("" pooled), created or replaced."""
    sample = candidate.sample
    run = candidate.run
    result, _ = AgreementResult.objects.update_or_create(
        candidate=candidate,
        criterion=criterion,
        defaults={
            "sample": sample,
            "judge_name": candidate.judge_name,
            "judge_version": candidate.config_version,
            "prompt_version": run.versions.get("prompt") or "",
            "rubric_version": run.versions.get("rubric") or "",
            "label_kind": sample.label_kind,
            "scripted_demo": bool(run.config["candidate"].get("scripted_demo")),
            "n_items": figures["n_items"],
            "n_unreadable": figures["n_unreadable"],
            "n_labels": figures["n_labels"],
            "kappa": figures["kappa"],
            "agreement": figures["agreement"],
            "metrics": figures["metrics"],
            "per_annotator": figures["per_annotator"],
            "inter_annotator": human_only,
            "details": figures["details"],
            "handling": figures["handling"],
            "sensitivity": figures["sensitivity"],
            "labels_version": sample.labels_version,
            "effective_at": candidate.adopted_at or sample.created_at,
        },
    )
    return result
