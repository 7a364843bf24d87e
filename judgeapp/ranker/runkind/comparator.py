"""The one comparator: the seed's prompt (the ranklist's pinned version), the ranklist's judge, the
WINNER/RATIONALE reply parsed strictly. Every judge call is a Judgment row found again by its key, so
a resumed insert replays what it already asked instead of asking again."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from judgeapp.judging.parsing import WINNER_SPEC
from judgeapp.judging.prompts import Prompt, user_message
from judgeapp.judging.runkind import UnitResult
from judgeapp.judging.workers import worker_identity
from judgeapp.models import Artifact, Comparison, Goal, Judge, Judgment, PromptTemplate, Purpose, Run, UnitStatus
from judgeapp.ranker.core import combine_orders, render_comparison, swap

KEY_MAX = 300


class ComparatorFailed(Exception):
    """The judge answered, but not in the WINNER/RATIONALE form, even after the one retry."""


@dataclass(frozen=True)
class ComparatorSpec:
    """What makes the comparator one comparator: the same goal, prompt version, judge and orders."""

    run: Run
    goal: Goal
    prompt: PromptTemplate
    judge: Judge
    both_orders: bool


def judgment_key(scope: str, first: Artifact, second: Artifact, order: str) -> str:
    key = f"{scope}/{first.artifact_id}|{second.artifact_id}/{order}"
    if len(key) <= KEY_MAX:
        return key
    digest = hashlib.sha256(f"{first.artifact_id}\0{second.artifact_id}".encode()).hexdigest()[:32]
    return f"{scope[:200]}/{digest}/{order}"


def _ask(spec: ComparatorSpec, *, key: str, first: Artifact, second: Artifact, order: str, payload: dict) -> Judgment:
    """One judge call: `first` shown as Artifact A. Replays a stored answer when there is one."""
    from judgeapp.judging.endpoints import client_for

    unit, _ = Judgment.objects.get_or_create(
        run=spec.run,
        key=key,
        defaults={"purpose": Purpose.JUDGE, "judge": spec.judge, "order": order, "prompt": spec.prompt, "payload": payload},
    )
    if unit.status == UnitStatus.DONE and unit.parsed:
        return unit
    # Claimed with a token, as every claimed unit is (the judgment_claimed_has_token constraint).
    Judgment.objects.filter(pk=unit.pk).update(status=UnitStatus.CLAIMED, claim_token=uuid.uuid4(), claimed_by=worker_identity())
    text = render_comparison(
        Prompt(spec.prompt.name, spec.prompt.text), goal=spec.goal.text, artifact_a=first.content, artifact_b=second.content
    )
    try:
        outcome = client_for(spec.judge).judge(user_message(text), WINNER_SPEC)
    except Exception as exc:
        # Left pending: the next attempt (a resumed run, a retried insert) asks again.
        Judgment.objects.filter(pk=unit.pk).update(status=UnitStatus.PENDING, claim_token=None, claimed_by="", error=str(exc)[:2000])
        raise
    result = UnitResult.from_outcome(outcome)
    Judgment.objects.filter(pk=unit.pk).update(
        status=UnitStatus.DONE if result.ok else UnitStatus.FAILED,
        claim_token=None,
        claimed_by="",
        finished_at=timezone.now(),
        error="",
        **result.fields,
    )
    unit.refresh_from_db()
    if not result.ok:
        raise ComparatorFailed(
            f"{first.artifact_id} vs {second.artifact_id}: the judge's reply was not in the WINNER/RATIONALE form "
            f"after a retry ({outcome.parse_error})"
        )
    return unit


def compare(
    spec: ComparatorSpec,
    *,
    a: Artifact,
    b: Artifact,
    scope: str,
    stage: str,
    index: int | None = None,
    ranklist=None,
    insertion=None,
) -> Comparison:
    """Ask the comparator about A against B (in both orders when the spec says so) and store the decision.

    Inside a ranklist a pair is decided once: a comparison already stored is returned as it is.
    """
    if ranklist is not None:
        existing = Comparison.objects.filter(ranklist=ranklist, artifact_a=a, artifact_b=b).first()
        if existing is not None:
            return existing
    payload = {"a": a.artifact_id, "b": b.artifact_id, "stage": stage, "set": a.artifact_set.name}
    first = _ask(spec, key=judgment_key(scope, a, b, "ab"), first=a, second=b, order="ab", payload=payload)
    winner, rationale, verdicts, swapped = first.parsed["winner"], first.parsed["rationale"], {}, None
    if spec.both_orders:
        swapped = _ask(spec, key=judgment_key(scope, a, b, "ba"), first=b, second=a, order="ba", payload=payload)
        second_winner = swap(swapped.parsed["winner"])
        verdicts = {"ab": winner, "ba": second_winner}
        winner = combine_orders(winner, second_winner)
        if verdicts["ab"] != verdicts["ba"]:
            rationale = (
                f"The verdict changed with the order (A shown first: {verdicts['ab']}; B shown first: "
                f"{verdicts['ba']}), so it counts as Equal. A first: {first.parsed['rationale']} "
                f"B first: {swapped.parsed['rationale']}"
            )
    try:
        with transaction.atomic():
            return Comparison.objects.create(
                run=spec.run,
                ranklist=ranklist,
                insertion=insertion,
                artifact_a=a,
                artifact_b=b,
                stage=stage,
                index=index,
                goal=spec.goal,
                winner=winner,
                rationale=rationale,
                judgment=first,
                judgment_swapped=swapped,
                verdicts=verdicts,
            )
    except IntegrityError:
        # Another holder (after a lease takeover) stored the same decision a moment ago.
        return Comparison.objects.get(ranklist=ranklist, artifact_a=a, artifact_b=b)
