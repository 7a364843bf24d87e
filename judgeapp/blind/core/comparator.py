"""The blind comparator's aggregation (seed blind-comparator.md, Process steps 3-6), in plain Python.

The judge scores every run of every version on one shared rubric (1-5 per criterion) and checks each
expectation; everything after that is here, deterministic and testable with stub inputs:

3. A version's score on a criterion is the mean over all its runs (failed runs included: "do not select
   the best run or ignore failures"). The combined score is scaled to 1-10 as the seed's example does:
   twice the mean of the criterion scores (4, 4, 4, 4 -> 8.0; 3, 3, 4, 3 -> 6.5).
4. An expectation passes for a version when it holds in every one of its scored runs. Expectations are
   secondary evidence: they decide an order only when the rubric scores do not.
5. Consistency across runs: `high`, `medium` or `low` from the spread of the runs' scores and the share
   of runs that did not complete the task. A version that is less than `high` loses CONSISTENCY_PENALTY
   points from its overall score, so a strong average over unreliable runs ranks below a steady one.
6. Pairwise results for every two versions: the higher overall score (by OVERALL_MARGIN or more), else
   the higher expectation pass rate (by PASS_RATE_MARGIN or more), else more criteria won (each by
   CRITERION_MARGIN or more), else no meaningful order. Versions that beat one another in a cycle form a
   tie, as do versions that nothing orders; a winner is declared only when one version alone is first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from statistics import mean

CORE_CRITERIA = ("correctness", "completeness", "structure", "usability")
CONSISTENCY_LEVELS = ("high", "medium", "low")
CONSISTENCY_PENALTY = {"high": 0.0, "medium": 0.5, "low": 1.0}
# A run's scores (on 1-10) spread over at most this many points is steady; over HIGH_SPREAD, unreliable.
STEADY_SPREAD = 1.0
HIGH_SPREAD = 3.0
OVERALL_MARGIN = 0.5
PASS_RATE_MARGIN = 0.2
CRITERION_MARGIN = 0.5
MAX_NOTES = 4
SCHEMA_PATH = Path(__file__).with_name("comparison.schema.json")


class ComparisonImpossible(ValueError):
    """No comparison can be built (a version has no scored run); the message says why."""


@dataclass
class RunScore:
    """The judge's verdict on one run of one version. `scores` is None when the judge gave no usable
    verdict for it (a parse failure, an unreachable judge): the run is then reported, not scored."""

    run: str
    scores: dict[str, int] | None
    completed: bool = True
    expectations: list[bool] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    strengths: list[str] = field(default_factory=list)
    weaknesses: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def scored(self) -> bool:
        return self.scores is not None

    @property
    def overall(self) -> float:
        return scale_to_ten(mean(self.scores.values()))


@dataclass
class VersionEvidence:
    label: str
    runs: list[RunScore]
    stray_files: int = 0
    binary_files: int = 0


@dataclass(frozen=True)
class Consistency:
    level: str
    penalty: float
    spread: float
    failed_runs: int
    runs: int

    def describe(self) -> str:
        if self.runs == 1:
            return "a single run" + (" that did not complete the task" if self.failed_runs else "")
        parts = []
        if self.failed_runs:
            parts.append(f"{self.failed_runs} of {self.runs} runs did not complete the task")
        parts.append(f"run scores spread over {self.spread:g} points")
        return "; ".join(parts)


@dataclass
class ExpectationSummary:
    passed: int
    total: int
    pass_rate: float | None
    details: list[dict]


@dataclass
class VersionSummary:
    label: str
    criterion_scores: dict[str, float]
    combined: float  # twice the mean criterion score, before the consistency penalty
    consistency: Consistency
    overall_score: float
    expectations: ExpectationSummary
    strengths: list[str]
    weaknesses: list[str]
    run_overalls: dict[str, float]
    unscored_runs: list[RunScore]


@dataclass(frozen=True)
class Pairwise:
    a: str
    b: str
    result: str  # "a", "b" or "equal"
    basis: str  # "overall_score", "expectations", "criteria" or "none"
    detail: str

    @property
    def winner(self) -> str | None:
        return {"a": self.a, "b": self.b}.get(self.result)

    @property
    def loser(self) -> str | None:
        return {"a": self.b, "b": self.a}.get(self.result)

    def as_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "winner": self.winner, "basis": self.basis, "detail": self.detail}


@dataclass
class Ranking:
    groups: list[list[str]]  # best first; a group of several is a tie
    cycles: list[list[str]]  # the groups that are ties because their pairwise results form a cycle

    @property
    def ranking(self) -> list[str]:
        return [label for group in self.groups for label in group]

    @property
    def ties(self) -> list[list[str]]:
        return [group for group in self.groups if len(group) > 1]

    @property
    def winner(self) -> str | None:
        return self.groups[0][0] if self.groups and len(self.groups[0]) == 1 else None


# --- Step 3: scores ---------------------------------------------------------------------------------------


def scale_to_ten(mean_score: float) -> float:
    """The combined 1-5 score on the seed's 1-10 scale: the example's 4, 4, 4, 4 -> 8.0."""
    return 2.0 * mean_score


def _number(value: float, digits: int = 2) -> float | int:
    rounded = round(value, digits)
    return int(rounded) if rounded == int(rounded) else rounded


def criterion_means(runs: list[RunScore], criteria: list[str]) -> dict[str, float]:
    scored = [r for r in runs if r.scored]
    return {c: mean(r.scores[c] for r in scored) for c in criteria}


# --- Step 5: consistency ----------------------------------------------------------------------------------


def assess_consistency(run_overalls: list[float], completed: list[bool]) -> Consistency:
    """`high`: every run completed and their scores lie within STEADY_SPREAD points; `low`: half the runs
    or more failed, or the scores spread over HIGH_SPREAD points or more; `medium` in between. A single
    run cannot show inconsistency: it is `high` when it completed and `low` when it did not."""
    runs = len(run_overalls)
    failed = sum(1 for ok in completed if not ok)
    spread = round(max(run_overalls) - min(run_overalls), 2) if run_overalls else 0.0
    if failed == 0 and spread <= STEADY_SPREAD:
        level = "high"
    elif failed * 2 >= runs or spread >= HIGH_SPREAD:
        level = "low"
    else:
        level = "medium"
    return Consistency(level, CONSISTENCY_PENALTY[level], spread, failed, runs)


# --- Step 4: expectations ---------------------------------------------------------------------------------


def summarize_expectations(runs: list[RunScore], expectations: list[str]) -> ExpectationSummary:
    scored = [r for r in runs if r.scored]
    details = []
    for i, text in enumerate(expectations):
        runs_passed = sum(1 for r in scored if i < len(r.expectations) and r.expectations[i])
        evidence = [f"{r.run}: {r.evidence[i]}" for r in scored if i < len(r.evidence) and r.evidence[i]]
        details.append(
            {
                "text": text,
                "passed": bool(scored) and runs_passed == len(scored),
                "runs_passed": runs_passed,
                "runs_total": len(scored),
                "evidence": evidence,
            }
        )
    passed = sum(1 for d in details if d["passed"])
    total = len(expectations)
    return ExpectationSummary(passed, total, round(passed / total, 2) if total else None, details)


# --- Putting one version together ---------------------------------------------------------------------------


def _top_notes(notes_per_run: list[list[str]], limit: int = MAX_NOTES) -> list[str]:
    """The judge's notes across runs: the ones it made most often first, each once."""
    counts: dict[str, tuple[int, int, str]] = {}
    order = 0
    for notes in notes_per_run:
        for note in notes:
            text = " ".join(str(note).split())
            if not text:
                continue
            key = text.lower().rstrip(".")
            count, first, shown = counts.get(key, (0, order, text))
            counts[key] = (count + 1, first, shown)
            order += 1
    ranked = sorted(counts.values(), key=lambda item: (-item[0], item[1]))
    return [shown for _count, _first, shown in ranked[:limit]]


