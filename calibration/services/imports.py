"""Runs judged elsewhere, stored as finished runs: public data with a real judge's verdicts (PandaLM's
GPT-3.5), so its agreement with people can be measured like any run's."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from judgeapp.judging.content import testset_store
from judgeapp.judging.errors import InputError
from judgeapp.judging.runs import run_create
from judgeapp.judging.stats import sign_test
from judgeapp.models import EndpointSource, Executor, Judge, Judgment, Output, Purpose, Run, RunKind, RunStatus, UnitStatus


def judge_of_import(*, name: str, model: str, family: str) -> Judge:
    """The judge row standing for a judge that ran elsewhere (no URL: it is never called from here)."""
    judge, _ = Judge.objects.get_or_create(
        name=name, defaults={"model": model, "family": family, "source": EndpointSource.IMPORT, "scripted_demo": False}
    )
    return judge


@dataclass
class ImportedPair:
    """One pairwise item judged elsewhere, in one order only (A first)."""

    case_id: str
    input: str
    a: str
    b: str
    verdict: str | None  # "A", "B", "tie", or None when the judge's reply could not be read
    reasoning: str
    raw_reply: str


@transaction.atomic
def pairwise_run_import(
    *,
    run_id: str,
    title: str,
    judge: Judge,
    testset_name: str,
    items: list[ImportedPair],
    source: str,
    instruction: str = "",
) -> Run:
    """A finished pairwise run holding the items, both replies and the judge's verdicts.

    The judge judged each pair once (reply A first), not in both orders: the report says so, and each
    verdict is a unit "<case_id>/ab" with no "/ba" twin. No judge is called.
    """
    if Run.objects.filter(run_id=run_id).exists():
        raise InputError(f"run id {run_id!r} is already taken")
    if not items:
        raise InputError(f"{source}: no items")
    rows = [{"id": item.case_id, "input": item.input} for item in items]
    testset = testset_store(
        data="\n".join(json.dumps(r, ensure_ascii=False) for r in rows).encode(), name=f"{testset_name}.jsonl"
    )
    run = run_create(kind=RunKind.PAIRWISE, run_id=run_id, executor=Executor.INLINE, title=title, judge=judge, testset=testset)
    now = timezone.now()
    _imported_units_store(run=run, judge=judge, cases={c.case_id: c for c in testset.cases.all()}, items=items, now=now)
    judged = [item for item in items if item.verdict]
    run.config = {
        **run.config,
        "imported": {"source": source, "judge": judge.name, "label_kind": "pairwise", "instruction": instruction},
    }
    run.status = RunStatus.DONE
    run.started_at = run.finished_at = now
    run.total_units = len(items)
    run.done_units = len(judged)
    run.failed_units = len(items) - len(judged)
    run.report = _imported_report(run=run, items=items, source=source)
    run.save()
    return run


def _imported_units_store(*, run: Run, judge: Judge, cases: dict, items: list[ImportedPair], now: datetime) -> None:
    """Both replies of every pair as the run's outputs, and the judge's one verdict on each as a finished unit."""
    Output.objects.bulk_create(
        [
            Output(run=run, case=cases[item.case_id], slot=slot, text=text, source=Output.Source.FILE)
            for item in items
            for slot, text in (("A", item.a), ("B", item.b))
        ],
        batch_size=1000,
    )
    Judgment.objects.bulk_create(
        [
            Judgment(
                run=run,
                key=f"{item.case_id}/ab",
                purpose=Purpose.JUDGE,
                case=cases[item.case_id],
                judge=judge,
                order="ab",
                status=UnitStatus.DONE if item.verdict else UnitStatus.FAILED,
                raw_reply=item.raw_reply,
                parsed={"winner": {"A": "1", "B": "2", "tie": "tie"}[item.verdict], "reasoning": item.reasoning} if item.verdict
                else None,
                parse_error="" if item.verdict else f"the judge's verdict {item.raw_reply[:60]!r} is not 1, 2 or Tie",
                finished_at=now,
            )
            for item in items
        ],
        batch_size=1000,
    )


def _imported_report(*, run: Run, items: list[ImportedPair], source: str) -> dict:
    """The report of an imported run, with the keys a pairwise run's report has."""
    judged = [item for item in items if item.verdict]
    wins_a = sum(item.verdict == "A" for item in judged)
    wins_b = sum(item.verdict == "B" for item in judged)
    ties = sum(item.verdict == "tie" for item in judged)
    test = sign_test(wins_a, wins_b)
    return {
        "run_id": run.run_id,
        "kind": run.kind,
        "wins_a": wins_a,
        "wins_b": wins_b,
        "ties": ties,
        "win_rate_a": wins_a / (wins_a + wins_b) if wins_a + wins_b else None,
        "tie_rate": ties / len(judged) if judged else None,
        "disagreements": [],
        "inconclusive": False,
        # As this app's pairwise runs say it: a winner only where the sign test tells the wins from chance.
        "sign_test": test,
        "winner": ("A" if wins_a > wins_b else "B") if test["significant"] else None,
        "versions": {k: run.versions.get(k) for k in ("testset", "rubric", "prompt", "judge")},
        "cases": [
            {"case_id": item.case_id, "ab": item.verdict, "ba": None, "verdict": item.verdict, "disagreement": False}
            for item in items
        ],
        "unjudged": len(items) - len(judged),
        "warnings": [
            f"imported from {source}: the judge saw each pair once, reply A first; single-order verdicts, "
            "not judged in both orders as this app's pairwise runs are"
        ],
    }
