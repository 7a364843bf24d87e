"""The Jury (seed: LLM-as-Judge, Jury): a panel of judges from different model families, pooled.

Every juror gets the identical Juror prompt and rubric. Pooling is a majority vote for pass/fail and the
mean for numeric scores. A juror that gives no usable answer (after its one parse retry, or after its
server's retries) is left out of the pool; fewer than three answers, or a tied vote, leave the case
unjudged. Each juror's verdict is kept beside the pooled one, and the report gives each juror's
agreement with the pool, flagging one far below the others.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from judgeapp.judging.errors import InputError
from judgeapp.judging.prompts import Prompt, load_prompt

MIN_ANSWERS = 3
MIN_JURORS = 3
UNJUDGED = "unjudged"
# A juror whose agreement with the pool is this far below the mean of the other jurors' is flagged for
# review (the seed: "review any judge that falls far below the others").
FAR_BELOW = 0.15

# A juror callable: the rendered prompt in, the parsed reply ({"reasoning", "verdict"}) out, or None
# when the juror gave no usable answer.
Juror = Callable[[str], "dict | None"]


def render_juror_prompt(*, rubric: str, input: str, output: str, prompt: Prompt | None = None) -> str:
    """The seed's Juror prompt, verbatim (a run passes the version it recorded): identical for every juror."""
    return (prompt or load_prompt("juror")).render(rubric=rubric, input=input, output=output)


@dataclass(frozen=True)
class Panelist:
    name: str
    family: str
    # (base URL, model): who answers. Two panelists of one identity are one model, whatever they declare.
    identity: tuple[str, str] | None = None


def _where(identity: tuple[str, str]) -> str:
    base_url, model = identity
    return f"model {model} at {base_url or 'the default OPENAI_BASE_URL'}"


def panel_check(
    panel: list[Panelist],
    *,
    system_family: str | None,
    pass_fail: bool = True,
    system_identity: tuple[str, str] | None = None,
) -> list[str]:
    """Refuse a panel that breaks the seed's rules (InputError, one line); return warnings otherwise.

    Three or more jurors, all different models (identity: base URL and model, whatever family each
    declares) of different model families, none the system under test itself nor of its family, and an odd
    number for pass/fail votes.
    """
    names = [p.name for p in panel]
    repeated_names = sorted({n for n in names if names.count(n) > 1})
    if repeated_names:
        raise InputError(f"jury: judge {', '.join(repeated_names)} is named twice; each juror sits once")
    if len(panel) < MIN_JURORS:
        raise InputError(f"jury: {len(panel)} judge(s) given; a jury needs at least {MIN_JURORS} from different model families")
    by_identity: dict[tuple[str, str], list[str]] = {}
    for p in panel:
        if p.identity is not None:
            by_identity.setdefault(p.identity, []).append(p.name)
    for identity, members in by_identity.items():
        if len(members) > 1:
            raise InputError(
                f"jury: {' and '.join(members)} are one model ({_where(identity)}), whatever families they declare; "
                f"each juror must be a different model"
            )
    if system_identity is not None:
        same = [p.name for p in panel if p.identity == system_identity]
        if same:
            raise InputError(
                f"jury: {', '.join(same)} is the system under test itself ({_where(system_identity)}); "
                f"choose a juror that is another model"
            )
    by_family: dict[str, list[str]] = {}
    for p in panel:
        by_family.setdefault(p.family, []).append(p.name)
    shared = {family: members for family, members in by_family.items() if len(members) > 1}
    if shared:
        family, members = sorted(shared.items())[0]
        raise InputError(
            f"jury: {' and '.join(members)} are both of the {family} family; draw every juror from a different family"
        )
    if system_family is not None:
        same = [p.name for p in panel if p.family == system_family]
        if same:
            raise InputError(
                f"jury: {', '.join(same)} is of the {system_family} family, the family of the system under test; "
                f"choose a juror of another family"
            )
    if pass_fail and len(panel) % 2 == 0:
        raise InputError(f"jury: {len(panel)} judges can tie on a pass/fail vote; use an odd number")
    warnings = []
    if system_family is None:
        warnings.append(
            "the system under test's model family is unknown: the rule that no juror shares it was not checked"
        )
    return warnings


@dataclass
class PooledCase:
    case_id: str
    pooled: str  # "pass" | "fail" | "unjudged" (a score's mean is in `mean`)
    votes: dict[str, str | int | None]  # every juror, None when it gave no usable answer
    dissent: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    reason: str = ""  # why a case is unjudged
    mean: float | None = None
    reasoning: dict[str, str] = field(default_factory=dict)

    def as_report(self) -> dict:
        report = {
            "case_id": self.case_id,
            "pooled": self.pooled,
            "votes": self.votes,
            "dissent": self.dissent,
            "left_out": self.left_out,
            "reasoning": self.reasoning,
        }
        if self.reason:
            report["unjudged_reason"] = self.reason
        if self.mean is not None:
            report["mean"] = self.mean
        return report