def summarize_version(evidence: VersionEvidence, criteria: list[str], expectations: list[str]) -> VersionSummary:
    scored = [r for r in evidence.runs if r.scored]
    if not scored:
        reasons = "; ".join(f"{r.run}: {r.error or 'no verdict'}" for r in evidence.runs) or "it has no runs"
        raise ComparisonImpossible(f"version {evidence.label} has no scored run ({reasons})")
    means = criterion_means(scored, criteria)
    combined = scale_to_ten(mean(means.values()))
    overalls = {r.run: round(r.overall, 2) for r in scored}
    consistency = assess_consistency(list(overalls.values()), [r.completed for r in scored])
    overall = round(min(10.0, max(1.0, combined - consistency.penalty)), 1)
    weaknesses = []
    if consistency.level != "high":
        weaknesses.append(
            f"Unreliable across runs ({consistency.level} consistency): {consistency.describe()}; "
            f"-{consistency.penalty:g} on the overall score"
        )
    failed = [r.run for r in scored if not r.completed]
    if failed and consistency.runs > 1:
        weaknesses.append(f"{', '.join(failed)} did not complete the task")
    weaknesses += _top_notes([r.weaknesses for r in scored], MAX_NOTES)
    return VersionSummary(
        label=evidence.label,
        criterion_scores=means,
        combined=combined,
        consistency=consistency,
        overall_score=overall,
        expectations=summarize_expectations(evidence.runs, expectations),
        strengths=_top_notes([r.strengths for r in scored]),
        weaknesses=weaknesses[: MAX_NOTES + 2],
        run_overalls=overalls,
        unscored_runs=[r for r in evidence.runs if not r.scored],
    )


