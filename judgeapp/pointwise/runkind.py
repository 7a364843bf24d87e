"""Pointwise: one judge call per (case, criterion), after the system under test has answered each case
(when the outputs do not come with the test set)."""

from judgeapp.judging.files import CriterionSpec, render_criterion
from judgeapp.judging.parsing import score_spec
from judgeapp.pointwise.core import ScoredItem, summarize
from judgeapp.judging.prompts import user_message
from judgeapp.models import Output, Purpose, RunKind, RunStatus, UnitStatus

from judgeapp.judging.runkind import RunHandler, UnitResult, UnitSpec, Verdict, register
from judgeapp.judging.replies import generate_output, generated_output_record, judging_stage, run_prompt, single_replies


def criterion_spec(criterion) -> CriterionSpec:
    return CriterionSpec(criterion.name, criterion.description, criterion.scale, criterion.examples)


@register
class PointwiseHandler(RunHandler):
    kind = RunKind.POINTWISE
    page_template = "judgeapp/pointwise/run.html"
    label_kind = "score"

    def verdicts(self, run):
        return [
            Verdict(case_id=j.case.case_id, criterion=j.criterion.name, judge=j.judge.name, value=j.parsed["score"])
            for j in run.judgments.filter(purpose=Purpose.JUDGE, status=UnitStatus.DONE).select_related("case", "criterion", "judge")
        ]

    def plan(self, run, stage):
        cases = list(run.testset.cases.all())
        generation, outputs = single_replies(run, stage, cases)
        if stage != judging_stage(run):
            return generation  # the system's generation units at stage 0; None once judging is done
        # Each unit carries the reply it judges: the judgment row records exactly what the judge was shown,
        # and executing it needs no query for the output.
        criteria = list(run.rubric.criteria.all())
        return [
            UnitSpec(
                key=f"{c.case_id}/{cr.name}",
                case_id=c.pk,
                criterion_id=cr.pk,
                judge_id=run.judge_id,
                payload={"output": outputs[c.pk]},
            )
            for c in cases
            if c.pk in outputs
            for cr in criteria
        ]

    def execute(self, unit):
        from judgeapp.judging.judges import client_for

        if unit.purpose == Purpose.GENERATE:
            return generate_output(unit)
        output = unit.payload.get("output")
        if output is None:  # a unit planned before outputs travelled with it
            output = Output.objects.get(run_id=unit.run_id, case_id=unit.case_id, slot="").text
        text = run_prompt(unit.run, "pointwise").render(
            rubric=render_criterion(criterion_spec(unit.criterion)), input=unit.case.input, output=output
        )
        low, high = unit.criterion.scale_bounds
        outcome = client_for(unit.judge).judge(user_message(text), score_spec(low, high))
        return UnitResult.from_outcome(outcome)

    def on_unit_done(self, unit, result):
        generated_output_record(unit, result)

    def finalize(self, run):
        from judgeapp.releases.selectors import gate_evaluate
        from judgeapp.pointwise.services import report_context

        criteria = list(run.rubric.criteria.all())
        # Only the fields the report reads (not each unit's messages and raw reply): this runs as the last
        # unit's tail, so its time is the run's.
        units = run.judgments.filter(purpose=Purpose.JUDGE).values_list(
            "case__case_id", "criterion__name", "status", "parsed", "parse_error", "error", "uuid"
        )
        items = [
            ScoredItem(
                case_id=case_id,
                criterion=criterion,
                score=(parsed or {}).get("score") if status == UnitStatus.DONE else None,
                reasoning=(parsed or {}).get("reasoning", ""),
                parse_error=parse_error,
                error=error,
                ref=str(uuid),
            )
            for case_id, criterion, status, parsed, parse_error, error, uuid in units
        ]
        # A case the system under test gave no output for was not judged; it counts as unjudged, so that a
        # system failing on its hardest cases cannot raise its own mean.
        judged_cases = {i.case_id for i in items}
        items += [
            ScoredItem(case_id=case_id, criterion=c.name, score=None, error="the system under test gave no output")
            for case_id in run.testset.cases.exclude(case_id__in=judged_cases).values_list("case_id", flat=True)
            for c in criteria
        ]
        bounds = [c.scale_bounds for c in criteria] or [(1, 5)]
        summary = summarize(items, scale=(min(b[0] for b in bounds), max(b[1] for b in bounds)))
        _add_excerpts(run, summary["lowest"])
        status = RunStatus.INVALID if summary["invalid"] else RunStatus.DONE
        report = {"run_id": run.run_id, "kind": run.kind, **summary, **report_context(run=run)}
        report["gate"] = gate_evaluate(run=run, report=report, status=status)
        return status, report


def _excerpt(text: str | None, limit: int = 300) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _add_excerpts(run, lowest: list[dict]) -> None:
    """The customer message and the reply beside each of the lowest-scoring cases, so the report reads alone."""
    outputs = Output.objects.filter(run=run, slot="", case__case_id__in={item["case_id"] for item in lowest})
    texts = {o.case.case_id: (o.case.input, o.text) for o in outputs.select_related("case")}
    for item in lowest:
        message, reply = texts.get(item["case_id"], ("", ""))
        item["input"], item["output"] = _excerpt(message), _excerpt(reply)
