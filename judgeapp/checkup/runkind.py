"""The judge check-up: one unit per (pair, order): "<set>/<n>/ab" shows output_1 as Reply 1, "<set>/<n>/ba"
shows output_2. The report maps the verdicts back, compares them with the human labels set by set
(judgeapp.checkup.core) and says how many judgments cost a call and how many came from the cache."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import ClassVar

from judgeapp.checkup.core import (
    BOOTSTRAP,
    OWN_LABEL_RULE,
    WILSON,
    CheckupCase,
    checkup_set,
    pandalm_gpt35_reference,
    references_of,
    set_figures,
)
from judgeapp.judging.accounting import counts_of, counts_reason
from judgeapp.judging.noise import TIE_PAIRWISE
from judgeapp.judging.pairs import ORDERS, map_back, render_pairwise_prompt, shown_first
from judgeapp.judging.parsing import PAIRWISE_SPEC
from judgeapp.judging.prompts import user_message
from judgeapp.judging.replies import rubric_text, run_prompt
from judgeapp.judging.runkind import RunHandler, UnitResult, UnitSpec, register
from judgeapp.judging.selectors import noise_for_run
from judgeapp.judging.trials import judge_trials
from judgeapp.models import Judgment, Purpose, RunKind, RunStatus, UnitStatus

TRUNCATED = "length"  # the finish_reason of a reply cut at the token limit


def checked_cases(run):
    """The run's pairs in test-set order: the sets (or the sample) chosen at creation."""
    return list(run.testset.cases.filter(case_id__in=run.options.get("case_ids", [])))


def order_of(unit: Judgment) -> str:
    return unit.order or unit.key.rsplit("/", 1)[-1]


def unit_verdict(unit: Judgment | None) -> str | None:
    """A finished order's verdict mapped back to "A" (output_1) | "B" (output_2) | "tie", or None."""
    if unit is None or unit.status != UnitStatus.DONE or not unit.parsed or unit.order not in ORDERS:
        return None
    return map_back(unit.order, unit.parsed["winner"])


def unit_truncated(unit: Judgment) -> bool:
    return unit.truncated or (unit.payload or {}).get("finish_reason") == TRUNCATED


def unit_error(unit: Judgment | None) -> str:
    if unit is None:
        return "not judged"
    if unit.status == UnitStatus.DONE:
        return ""
    if unit.is_parse_failure:
        return f"no valid verdict after one retry: {unit.parse_error}"
    return unit.error or unit.status


def calls_summary(units: list[Judgment]) -> dict:
    """How many judgments cost a call to the judge and how many the response cache answered."""
    cached = sum(1 for u in units if u.cached)
    called = len(units) - cached
    if not units:
        text = "no judgment"
    elif not called:
        text = f"no judge call made: all {len(units)} judgments came from the response cache"
    else:
        text = (
            f"{called} judgments called the judge ({sum(u.attempts for u in units)} HTTP requests), "
            f"{cached} came from the response cache"
        )
    return {
        "judgments": len(units), "called": called, "cached": cached, "http_requests": sum(u.attempts for u in units),
        "summary": text,
    }



def shipped_set_described(name: str, datasets_dir: Path, cases: list[CheckupCase]) -> dict:
    spec = checkup_set(name)
    references = references_of(name)
    if name == "pandalm":
        references += pandalm_gpt35_reference(datasets_dir, cases)
    return {"title": spec.title, "source": spec.source, "label_rule": spec.label_rule, "own": False, "references": references}


def own_set_described(name: str, options: dict) -> dict:
    """A team's own set, named by its file name and content hash; nobody published figures on it."""
    digest = (options.get("datasets", {}).get(name) or {}).get("sha256", "")
    return {
        "title": f"{name} (sha256 {digest[:12]}): the team's own labelled pairs",
        "source": f"uploaded file {name}, sha256 {digest}",
        "label_rule": OWN_LABEL_RULE,
        "own": True,
        "file": name,
        "sha256": digest,
        "references": [],
    }


