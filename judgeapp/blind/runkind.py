"""Blind comparison (seed blind-comparator.md): a multi-stage run over already-checked, blinded inputs.

- stage 0, one unit (purpose "plan"): the judge derives one task-specific rubric from the task and the
  expectations alone (it does not see the outputs yet, so the rubric favours no version);
- stage 1, one unit per (version, run), in parallel: the judge scores the run on that rubric (1-5 per
  criterion), checks every expectation and says whether the run completed the task;
- finalize, in plain Python (judgeapp.blind.core.comparator): scaling, consistency, pairwise results and the
  ranking with ties; comparison.json is validated against its schema and written atomically.

Every prompt holds the blinded label, `run-N` and the run's own relative paths; the mapping stays in
BlindVersion.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from judgeapp.blind.core.comparator import ComparisonImpossible, RunScore, VersionEvidence, build_comparison, validate_comparison
from judgeapp.blind.core.inputs import VersionFile, VersionRun
from judgeapp.blind.core.replies import RUBRIC_SPEC, judged_texts, render_expectations, render_rubric, render_run, score_spec
from judgeapp.judging.accounting import counts_of, counts_reason
from judgeapp.judging.atomic import json_text, write_text_atomic
from judgeapp.judging.outcomes import outcome
from judgeapp.judging.prompts import load_prompt, user_message
from judgeapp.judging.runkind import RunFailed, RunHandler, UnitResult, UnitSpec, register
from judgeapp.models import BlindRunOutput, Purpose, RunKind, RunStatus, UnitStatus

RUBRIC_KEY = "rubric"
SCRIPTED_LIMITATION = (
    "Scored by the repo's scripted demo judge server (a text heuristic), not a language model: "
    "configure a real judge before relying on this comparison."
)


def score_key(label: str, position: int) -> str:
    return f"score/{label}/run-{position}"


def rubric_of(run) -> dict:
    """The judge's rubric for this run (stage 0's reply); RunFailed when it gave none."""
    unit = run.judgments.filter(key=RUBRIC_KEY).first()
    if unit is None or unit.status != UnitStatus.DONE or not unit.parsed:
        reason = (unit.parse_error or unit.error) if unit else "no rubric unit"
        raise RunFailed(f"the judge could not derive the rubric: {reason}")
    return unit.parsed


def version_run(output: BlindRunOutput) -> VersionRun:
    return VersionRun(real_name="", files=[VersionFile(f["path"], f["text"], f["size"]) for f in output.files])


@register
class BlindHandler(RunHandler):
    kind = RunKind.BLIND
    page_template = "judgeapp/blind/run.html"
    page_reads: ClassVar[dict[str, str]] = {"run": "judgeapp.blind.selectors.page_context_for_run"}
    outcomes = ("winner", "inconclusive")

    def outcome(self, run):
        comparison = (run.report or {}).get("comparison") or {}
        if comparison.get("winner"):
            return outcome("winner", f"blind winner {comparison['winner']}", "ok",
                           "ranking " + ", ".join(comparison.get("ranking") or []))
        return outcome("inconclusive", "no blind winner", "warn", "the evidence gives no order at the top")

    def verdicts(self, run):
        """A blind comparison ranks versions; people do not label it item by item, so calibration has no
        verdict to compare (label_kind is None)."""
        return []

    def plan(self, run, stage):
        if stage == 0:
            return [UnitSpec(key=RUBRIC_KEY, purpose=Purpose.PLAN, judge_id=run.judge_id)]
        if stage == 1:
            rubric_of(run)
            outputs = BlindRunOutput.objects.filter(version__comparison__run=run).select_related("version")
            return [
                UnitSpec(
                    key=score_key(o.version.label, o.position),
                    judge_id=run.judge_id,
                    payload={"label": o.version.label, "run": o.position},
                )
                for o in outputs.order_by("version__label", "position")
            ]
        return None

    def execute(self, unit):
        from judgeapp.judging.endpoints import client_for, max_tokens_for

        comparison = unit.run.blind_comparison
        expectations = comparison.expectations
        if unit.purpose == Purpose.PLAN:
            text = load_prompt("blind_rubric").render(task=comparison.eval_prompt, expectations=render_expectations(expectations))
            return UnitResult.from_outcome(client_for(unit.judge).judge(
                user_message(text), RUBRIC_SPEC, judged=(comparison.eval_prompt, *expectations),
                max_tokens=max_tokens_for(unit.judge, "blind"),
            ))
        rubric = rubric_of(unit.run)
        label, position = unit.payload["label"], unit.payload["run"]
        output = BlindRunOutput.objects.get(version__comparison=comparison, version__label=label, position=position)
        runs_of_version = BlindRunOutput.objects.filter(version=output.version_id).count()
        run = version_run(output)
        text = load_prompt("blind_score").render(
            task=comparison.eval_prompt,
            rubric=render_rubric(rubric["criteria"]),
            expectations=render_expectations(expectations),
            label=label,
            run=f"{output.blinded_name} of {runs_of_version}",
            output=render_run(run),
        )
        spec = score_spec([c["name"] for c in rubric["criteria"]], len(expectations))
        return UnitResult.from_outcome(client_for(unit.judge).judge(
            user_message(text), spec, judged=(comparison.eval_prompt, *expectations, *judged_texts(run)),
            max_tokens=max_tokens_for(unit.judge, "blind"),
        ))

    def finalize(self, run):
        comparison_row = run.blind_comparison
        rubric = rubric_of(run)
        criteria = [c["name"] for c in rubric["criteria"]]
        units = {j.key: j for j in run.judgments.filter(purpose=Purpose.JUDGE)}
        # A comparison stopped at its budget: the runs whose scoring the cap cancelled were not judged, and are
        # left out of each version's consistency (not counted as failed runs); no comparison.json is written.
        stopped = bool(run.stopped)
        not_judged = 0
        evidence = []
        per_run: dict[str, list[dict]] = {}
        for version in comparison_row.versions.order_by("label").prefetch_related("runs"):
            runs = []
            for output in version.runs.all():
                unit = units.get(score_key(version.label, output.position))
                if stopped and (unit is None or unit.status == UnitStatus.CANCELLED):
                    not_judged += 1
                    per_run.setdefault(version.label, []).append(_run_entry(output, unit, None, None, budget=True))
                    continue
                score, parsed = _run_score(output, unit, criteria)
                runs.append(score)
                per_run.setdefault(version.label, []).append(_run_entry(output, unit, score, parsed))
            binary = sum(1 for o in version.runs.all() for f in o.files if f["text"] is None)
            evidence.append(VersionEvidence(version.label, runs, stray_files=version.stray_files, binary_files=binary))
        base = {
            "run_id": run.run_id,
            "kind": run.kind,
            "rubric_definition": rubric["criteria"],
            "task_analysis": rubric.get("task_analysis", ""),
            "runs": per_run,
            "versions": run.versions,
            "judge": {
                "model": run.judge.model if run.judge else None,
                "family": run.judge.effective_family if run.judge else None,
                "temperature": 0.0,
            },
            # Every judge call the run made, the derived rubric's (stage 0) included, as a failed run's report counts.
            "counts": counts_of(u for u in run.judgments.filter(purpose__in=[Purpose.PLAN, Purpose.JUDGE])
                                if not (stopped and u.status == UnitStatus.CANCELLED)),
        }
        if stopped:
            base["not_judged"] = not_judged
        reason = counts_reason(base["counts"])
        if reason:
            base["warnings"] = [f"{reason}; their runs count as failed in each version's consistency"]
        try:
            result = build_comparison(
                criteria=criteria,
                versions=evidence,
                expectations=list(comparison_row.expectations),
                extra_limitations=[SCRIPTED_LIMITATION] if run.uses_scripted_judge else [],
            )
        except ComparisonImpossible as exc:
            return RunStatus.INVALID, {**base, "comparison": None, "problem": str(exc)}
        validate_comparison(result.comparison)
        if stopped:
            # No winner is named from the runs scored before the cap: the comparison would leave some runs out.
            return RunStatus.INVALID, {**base, "comparison": None, "written": [],
                                       "problem": f"the run stopped at its budget: {not_judged} runs not scored"}
        written = [str(comparison_write(path=Path(run.run_dir) / "comparison.json", comparison=result.comparison))]
        output_path = run.options.get("output_path")
        if output_path:
            written.append(str(comparison_write(path=output_path, comparison=result.comparison)))
        report = {
            **base,
            "comparison": result.comparison,
            "pairwise": [p.as_dict() for p in result.pairwise],
            "consistency": {label: _consistency_entry(summary) for label, summary in result.summaries.items()},
            "written": written,
        }
        return RunStatus.DONE, report


def _consistency_entry(summary) -> dict:
    """A version's run-to-run consistency as the report gives it, and its score before the penalty."""
    return {
        "level": summary.consistency.level,
        "penalty": summary.consistency.penalty,
        "spread": summary.consistency.spread,
        "failed_runs": summary.consistency.failed_runs,
        "runs": summary.consistency.runs,
        "combined_before_penalty": round(summary.combined, 2),
        "run_overalls": summary.run_overalls,
    }


