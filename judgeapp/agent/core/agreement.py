"""Agreement of the agent judge with people, on requirements both have a verdict for.

The Agent-as-a-Judge benchmark (DevAI; github.com/metauto-ai/agent-as-a-judge, MIT) publishes human
verdicts per requirement (`satisfied`: true/false). A judge's `met` agrees with true and `not_met` with
false. `unverified` is neither: it is left out of `agreement` (and counted), and counted as not satisfied
in `agreement_unverified_as_not_met`, the stricter figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .loop import MET, NOT_MET, UNVERIFIED


@dataclass
class AgreementCounts:
    compared: int = 0  # requirements with a human verdict and a judge verdict (unverified included)
    agree: int = 0  # met/true or not_met/false
    unverified: int = 0
    unverified_human_false: int = 0  # unverified where people said not satisfied
    judge_met_human_false: int = 0
    judge_not_met_human_true: int = 0
    disagreements: list[str] = field(default_factory=list)

    def add(self, label: str, verdict: str, human: bool) -> None:
        self.compared += 1
        if verdict == UNVERIFIED:
            self.unverified += 1
            self.unverified_human_false += not human
            return
        if (verdict == MET) == human:
            self.agree += 1
        else:
            self.disagreements.append(label)
            if verdict == MET:
                self.judge_met_human_false += 1
            else:
                self.judge_not_met_human_true += 1

    def merge(self, other: "AgreementCounts") -> None:
        for name in (
            "compared", "agree", "unverified", "unverified_human_false", "judge_met_human_false", "judge_not_met_human_true"
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.disagreements += other.disagreements

    @property
    def verified(self) -> int:
        return self.compared - self.unverified

    def as_dict(self) -> dict:
        return {
            "compared": self.compared,
            "agreement": round(self.agree / self.verified, 4) if self.verified else None,
            "agreement_unverified_as_not_met": (
                round((self.agree + self.unverified_human_false) / self.compared, 4) if self.compared else None
            ),
            "unverified": self.unverified,
            "judge_met_human_not": self.judge_met_human_false,
            "judge_not_met_human_met": self.judge_not_met_human_true,
            "disagreements": self.disagreements,
        }


def compare(verdicts: list[tuple[str, str]], human: list[bool | None], *, prefix: str = "") -> AgreementCounts:
    """`verdicts`: (requirement id, verdict) in checklist order; `human`: satisfied per requirement, same
    order (None: no human verdict, skipped)."""
    if len(verdicts) != len(human):
        raise ValueError(f"{prefix}{len(verdicts)} judge verdicts but {len(human)} human verdicts")
    counts = AgreementCounts()
    for (requirement_id, verdict), satisfied in zip(verdicts, human):
        if satisfied is None or verdict not in (MET, NOT_MET, UNVERIFIED):
            continue
        counts.add(f"{prefix}{requirement_id}", verdict, bool(satisfied))
    return counts