@register
class CheckupHandler(RunHandler):
    kind = RunKind.CHECKUP
    page_template = "judgeapp/checkup/run.html"
    page_reads: ClassVar[dict[str, str]] = {"judges": "judgeapp.checkup.selectors.checkup_confirms_for_judges"}
    position_evidence = True
    # Compared with the public sets' own human labels, not with labels people give in this app.
    label_kind = None

    def verdicts(self, run):
        return []

    def plan(self, run, stage):
        if stage != 0:
            return None
        return [
            UnitSpec(key=f"{case.case_id}/{order}", case_id=case.pk, judge_id=run.judge_id, order=order)
            for case in checked_cases(run)
            for order in ORDERS
        ]

    def execute(self, unit):
        from judgeapp.judging.endpoints import client_for, max_tokens_for

        replies = {"A": unit.case.extra["output_1"], "B": unit.case.extra["output_2"]}
        first, second = shown_first(unit.order)
        # Only the two outputs go in, as Reply 1 and Reply 2: nothing says which set, label or model.
        text = render_pairwise_prompt(
            rubric=rubric_text(unit.run.rubric), input=unit.case.input, first=replies[first], second=replies[second],
            prompt=run_prompt(unit.run, "pairwise"),
        )
        outcome = judge_trials(
            client_for(unit.judge), user_message(text), PAIRWISE_SPEC, judged=(unit.case.input, replies["A"], replies["B"]),
            max_tokens=max_tokens_for(unit.judge, "checkup"), trials=unit.run.options.get("trials") or 1, field="winner",
            tie=TIE_PAIRWISE,
        )
        return UnitResult.from_outcome(
            outcome, prompt=unit.run.prompt, payload={**(unit.payload or {}), "finish_reason": outcome.finish_reason}
        )

    def finalize(self, run):
        options = run.options
        units = list(run.judgments.filter(purpose=Purpose.JUDGE))
        # A check-up stopped at its budget: the pairs whose orders the cap cancelled were not judged, and are
        # left out of the figures (not counted as misses); each set says how many (`not_judged`).
        unjudged = {unit.case_id for unit in units if unit.status == UnitStatus.CANCELLED} if run.stopped else set()
        units = [unit for unit in units if unit.case_id not in unjudged]
        by_case: dict[int, dict[str, Judgment]] = defaultdict(dict)
        for unit in units:
            by_case[unit.case_id][order_of(unit)] = unit
        cases_by_set: dict[str, list[CheckupCase]] = defaultdict(list)
        not_judged: dict[str, int] = defaultdict(int)
        for case in checked_cases(run):
            if case.pk in unjudged:
                not_judged[case.extra["set"]] += 1
                continue
            cases_by_set[case.extra["set"]].append(_checkup_case(case, by_case.get(case.pk, {})))
        datasets_dir = Path(options.get("datasets_dir", ""))
        sets = {}
        own_sets = set(options.get("own_sets") or ())
        for name in options.get("sets", []):
            cases = cases_by_set.get(name, [])
            described = own_set_described(name, options) if name in own_sets else shipped_set_described(name, datasets_dir, cases)
            sets[name] = {
                **described,
                **options.get("per_set", {}).get(name, {}),
                **set_figures(cases),
                **({"not_judged": not_judged[name]} if run.stopped else {}),
                "references": described["references"],  # last, after the figures
            }

        counts = counts_of(units)
        warnings = list(options.get("warnings", []))
        invalid_reasons = []
        reason = counts_reason(counts)
        if reason:
            invalid_reasons.append(f"{reason}; the figures count them as misses")
        snapshot = (run.config.get("judges") or {}).get(run.judge.name if run.judge else "", {})
        report = {
            "run_id": run.run_id,
            "kind": run.kind,
            "judge": {
                "name": run.judge.name if run.judge else None,
                "model": snapshot.get("model"),
                "family": snapshot.get("family"),
                "version": run.versions.get("judge"),
                "temperature": snapshot.get("temperature", 0.0),
                "scripted_demo": bool(snapshot.get("scripted_demo")),
            },
            "sets": sets,
            # PostgreSQL's jsonb keeps an object's keys in its own order: the order the run chose is kept here.
            "set_order": list(sets),
            "calls": calls_summary(units),
            "counts": counts,
            "invalid": bool(invalid_reasons),
            "invalid_reasons": invalid_reasons,
            "sample": {"size": options.get("sample"), "seed": options.get("seed")} if options.get("sample") is not None else None,
            "intervals": {"shares": WILSON, "kappa and per-order accuracy": BOOTSTRAP},
            "versions": {k: run.versions.get(k) for k in ("testset", "rubric", "prompt", "judge")},
            "datasets": options.get("datasets", {}),
            "warnings": warnings,
            "noise": noise_for_run(run=run, tie=TIE_PAIRWISE, positive="A", mapped=map_back),
        }
        # The verdict against the lead's floors as they are now; the gate and the judges page judge the
        # figures again against the floors in force when they are asked.
        from calibration.selectors.checkups import checkup_verdict_for_report

        report["verdict"] = checkup_verdict_for_report(report=report)
        return (RunStatus.INVALID if invalid_reasons else RunStatus.DONE), report


def _checkup_case(case, per_order: dict[str, Judgment]) -> CheckupCase:
    """A pair's verdicts in both orders, with what went wrong in each (cut off, unreadable, no reply)."""
    ab, ba = per_order.get("ab"), per_order.get("ba")
    return CheckupCase(
        case_id=case.case_id,
        label=case.extra["label"],
        ab=unit_verdict(ab),
        ba=unit_verdict(ba),
        truncated=tuple(o for o in ORDERS if o in per_order and unit_truncated(per_order[o])),
        parse_failed=tuple(o for o in ORDERS if o in per_order and per_order[o].is_parse_failure),
        errors={o: unit_error(u) for o, u in (("ab", ab), ("ba", ba)) if unit_error(u)},
        tags=tuple(case.extra.get("tags") or ()),
    )
