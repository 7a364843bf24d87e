"""One judgment asked K times (`--trials K`): K separate calls, each keyed in the response cache by its trial
index (trial 1 keeps the key a single judgment always had), and the verdict used (judging/noise.py). All K
trials belong to one unit of work: a unit taken over from a killed worker asks them again, and the trials
already paid for come from the cache, so none costs a second call. No Django here."""

from __future__ import annotations

from collections.abc import Sequence

from judgeapp.judging.client import JudgeClient
from judgeapp.judging.judge_calls import JudgeOutcome
from judgeapp.judging.judge_errors import JudgeError
from judgeapp.judging.noise import MAJORITY, MEAN, verdict_used
from judgeapp.judging.parsing import ReplySpec


def judge_trials(
    client: JudgeClient, messages: list[dict], spec: ReplySpec, *, judged: Sequence[str], trials: int, field: str,
    rule: str = MAJORITY, tie=None, max_tokens: int | None = None,
) -> JudgeOutcome:
    """The judge's verdict on `messages`, asked `trials` times. One trial: the client's outcome as it always
    was. More: the first usable trial's outcome with `parsed[field]` the verdict used (the trials' majority,
    a tied one giving `tie`, or their mean), the costs summed, and `trials` each trial's verdict and cost."""
    if trials <= 1:
        return client.judge(messages, spec, judged=judged, max_tokens=max_tokens)
    outcomes: list[JudgeOutcome] = []
    for trial in range(1, trials + 1):
        try:
            outcomes.append(client.judge(messages, spec, judged=judged, max_tokens=max_tokens, trial=trial))
        except JudgeError as exc:
            exc.attempts += sum(o.attempts for o in outcomes)
            raise
    return combined(outcomes, field=field, rule=rule, tie=tie)


def combined(outcomes: list[JudgeOutcome], *, field: str, rule: str, tie=None) -> JudgeOutcome:
    verdicts = [o.parsed[field] if o.ok else None for o in outcomes]
    usable = [o for o in outcomes if o.ok]
    base = usable[0] if usable else outcomes[0]
    result = JudgeOutcome(
        parsed=None,
        raw_reply=base.raw_reply,
        messages=base.messages,
        parse_error=base.parse_error,
        parse_attempts=base.parse_attempts,
        attempts=sum(o.attempts for o in outcomes),
        prompt_tokens=sum(o.prompt_tokens for o in outcomes),
        completion_tokens=sum(o.completion_tokens for o in outcomes),
        latency_ms=sum(o.latency_ms for o in outcomes),
        cached=all(o.cached for o in outcomes),
        finish_reason=base.finish_reason,
        truncated=base.truncated,
        trials=[
            {
                "trial": number,
                "verdict": verdict,
                "prompt_tokens": o.prompt_tokens,
                "completion_tokens": o.completion_tokens,
                "cached": o.cached,
                "parse_error": o.parse_error[:300],
            }
            for number, (o, verdict) in enumerate(zip(outcomes, verdicts), start=1)
        ],
    )
    if usable:
        result.parsed = {**base.parsed, field: verdict_used(verdicts, rule=rule, tie=tie)}
    return result


__all__ = ["MAJORITY", "MEAN", "judge_trials"]