def _run_score(output, unit, criteria: list[str]) -> tuple[RunScore, dict | None]:
    """A blinded run's score from its judge unit (its reply read), or a failed one saying why."""
    parsed = unit.parsed if unit is not None and unit.status == UnitStatus.DONE else None
    if not parsed:
        why = (unit.parse_error or unit.error or unit.status) if unit is not None else "not judged"
        return RunScore(run=output.blinded_name, scores=None, error=f"judge: {why}"[:300]), None
    score = RunScore(
        run=output.blinded_name,
        scores={c: parsed["scores"][c]["score"] for c in criteria},
        completed=parsed["completed"],
        expectations=[e["passed"] for e in parsed["expectations"]],
        evidence=[e["evidence"] for e in parsed["expectations"]],
        strengths=parsed["strengths"],
        weaknesses=parsed["weaknesses"],
    )
    return score, parsed


def _run_entry(output, unit, score: RunScore | None, parsed: dict | None, *, budget: bool = False) -> dict:
    """A blinded run as the report's `runs` lists it; `budget`: not judged, the run stopped at its budget."""
    entry = {"run": output.blinded_name, "unit": unit.uuid.hex if unit is not None else None}
    if budget:
        return {**entry, "scored": False, "completed": None, "overall": None, "scores": None, "expectations": None,
                "error": "not judged: the run stopped at its budget"}
    return {
        **entry,
        "scored": score.scored,
        "completed": score.completed if score.scored else None,
        "overall": round(score.overall, 2) if score.scored else None,
        "scores": parsed["scores"] if parsed else None,
        "expectations": parsed["expectations"] if parsed else None,
        "error": score.error,
    }


def comparison_write(*, path: str | Path, comparison: dict) -> Path:
    """comparison.json, written whole or not at all (temp file + os.replace)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(target, json_text(comparison))