def pool_pass_fail(case_id: str, votes: dict[str, str | None], reasoning: dict[str, str] | None = None) -> PooledCase:
    """Majority vote of the jurors that answered; unjudged with fewer than three answers or a tie."""
    answered = {judge: v for judge, v in votes.items() if v is not None}
    left_out = [judge for judge, v in votes.items() if v is None]
    case = PooledCase(case_id, UNJUDGED, dict(votes), left_out=left_out, reasoning=dict(reasoning or {}))
    if len(answered) < MIN_ANSWERS:
        case.reason = f"only {len(answered)} of {len(votes)} jurors answered (at least {MIN_ANSWERS} needed)"
        return case
    passes = sum(v == "pass" for v in answered.values())
    fails = len(answered) - passes
    if passes == fails:
        case.reason = f"the vote tied {passes}-{fails}"
        return case
    case.pooled = "pass" if passes > fails else "fail"
    case.dissent = [judge for judge, v in answered.items() if v != case.pooled]
    return case


def pool_scores(case_id: str, scores: dict[str, int | None], *, dissent_margin: float = 1.0) -> PooledCase:
    """The mean of the jurors' numeric scores; unjudged with fewer than three answers. A juror more than
    `dissent_margin` points from the panel's median is recorded as dissenting (the median, because one
    outlier drags the mean toward itself and away from the jurors that agree)."""
    answered = {judge: s for judge, s in scores.items() if s is not None}
    left_out = [judge for judge, s in scores.items() if s is None]
    case = PooledCase(case_id, UNJUDGED, dict(scores), left_out=left_out)
    if len(answered) < MIN_ANSWERS:
        case.reason = f"only {len(answered)} of {len(scores)} jurors answered (at least {MIN_ANSWERS} needed)"
        return case
    case.mean = statistics.fmean(answered.values())
    case.pooled = "scored"
    median = statistics.median(answered.values())
    case.dissent = [judge for judge, s in answered.items() if abs(s - median) > dissent_margin]
    return case


def pool_replies(case_id: str, replies: dict[str, dict | None]) -> PooledCase:
    """Pool the jurors' parsed replies ({"reasoning", "verdict"}, or None for a juror that gave no usable
    answer), in panel order: each vote and its reasoning kept beside the pooled verdict."""
    votes = {name: parsed["verdict"] if parsed else None for name, parsed in replies.items()}
    reasoning = {name: parsed.get("reasoning", "") for name, parsed in replies.items() if parsed}
    return pool_pass_fail(case_id, votes, reasoning)


def deliberate(
    jurors: dict[str, Juror], *, case_id: str, rubric: str, input: str, output: str, prompt: Prompt | None = None
) -> PooledCase:
    """One case through the whole panel with juror callables. A run does the same steps with one unit per
    juror, run in parallel: `render_juror_prompt` for every juror's identical prompt, `pool_replies` for
    the report."""
    text = render_juror_prompt(rubric=rubric, input=input, output=output, prompt=prompt)
    return pool_replies(case_id, {name: juror(text) for name, juror in jurors.items()})


def per_judge_agreement(cases: list[PooledCase], jurors: list[str]) -> dict[str, float | None]:
    """Each juror's share of pooled cases (not unjudged) on which it voted with the pool."""
    agreement = {}
    for juror in jurors:
        voted = [c for c in cases if c.pooled in ("pass", "fail") and c.votes.get(juror) is not None]
        agreement[juror] = sum(c.votes[juror] == c.pooled for c in voted) / len(voted) if voted else None
    return agreement


def jurors_to_review(agreement: dict[str, float | None], *, far_below: float = FAR_BELOW) -> list[dict]:
    """Jurors whose agreement is more than `far_below` under the mean of the other jurors'."""
    flagged = []
    for juror, rate in agreement.items():
        others = [r for j, r in agreement.items() if j != juror and r is not None]
        if rate is None or not others:
            continue
        others_mean = statistics.fmean(others)
        if others_mean - rate > far_below:
            flagged.append({"judge": juror, "agreement": rate, "others_mean": others_mean})
    return flagged


def summarize(cases: list[PooledCase], jurors: list[str]) -> dict:
    """The jury report's figures (CONTRACT §4 keys and more): aggregated as for a single judge."""
    pooled = [c for c in cases if c.pooled in ("pass", "fail")]
    passes = sum(c.pooled == "pass" for c in pooled)
    unjudged = [c.case_id for c in cases if c.pooled == UNJUDGED]
    agreement = per_judge_agreement(cases, jurors)
    answers = {j: sum(c.votes.get(j) is not None for c in cases) for j in jurors}
    return {
        "cases": [c.as_report() for c in cases],
        "per_judge_agreement": agreement,
        "review": jurors_to_review(agreement),
        "pass_rate": passes / len(pooled) if pooled else None,
        "passed": passes,
        "failed": len(pooled) - passes,
        "unjudged": len(unjudged),
        "unjudged_cases": unjudged,
        "judged": len(pooled),
        "total": len(cases),
        "dissent_count": {j: sum(j in c.dissent for c in cases) for j in jurors},
        "answers": answers,
        "failing": [
            {"case_id": c.case_id, "votes": c.votes, "reasoning": c.reasoning} for c in pooled if c.pooled == "fail"
        ],
    }
