"""The Jury: one unit per (case, juror), "<case_id>/<judge name>", all of a stage at once so the jurors of
a case are called in parallel; the report pools them (judgeapp.jury.core). When the system under test
generates the outputs, a first stage does that."""

from __future__ import annotations

from collections import defaultdict

from judgeapp.judging.accounting import counts_of, counts_reason
from judgeapp.judging.library import prompt_entry
from judgeapp.judging.noise import TIE_PASS_FAIL
from judgeapp.judging.outcomes import outcome, share_words
from judgeapp.judging.parsing import JUROR_SPEC
from judgeapp.judging.prompts import user_message
from judgeapp.judging.replies import (
    flags_of,
    generate_output,
    generated_output_record,
    generates,
    generation_units,
    judged_flags,
    judging_stage,
    outputs_said,
    replies_to_judge,
    rubric_text,
    run_prompt,
)
from judgeapp.judging.runkind import UNIT_REPORT_FIELDS, RunHandler, UnitResult, UnitSpec, Verdict, register
from judgeapp.judging.selectors import noise_for_run
from judgeapp.judging.trials import judge_trials
from judgeapp.jury.core import UNJUDGED, PooledCase, pool_replies, render_juror_prompt, summarize
from judgeapp.models import Judge, Judgment, Output, Purpose, RunKind, RunStatus, UnitStatus

POOLED_JUDGE = "jury"


def panel_of(run) -> list[Judge]:
    """The run's jurors, in the order they were given."""
    ids = run.options.get("judge_ids", [])
    by_id = Judge.objects.in_bulk(ids)
    return [by_id[i] for i in ids if i in by_id]


def usable_reply(unit: Judgment | None) -> dict | None:
    """A juror's parsed reply ({"reasoning", "verdict"}), or None when it gave no usable answer."""
    if unit is None or unit.status != UnitStatus.DONE or not unit.parsed:
        return None
    return unit.parsed


def pooled_cases(run, panel: list[Judge] | None = None) -> list[PooledCase]:
    """Every case of the run with its jurors' votes and the pooled verdict."""
    panel = [j.name for j in (panel_of(run) if panel is None else panel)]
    units: dict[int, dict[str, Judgment]] = defaultdict(dict)
    judged = run.judgments.filter(purpose=Purpose.JUDGE).select_related("judge").only(*UNIT_REPORT_FIELDS, "judge__name")
    for unit in judged.order_by("stage", "id"):
        units[unit.case_id][unit.judge.name] = unit
    with_output = set(Output.objects.filter(run=run, slot="").values_list("case_id", flat=True))
    cases = []
    for case_pk, case_id in run.testset.cases.values_list("id", "case_id"):
        if case_pk not in with_output:
            continue
        replies = {name: usable_reply(units[case_pk].get(name)) for name in panel}
        cases.append(pool_replies(case_id, replies))
    return cases