# --- Step 6: pairwise results and the ranking -----------------------------------------------------------------


def compare_pair(x: VersionSummary, y: VersionSummary) -> Pairwise:
    """Which of two versions the evidence puts first, and on what basis."""
    margin = round(x.overall_score - y.overall_score, 2)
    if abs(margin) >= OVERALL_MARGIN:
        result = "a" if margin > 0 else "b"
        hi, lo = (x, y) if margin > 0 else (y, x)
        return Pairwise(
            x.label, y.label, result, "overall_score",
            f"{hi.label} scores {hi.overall_score:g} overall against {lo.overall_score:g}"
        )
    if x.expectations.total and x.expectations.pass_rate is not None and y.expectations.pass_rate is not None:
        rate_margin = round(x.expectations.pass_rate - y.expectations.pass_rate, 2)
        if abs(rate_margin) >= PASS_RATE_MARGIN:
            result = "a" if rate_margin > 0 else "b"
            hi, lo = (x, y) if rate_margin > 0 else (y, x)
            return Pairwise(
                x.label, y.label, result, "expectations",
                f"overall scores within {OVERALL_MARGIN:g}; {hi.label} passes {hi.expectations.passed}/{hi.expectations.total} "
                f"expectations against {lo.expectations.passed}/{lo.expectations.total}",
            )
    wins_x = [c for c in x.criterion_scores if x.criterion_scores[c] - y.criterion_scores.get(c, 0) >= CRITERION_MARGIN]
    wins_y = [c for c in y.criterion_scores if y.criterion_scores[c] - x.criterion_scores.get(c, 0) >= CRITERION_MARGIN]
    if len(wins_x) != len(wins_y):
        result = "a" if len(wins_x) > len(wins_y) else "b"
        hi, hi_wins, lo, lo_wins = (x, wins_x, y, wins_y) if result == "a" else (y, wins_y, x, wins_x)
        return Pairwise(
            x.label, y.label, result, "criteria",
            f"overall scores within {OVERALL_MARGIN:g}; {hi.label} is better on {len(hi_wins)} criteria "
            f"({', '.join(hi_wins)}), {lo.label} on {len(lo_wins)}" + (f" ({', '.join(lo_wins)})" if lo_wins else ""),
        )
    return Pairwise(
        x.label, y.label, "equal", "none",
        f"overall {x.overall_score:g} and {y.overall_score:g}, and neither expectations nor criteria separate them",
    )


