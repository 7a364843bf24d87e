"""Pointwise: one judge call per (case, criterion), after the system under test has answered each case
(when the outputs do not come with the test set)."""

import itertools

from judgeapp.judging.batches import ROWS_AT_ONCE
from judgeapp.judging.files import render_criterion
from judgeapp.judging.library import prompt_entry
from judgeapp.judging.outcomes import mean_words, outcome
from judgeapp.judging.parsing import score_spec
from judgeapp.judging.prompts import user_message
from judgeapp.judging.replies import (
    criterion_spec,
    flags_of,
    generate_output,
    generated_output_record,
    generates,
    generation_units,
    judged_flags,
    judging_stage,
    outputs_said,
    replies_to_judge,
    run_prompt,
)
from judgeapp.judging.runkind import RunHandler, UnitResult, UnitSpec, Verdict, register, score_verdict
from judgeapp.judging.selectors import noise_for_run
from judgeapp.judging.trials import MEAN, judge_trials
from judgeapp.models import Output, Purpose, RunKind, RunStatus, UnitStatus
from judgeapp.pointwise.core import ScoredItem, summarize

SCRIPTED_DEMO_WARNING = "judged by the repo's scripted demo server (a text heuristic), not a language model"


@register
class PointwiseHandler(RunHandler):
    kind = RunKind.POINTWISE
    page_template = "judgeapp/pointwise/run.html"
    outcomes = ("passed", "blocked")
    label_kind = "score"
    preload_modules = ("scipy.stats",)  # the report's bootstrap intervals

    def outcome(self, run):
        """The gate as it stands now (it moves with calibration and the leads' decisions): passed or blocked."""
        from judgeapp.releases.selectors import gate_for_run

        gate = gate_for_run(run=run)
        mean = mean_words((run.report or {}).get("mean"))
        if gate["passed"]:
            return outcome("passed", "gate passed", "ok", f"mean {mean}, threshold {gate['threshold']:g}")
        reasons = gate["reasons"]
        detail = reasons[0] if reasons and "mean" in reasons[0] else f"mean {mean}" + (f": {reasons[0]}" if reasons else "")
        return outcome("blocked", "gate blocked", "bad", detail)

    def verdicts(self, run):
        # The names and the score only, a page at a time: a unit's prompt, its reply and its case's input
        # are not read (at 100,000 judgments, gigabytes for a calibration figure).
        done = run.judgments.filter(purpose=Purpose.JUDGE, status=UnitStatus.DONE).order_by("stage", "id")
        return [
            Verdict(case_id=case_id, criterion=criterion, judge=judge, value=score_verdict(parsed["score"]))
            for case_id, criterion, judge, parsed in done.values_list(
                "case__case_id", "criterion__name", "judge__name", "parsed"
            ).iterator(chunk_size=2000)
        ]

    def plan(self, run, stage):
        if generates(run) and stage == 0:
            return generation_units(run)  # the system answers each case first
        if stage == judging_stage(run) + 1:
            return self.baseline_units(run)
        if stage != judging_stage(run):
            return None
        # Each unit carries the reply it judges: the judgment row records exactly what the judge was shown,
        # and executing it needs no query for the output. An iterator: the units are created a batch at a
        # time, never a list of every case's.
        criteria = list(run.rubric.criteria.all())
        return (
            UnitSpec(key=f"{case_id}/{cr.name}", case_id=pk, criterion_id=cr.pk, judge_id=run.judge_id, payload={"output": reply})
            for pk, case_id, reply in replies_to_judge(run)
            for cr in criteria
        )

    def baseline_units(self, run):
        """The baseline stage: when the run's baseline was judged another way (another rubric, prompt or
        judge), its replies to the shared cases are judged again this run's way, so that the gate compares
        like with like (judgeapp/releases/selectors/baseline.py). Empty when there is nothing to judge again."""
        from judgeapp.releases.selectors import baseline_plan_for_run, baseline_replies_for_run

        plan = baseline_plan_for_run(run=run)
        criteria = list(run.rubric.criteria.all())
        return (
            UnitSpec(
                key=f"baseline/{pk}/{cr.pk}", purpose=Purpose.BASELINE, case_id=pk, criterion_id=cr.pk, judge_id=run.judge_id,
                payload={"output": reply, "baseline_run": plan.run.run_id},
            )
            for pk, _case_id, reply in baseline_replies_for_run(run=run, plan=plan)
            for cr in criteria
        )

    def execute(self, unit):
        from judgeapp.judging.endpoints import client_for, max_tokens_for

        if unit.purpose == Purpose.GENERATE:
            return generate_output(unit)
        output = unit.payload.get("output")
        if output is None:  # a unit planned before outputs travelled with it
            output = Output.objects.get(run_id=unit.run_id, case_id=unit.case_id, slot="").text
        text = run_prompt(unit.run, "pointwise").render(
            rubric=render_criterion(criterion_spec(unit.criterion)), input=unit.case.input, output=output
        )
        low, high = unit.criterion.scale_bounds
        outcome = judge_trials(
            client_for(unit.judge), user_message(text), score_spec(low, high), judged=(unit.case.input, output),
            max_tokens=max_tokens_for(unit.judge, "pointwise"), trials=unit.run.options.get("trials") or 1, field="score",
            rule=MEAN,
        )
        return UnitResult.from_outcome(outcome, flags=judged_flags(input=unit.case.input, output=output))

    def on_unit_done(self, unit, result):
        generated_output_record(unit, result)

    def finalize(self, run):
        from judgeapp.releases.selectors import baseline_for_run, gate_for_run

        criteria = list(run.rubric.criteria.all())
        # Only the fields the report reads (not each unit's messages and raw reply): this runs as the last
        # unit's tail, so its time is the run's. Read a batch at a time and summarized in one pass, so
        # the report of 100,000 units holds no row, item or model instance per unit.
        units = run.judgments.filter(purpose=Purpose.JUDGE).order_by("stage", "id").values_list(
            "case__case_id", "criterion__name", "status", "parsed", "parse_error", "error", "truncated", "uuid"
        )
        items = (
            ScoredItem(
                case_id=case_id,
                criterion=criterion,
                score=(parsed or {}).get("score") if status == UnitStatus.DONE else None,
                reasoning=(parsed or {}).get("reasoning", ""),
                parse_error=parse_error,
                error=error,
                truncated=truncated,
                ref=str(uuid),
            )
            for case_id, criterion, status, parsed, parse_error, error, truncated, uuid in units.iterator(chunk_size=ROWS_AT_ONCE)
        )
        # A case the system under test gave no output for was not judged; it counts as unjudged, so that a
        # system failing on its hardest cases cannot raise its own mean.
        judged_cases = run.judgments.filter(purpose=Purpose.JUDGE, case__isnull=False).values("case_id")
        unjudged = (
            ScoredItem(case_id=case_id, criterion=c.name, score=None, error="the system under test gave no output")
            for case_id in run.testset.cases.exclude(pk__in=judged_cases).values_list("case_id", flat=True).iterator(
                chunk_size=ROWS_AT_ONCE
            )
            for c in criteria
        )
        bounds = [c.scale_bounds for c in criteria] or [(1, 5)]
        summary = summarize(itertools.chain(items, unjudged), scale=(min(b[0] for b in bounds), max(b[1] for b in bounds)))
        _add_excerpts(run, summary["lowest"])
        status = RunStatus.INVALID if summary["invalid"] else RunStatus.DONE
        report = {"run_id": run.run_id, "kind": run.kind, **summary, **report_context(run=run)}
        report.update(flags_of(run))
        report["noise"] = noise_for_run(run=run, rule=MEAN)
        if report["noise"] and report["noise"]["interval"]:
            # The trials' spread folded into the mean's interval (judging/noise.py: two_level_interval).
            report["mean_ci95"] = report["noise"]["interval"]
            report["ci_method"] = f"{report['ci_method']}; the overall mean's: {report['noise']['interval_method']}"
        report["baseline"] = baseline_for_run(run=run, mean=summary["mean"])
        report["gate"] = gate_for_run(run=run, report=report, status=status)
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


