"""The one comparator: the seed's prompt (the ranklist's pinned version), the ranklist's judge, the
WINNER/RATIONALE reply parsed strictly. Every judge call is a Judgment row found again by its key, so
a resumed insert replays what it already asked instead of asking again."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from judgeapp.judging.judge_errors import JudgeRejected, JudgeUnavailable, JudgeUnreachable, StructuredOutputUnsupported
from judgeapp.judging.parsing import WINNER_SPEC
from judgeapp.judging.prompts import Prompt, user_message
from judgeapp.judging.runkind import UnitResult
from judgeapp.judging.runs.units import RUN_FATAL_STATUSES
from judgeapp.judging.workers import worker_identity
from judgeapp.models import Artifact, Comparison, Goal, Judge, Judgment, PromptTemplate, Purpose, Run, UnitStatus
from judgeapp.ranker.core import ComparisonFailed, combine_orders, render_comparison, swap

KEY_MAX = 300


class ComparatorFailed(ComparisonFailed):
    """A comparison that failed twice (the judge's own retries included): a reply not in the
    WINNER/RATIONALE form, a request the server refused (HTTP 400: too long for the model's context, say),
    or a server out of reach. `transport`: the server could not be reached (an outage, not the artifact);
    `unreachable`: not even connected to."""

    def __init__(self, reason: str, *, first: str = "", second: str = "", transport: bool = False, unreachable: bool = False):
        super().__init__(reason, first=first, second=second)
        self.transport = transport
        self.unreachable = unreachable


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


ATTEMPTS = 2  # a failed comparison is asked once more before the candidate is left unplaced


def _ask(spec: ComparatorSpec, *, key: str, first: Artifact, second: Artifact, order: str, payload: dict) -> Judgment:
    """One comparator call: `first` shown as Artifact A. Replays a stored answer when there is one.

    A call that fails (no parseable reply after the client's own retry, a refused request, a server out of
    reach after its retries) is asked once more, past the response cache; when that fails too it raises
    ComparatorFailed. A refusal that every call would meet (a bad key, an unknown model, a structured-output
    setting the server refuses) is raised as it is: the whole run stops. Every HTTP request made is added
    to the judgment's `attempts`, failures included.
    """
    from judgeapp.judging.endpoints import client_for, max_tokens_for

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
    # A call that failed before (in this insert or an earlier one) is not answered from the cache again.
    fresh = unit.status == UnitStatus.FAILED or bool(unit.error)
    reason, transport, unreachable = "", False, False
    requests_before = unit.attempts
    for _attempt in range(ATTEMPTS):
        try:
            outcome = client_for(spec.judge).judge(
                user_message(text), WINNER_SPEC, judged=(first.content, second.content),
                max_tokens=max_tokens_for(spec.judge, "compare"), use_cache=not fresh,
            )
        except (JudgeRejected, JudgeUnavailable) as exc:
            fatal = isinstance(exc, StructuredOutputUnsupported) or (
                isinstance(exc, JudgeRejected) and exc.status in RUN_FATAL_STATUSES
            )
            Judgment.objects.filter(pk=unit.pk).update(
                status=UnitStatus.PENDING if fatal else UnitStatus.FAILED,
                claim_token=None,
                claimed_by="",
                error=str(exc)[:2000],
                attempts=F("attempts") + exc.attempts,
                cached=False,
            )
            if fatal:
                raise  # left pending: a resumed run asks again
            reason, transport, fresh = str(exc), isinstance(exc, JudgeUnavailable), True
            unreachable = isinstance(exc, JudgeUnreachable)
            continue
        result = UnitResult.from_outcome(outcome)
        fields = dict(result.fields)
        attempts = fields.pop("attempts")
        Judgment.objects.filter(pk=unit.pk).update(
            status=UnitStatus.DONE if result.ok else UnitStatus.FAILED,
            claim_token=None,
            claimed_by="",
            finished_at=timezone.now(),
            error="",
            attempts=F("attempts") + attempts,
            **fields,
        )
        if result.ok:
            unit.refresh_from_db()
            return unit
        reason = f"the judge's reply was not in the WINNER/RATIONALE form after a retry ({outcome.parse_error})"
        transport, unreachable, fresh = False, False, True
    requests = Judgment.objects.filter(pk=unit.pk).values_list("attempts", flat=True).get() - requests_before
    raise ComparatorFailed(
        f"{first.artifact_id} vs {second.artifact_id}: {reason} (asked {ATTEMPTS} times: {requests} HTTP requests to the "
        "judge, its retries included)",
        first=first.artifact_id,
        second=second.artifact_id,
        transport=transport,
        unreachable=unreachable,
    )


def ask_once(
    spec: ComparatorSpec,
    *,
    first: Artifact,
    second: Artifact,
    scope: str,
    stage: str,
    ranklist,
    insertion=None,
    index: int | None = None,
) -> Comparison:
    """One judge call of the strategies beyond the seed: `first` shown as Artifact A, the verdict from its
    side, stored as its own comparison (the other order is another one). Asked once per ordered pair in a
    ranklist: a comparison already stored is returned as it is."""
    existing = Comparison.objects.filter(ranklist=ranklist, artifact_a=first, artifact_b=second).first()
    if existing is not None:
        return existing
    payload = {"a": first.artifact_id, "b": second.artifact_id, "stage": stage, "set": first.artifact_set.name}
    judgment = _ask(spec, key=judgment_key(scope, first, second, "ab"), first=first, second=second, order="ab", payload=payload)
    return _comparison_store(
        spec, ranklist=ranklist, insertion=insertion, a=first, b=second, stage=stage, index=index,
        winner=judgment.parsed["winner"], rationale=judgment.parsed["rationale"], judgment=judgment,
    )


def _comparison_store(spec: ComparatorSpec, *, ranklist, insertion, a: Artifact, b: Artifact, stage: str,
                      index: int | None, winner: str, rationale: str, judgment, judgment_swapped=None,
                      verdicts: dict | None = None) -> Comparison:
    """Store one decision; another holder (after a lease takeover) may have stored it a moment ago."""
    try:
        with transaction.atomic():
            return Comparison.objects.create(
                run=spec.run, ranklist=ranklist, insertion=insertion, artifact_a=a, artifact_b=b, stage=stage,
                index=index, goal=spec.goal, winner=winner, rationale=rationale, judgment=judgment,
                judgment_swapped=judgment_swapped, verdicts=verdicts if verdicts is not None else {},
            )
    except IntegrityError:
        return Comparison.objects.get(ranklist=ranklist, artifact_a=a, artifact_b=b)


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
    return _comparison_store(
        spec, ranklist=ranklist, insertion=insertion, a=a, b=b, stage=stage, index=index, winner=winner,
        rationale=rationale, judgment=first, judgment_swapped=swapped, verdicts=verdicts,
    )