def _strongly_connected(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm: the groups of versions that beat one another round a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            groups.append(sorted(group))

    for node in nodes:
        if node not in index:
            visit(node)
    return groups


def rank(labels: list[str], pairwise: list[Pairwise]) -> Ranking:
    """Order the versions by their pairwise results without forcing a winner.

    Versions in a cycle (A over B, B over C, C over A) are tied: the cycle gives no order among them.
    Then, best first, each place goes to the versions that nothing left beats; when several qualify,
    nothing orders them and they are tied. Within a tie, versions are listed by label.
    """
    beats: dict[str, set[str]] = {label: set() for label in labels}
    for pair in pairwise:
        if pair.winner:
            beats[pair.winner].add(pair.loser)
    components = _strongly_connected(sorted(labels), beats)
    component_of = {label: i for i, group in enumerate(components) for label in group}
    incoming: dict[int, set[int]] = {i: set() for i in range(len(components))}
    for winner, losers in beats.items():
        for loser in losers:
            if component_of[winner] != component_of[loser]:
                incoming[component_of[loser]].add(component_of[winner])
    remaining = set(range(len(components)))
    groups: list[list[str]] = []
    while remaining:
        undominated = [i for i in sorted(remaining) if not (incoming[i] & remaining)]
        groups.append(sorted(label for i in undominated for label in components[i]))
        remaining -= set(undominated)
    cycles = [group for group in components if len(group) > 1]
    return Ranking(groups=groups, cycles=cycles)


# --- The comparison (seed "Output Format") -----------------------------------------------------------------


def _join(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def _reasoning(ranking: Ranking, summaries: dict[str, VersionSummary], pairwise: list[Pairwise]) -> str:
    def brief(label: str) -> str:
        s = summaries[label]
        return f"{label} ({s.overall_score:g}/10, {s.consistency.level} consistency)"

    def decided(a: str, b: str) -> Pairwise | None:
        return next((p for p in pairwise if {p.a, p.b} == {a, b}), None)

    sentences = []
    first = ranking.groups[0]
    if ranking.winner:
        sentence = f"Version {brief(ranking.winner)} ranks first"
        if len(ranking.groups) > 1:
            runner_up = ranking.groups[1][0]
            pair = decided(ranking.winner, runner_up)
            sentence += f", ahead of {brief(runner_up)}" + (f": {pair.detail}" if pair and pair.winner else "")
        sentences.append(sentence + ".")
    else:
        sentences.append(f"No winner: versions {_join(first)} share first place.")
    for group in ranking.groups:
        if len(group) < 2:
            continue
        inside = [cycle for cycle in ranking.cycles if set(cycle) <= set(group)]
        for cycle in inside:
            links = [p for p in pairwise if p.winner in cycle and p.loser in cycle]
            chain = "; ".join(f"{p.winner} over {p.loser} ({p.detail})" for p in links)
            sentences.append(
                f"Versions {_join(cycle)} beat one another in a cycle ({chain}), so none is ranked above the others."
            )
        if inside != [group]:
            details = "; ".join(p.detail for p in pairwise if p.a in group and p.b in group and not p.winner)
            sentences.append(
                f"Versions {_join(group)} are tied: the evidence gives no meaningful order between them"
                + (f" ({details})." if details else ".")
            )
    ordered = ", then ".join("/".join(group) for group in ranking.groups)
    sentences.append(f"Order: {ordered}.")
    return " ".join(sentences)


def _limitations(versions: list[VersionEvidence], summaries: dict[str, VersionSummary], expectations: list[str]) -> list[str]:
    notes = []
    for v in versions:
        s = summaries[v.label]
        if s.consistency.runs == 1 and not s.unscored_runs:
            notes.append(f"Version {v.label} has a single run: its consistency rests on that run alone.")
        for r in s.unscored_runs:
            notes.append(
                f"Version {v.label} {r.run} could not be scored ({r.error or 'no usable verdict'}); "
                f"{v.label}'s scores rest on {s.consistency.runs} of {len(v.runs)} runs."
            )
        if v.stray_files:
            notes.append(
                f"Version {v.label}: {v.stray_files} file(s) outside its run-* directories belong to no run "
                "and were not compared."
            )
        if v.binary_files:
            notes.append(f"Version {v.label}: {v.binary_files} binary file(s) were listed to the judge but not shown.")
    if not expectations:
        notes.append("No expectations were given: the ranking rests on the rubric scores alone.")
    return notes


@dataclass
class ComparisonResult:
    comparison: dict  # exactly the seed's output format
    summaries: dict[str, VersionSummary]
    pairwise: list[Pairwise]
    ranking: Ranking


def build_comparison(
    *,
    criteria: list[str],
    versions: list[VersionEvidence],
    expectations: list[str],
    extra_limitations: list[str] = (),
) -> ComparisonResult:
    """Steps 3-6 over the judge's per-run verdicts; the result is the seed's comparison.json."""
    if len(versions) < 2:
        raise ComparisonImpossible("a comparison needs at least two versions")
    labels = sorted(v.label for v in versions)
    by_label = {v.label: v for v in versions}
    summaries = {label: summarize_version(by_label[label], criteria, expectations) for label in labels}
    pairwise = [compare_pair(summaries[a], summaries[b]) for i, a in enumerate(labels) for b in labels[i + 1 :]]
    ranking = rank(labels, pairwise)
    comparison = {
        "method": "n_way",
        "versions_compared": labels,
        "winner": ranking.winner,
        "ranking": ranking.ranking,
        "ties": ranking.ties,
        "reasoning": _reasoning(ranking, summaries, pairwise),
        "rubric": {
            "criteria": list(criteria),
            **{
                label: {
                    "scores": {c: _number(s.criterion_scores[c]) for c in criteria},
                    "overall_score": s.overall_score,
                    "run_consistency": s.consistency.level,
                }
                for label, s in summaries.items()
            },
        },
        "output_quality": {
            label: {"score": s.overall_score, "strengths": s.strengths, "weaknesses": s.weaknesses}
            for label, s in summaries.items()
        },
        "expectation_results": {
            label: {
                "passed": s.expectations.passed,
                "total": s.expectations.total,
                "pass_rate": s.expectations.pass_rate,
                "details": s.expectations.details,
            }
            for label, s in summaries.items()
        },
        "limitations": _limitations(versions, summaries, expectations) + list(extra_limitations),
    }
    return ComparisonResult(comparison=comparison, summaries=summaries, pairwise=pairwise, ranking=ranking)


# --- Validation ---------------------------------------------------------------------------------------------------


@cache
def comparison_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def comparison_errors(doc: object) -> list[str]:
    """Why `doc` is not a comparison in the seed's format: the JSON Schema, then what a schema cannot say
    (every label has its entries, the ranking is a permutation, the winner is first and untied)."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(comparison_schema())
    errors = [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    ]
    if errors:
        return errors
    labels = doc["versions_compared"]
    for section in ("rubric", "output_quality", "expectation_results"):
        present = sorted(k for k in doc[section] if k != "criteria")
        if present != sorted(labels):
            errors.append(f"{section}: has entries for {present}, expected {sorted(labels)}")
    if sorted(doc["ranking"]) != sorted(labels):
        errors.append("ranking: must list every compared version once")
    tied = {label for group in doc["ties"] for label in group}
    if not tied <= set(labels):
        errors.append("ties: names a version that was not compared")
    if doc["winner"] is not None and (doc["ranking"][0] != doc["winner"] or doc["winner"] in tied):
        errors.append("winner: must be first in the ranking and in no tie")
    if doc["winner"] is None and doc["ranking"] and doc["ranking"][0] not in tied:
        errors.append("winner: null although the first version is in no tie")
    criteria = doc["rubric"]["criteria"]
    for label in labels:
        entry = doc["rubric"].get(label, {})
        if sorted(entry.get("scores", {})) != sorted(criteria):
            errors.append(f"rubric/{label}/scores: must score exactly the criteria {criteria}")
        quality = doc["output_quality"].get(label, {})
        if quality and entry and quality.get("score") != entry.get("overall_score"):
            errors.append(f"output_quality/{label}/score: must equal rubric/{label}/overall_score")
        result = doc["expectation_results"].get(label, {})
        if result:
            if result["passed"] > result["total"] or len(result["details"]) != result["total"]:
                errors.append(f"expectation_results/{label}: passed, total and details disagree")
            expected_rate = round(result["passed"] / result["total"], 2) if result["total"] else None
            if result["pass_rate"] != expected_rate:
                errors.append(f"expectation_results/{label}/pass_rate: expected {expected_rate}")
    return errors


def validate_comparison(doc: object) -> None:
    errors = comparison_errors(doc)
    if errors:
        raise ValueError("comparison.json does not match the comparison format: " + "; ".join(errors[:5]))