# --- What the report says beside the scores -------------------------------------------------------------


def report_warnings(*, run) -> list[str]:
    """What a reader must know before trusting the scores: the judge's family against the system's, a
    scripted demo judge, a rubric without an example for every score."""
    warnings: list[str] = []
    judge = run.config.get("judges", {}).get(run.judge.name, {}) if run.judge_id else {}
    system = run.config.get("system")
    if system is None:
        warnings.append(
            "no system under test was named, so the judge's family could not be checked against the system's "
            "(a judge should be of another model family than the system it grades)"
        )
    elif judge.get("family") and judge.get("family") == system.get("family"):
        warnings.append(
            f"the judge {judge.get('model')} is of the same family ({judge['family']}) as the system under test "
            f"{system.get('model')}: a judge may favour its own family's replies; use a judge from another family"
        )
    if judge.get("temperature", 0.0) != 0.0:
        warnings.append(f"the judge ran at temperature {judge['temperature']}, not 0")
    if run.uses_scripted_judge:
        warnings.append(SCRIPTED_DEMO_WARNING)
    warnings += [f"rubric: {w}" for w in run.options.get("rubric_warnings", [])]
    warnings += run.options.get("warnings", [])
    return warnings


def report_context(*, run) -> dict:
    """The report's keys beside the scores: versions, judge, system, warnings, agreement, the judge's
    calibration status, and the human-corrected mean (`corrected`, CONTRACT §6)."""
    judge = run.config.get("judges", {}).get(run.judge.name, {}) if run.judge_id else {}
    system = run.config.get("system")
    versions = {k: run.versions.get(k) for k in ("testset", "rubric", "prompt", "judge")}
    if run.versions.get("outputs"):
        versions["outputs"] = run.versions["outputs"]  # the outputs file judged, when not the test set's
    outputs, outputs_source = outputs_said(run)
    return {
        "versions": versions,
        "judge": {
            "name": judge.get("name"),
            "model": judge.get("model"),
            "family": judge.get("family"),
            "temperature": judge.get("temperature", 0.0),
            "scripted_demo": bool(judge.get("scripted_demo")),
        },
        "system": {"name": system["name"], "model": system["model"], "family": system["family"], "version": system.get("version")}
        if system
        else None,
        "outputs": outputs,
        "outputs_source": outputs_source,
        "testset": {"name": run.testset.name, "cases": run.testset.case_count, "git_commit": run.testset.git_commit}
        if run.testset_id else None,
        "rubric": {"name": run.rubric.name, "git_commit": run.rubric.git_commit} if run.rubric_id else None,
        "prompt": prompt_entry(run.prompt),
        "warnings": report_warnings(run=run),
        **_people(run),
    }


def _people(run) -> dict:
    """The report's keys that stand on people's labels, from one agreement snapshot (`agreement_snapshot`)."""
    from calibration.selectors.agreement import agreement_reads_for_run

    reads = agreement_reads_for_run(run=run)
    return {
        "agreement": reads["agreement"],
        "calibration": reads["calibration"],
        "corrected": reads["corrected"],
        "agreement_snapshot": reads["snapshot"],
    }