@register
class JuryHandler(RunHandler):
    kind = RunKind.JURY
    leaves_out_failed_judges = True
    page_template = "judgeapp/jury/run.html"
    outcomes = ("result",)
    label_kind = "pass_fail"

    def outcome(self, run):
        report = run.report or {}
        passed, total = report.get("passed", 0), report.get("total", 0)
        unjudged = f", {report['unjudged']} unjudged" if report.get("unjudged") else ""
        return outcome(
            "result", f"{passed} of {total} cases passed", "neutral", f"pass rate {share_words(passed, total)}{unjudged}"
        )

    def verdicts(self, run):
        """Each juror's pass/fail per case, and the pooled verdict under the judge name "jury"
        (unjudged cases left out)."""
        verdicts = []
        for case in pooled_cases(run):
            verdicts += [
                Verdict(case_id=case.case_id, criterion="", judge=name, value=vote)
                for name, vote in case.votes.items()
                if vote is not None
            ]
            if case.pooled in ("pass", "fail"):
                verdicts.append(Verdict(case_id=case.case_id, criterion="", judge=POOLED_JUDGE, value=case.pooled))
        return verdicts

    def unusable(self, run):
        """Each juror's failed units, and the pooled judge's unjudged cases (too few jurors answered, or
        their vote tied): the pool gave no verdict there."""
        return super().unusable(run) + [(case.case_id, "", POOLED_JUDGE) for case in pooled_cases(run) if case.pooled == UNJUDGED]

    def plan(self, run, stage):
        if generates(run) and stage == 0:
            return generation_units(run)  # the system answers each case first
        if stage != judging_stage(run):
            return None
        # Case by case, every juror of a case side by side: the pool of a case fills up together.
        panel = panel_of(run)
        return (
            UnitSpec(key=f"{case_id}/{juror.name}", case_id=pk, judge_id=juror.pk)
            for pk, case_id, _reply in replies_to_judge(run)
            for juror in panel
        )

    def execute(self, unit):
        from judgeapp.judging.endpoints import client_for, max_tokens_for

        if unit.purpose == Purpose.GENERATE:
            return generate_output(unit)
        output = Output.objects.get(run_id=unit.run_id, case_id=unit.case_id, slot="")
        # The identical prompt and rubric for every juror.
        text = render_juror_prompt(
            rubric=rubric_text(unit.run.rubric), input=unit.case.input, output=output.text, prompt=run_prompt(unit.run, "juror")
        )
        outcome = judge_trials(
            client_for(unit.judge), user_message(text), JUROR_SPEC, judged=(unit.case.input, output.text),
            max_tokens=max_tokens_for(unit.judge, "jury"), trials=unit.run.options.get("trials") or 1, field="verdict",
            tie=TIE_PASS_FAIL,
        )
        return UnitResult.from_outcome(
            outcome, prompt=unit.run.prompt, flags=judged_flags(input=unit.case.input, output=output.text)
        )

    def on_unit_done(self, unit, result):
        generated_output_record(unit, result)

    def finalize(self, run):
        from calibration.selectors.agreement import agreement_reads_for_run

        people = agreement_reads_for_run(run=run)  # the statuses and the corrected rate from one agreement snapshot

        panel = panel_of(run)
        names = [j.name for j in panel]
        cases = pooled_cases(run, panel)
        summary = summarize(cases, names)
        options = run.options
        warnings = list(options.get("warnings", []))
        failures = defaultdict(list)
        failed = run.judgments.filter(purpose=Purpose.JUDGE, status=UnitStatus.FAILED).select_related("judge", "case")
        for unit in failed.only(*UNIT_REPORT_FIELDS, "judge__name", "case__case_id").order_by("stage", "id"):
            failures[unit.judge.name].append(
                {"case_id": unit.case.case_id, "error": unit.error or f"no valid verdict after one retry: {unit.parse_error}"}
            )
        for name, failed in failures.items():
            warnings.append(f"juror {name} gave no usable answer on {len(failed)} case(s) and was left out of their pool")
        if summary["unjudged"]:
            warnings.append(f"{summary['unjudged']} case(s) are unjudged (fewer than three answers, or a tied vote)")
        for flagged in summary["review"]:
            warnings.append(
                f"juror {flagged['judge']} agrees with the pool on {flagged['agreement']:.0%} of cases, far below the "
                f"others ({flagged['others_mean']:.0%}): review it"
            )
        missing = run.testset.case_count - len(cases)
        if missing:
            warnings.append(f"{missing} case(s) have no output to judge")
        counts = counts_of(run.judgments.filter(purpose=Purpose.JUDGE).only(*UNIT_REPORT_FIELDS))
        # A juror without a usable answer is left out of its case's pool (the seed's rule), so unusable votes
        # do not invalidate the jury; past 5% the report says so.
        reason = counts_reason(counts)
        if reason:
            warnings.append(f"{reason}: those votes were left out of their pools")
        invalid_reasons = ["no case was judged"] if cases and not summary["judged"] else []
        outputs, outputs_source = outputs_said(run)
        report = {
            "run_id": run.run_id,
            "kind": run.kind,
            **summary,
            "judge_failures": dict(failures),
            "counts": counts,
            "invalid": bool(invalid_reasons),
            "invalid_reasons": invalid_reasons,
            "panel": [
                {"name": j.name, "model": j.model, "family": j.effective_family, "version": j.version, "temperature": 0.0}
                for j in panel
            ],
            "system": options.get("system_family_check"),
            "outputs": outputs,
            "outputs_source": outputs_source,
            "versions": {
                **{k: run.versions.get(k) for k in ("testset", "rubric", "prompt")},
                **({"outputs": run.versions["outputs"]} if run.versions.get("outputs") else {}),
                "judges": {j.name: j.version for j in panel},
            },
            "prompt": prompt_entry(run.prompt),
            "warnings": warnings,
            "calibration": people["calibration"],
            "noise": noise_for_run(run=run, tie=TIE_PASS_FAIL, positive="pass"),
            "corrected_pass_rate": people["corrected"],  # PPI++ from a labelled sample (CONTRACT §6); null without one
            **flags_of(run),
        }
        return (RunStatus.INVALID if invalid_reasons else RunStatus.DONE), report
