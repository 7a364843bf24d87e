"""The blind comparator's aggregation with stub verdicts: scaling, consistency, pairwise results, ranking
with ties and cycles, and the output format (seed blind-comparator.md, Process 3-6 and Output Format)."""

import copy

import pytest

from judgeapp.blind.core.comparator import (
    ComparisonImpossible,
    Pairwise,
    RunScore,
    VersionEvidence,
    assess_consistency,
    build_comparison,
    comparison_errors,
    rank,
    scale_to_ten,
    validate_comparison,
)

CRITERIA = ["correctness", "completeness", "organization", "usability"]


def run(name, scores, **kwargs):
    return RunScore(name, dict(zip(CRITERIA, scores)), **kwargs)


def version(label, *runs, **kwargs):
    return VersionEvidence(label, list(runs), **kwargs)


def compare(*versions, expectations=()):
    return build_comparison(criteria=CRITERIA, versions=list(versions), expectations=list(expectations))


# --- Step 3: scores ----------------------------------------------------------------------------------------


def test_scaling_reproduces_the_seeds_example_scores():
    result = compare(
        version("A", run("run-1", [4, 4, 4, 4])),
        version("B", run("run-1", [3, 3, 4, 3])),
        version("C", run("run-1", [5, 5, 4, 5])),
    )
    rubric = result.comparison["rubric"]
    assert (rubric["A"]["overall_score"], rubric["B"]["overall_score"], rubric["C"]["overall_score"]) == (8.0, 6.5, 9.5)
    assert rubric["C"]["scores"] == {"correctness": 5, "completeness": 5, "organization": 4, "usability": 5}
    assert result.comparison["output_quality"]["B"]["score"] == 6.5
    assert scale_to_ten(1) == 2 and scale_to_ten(5) == 10


def test_every_run_counts_in_a_versions_scores_failed_ones_included():
    result = compare(
        version("A", run("run-1", [5, 5, 5, 5]), run("run-2", [5, 5, 5, 5]), run("run-3", [2, 2, 2, 2], completed=False)),
        version("B", run("run-1", [4, 4, 4, 4])),
    )
    assert result.comparison["rubric"]["A"]["scores"]["correctness"] == 4  # (5 + 5 + 2) / 3, not the best run's 5


# --- Step 5: consistency -----------------------------------------------------------------------------------


def test_a_failing_run_lowers_consistency_and_the_overall_score():
    steady = compare(version("A", run("run-1", [4, 4, 4, 4]), run("run-2", [4, 4, 4, 4]), run("run-3", [4, 4, 4, 4])),
                     version("B", run("run-1", [3, 3, 3, 3])))
    flaky = compare(version("A", run("run-1", [4, 4, 4, 4]), run("run-2", [4, 4, 4, 4]),
                            run("run-3", [1, 1, 1, 1], completed=False)),
                    version("B", run("run-1", [3, 3, 3, 3])))
    assert steady.comparison["rubric"]["A"]["run_consistency"] == "high"
    assert flaky.comparison["rubric"]["A"]["run_consistency"] == "low"
    summary = flaky.summaries["A"]
    assert summary.overall_score == round(summary.combined - summary.consistency.penalty, 1) < summary.combined
    assert any("run-3 did not complete" in w for w in flaky.comparison["output_quality"]["A"]["weaknesses"])


def test_a_strong_average_over_unreliable_runs_ranks_below_a_steady_version():
    # A's mean equals B's, but one of A's runs is far off: A is penalised and B wins.
    result = compare(
        version("A", run("run-1", [5, 5, 5, 5]), run("run-2", [5, 5, 5, 5]), run("run-3", [2, 2, 2, 2])),
        version("B", run("run-1", [4, 4, 4, 4]), run("run-2", [4, 4, 4, 4]), run("run-3", [4, 4, 4, 4])),
    )
    assert result.summaries["A"].combined == result.summaries["B"].combined == 8.0
    assert result.comparison["rubric"]["A"]["run_consistency"] != "high"
    assert result.comparison["winner"] == "B"


@pytest.mark.parametrize(
    "overalls, completed, level",
    [
        ([8.0, 8.0, 8.5], [True, True, True], "high"),
        ([8.0, 7.0, 6.0], [True, True, True], "medium"),
        ([8.0, 8.0, 7.5], [True, True, False], "medium"),
        ([8.0, 8.0, 2.0], [True, True, False], "low"),
        ([8.0, 3.0], [True, True], "low"),
        ([8.0, 2.0], [True, False], "low"),
        ([8.0], [True], "high"),
        ([2.0], [False], "low"),
    ],
)
def test_consistency_levels(overalls, completed, level):
    assert assess_consistency(overalls, completed).level == level


# --- Step 4: expectations ----------------------------------------------------------------------------------


def test_an_expectation_passes_only_when_every_run_meets_it():
    result = compare(
        version("A", run("run-1", [4, 4, 4, 4], expectations=[True, True], evidence=["e1", "e2"]),
                run("run-2", [4, 4, 4, 4], expectations=[True, False], evidence=["e1", "missing"])),
        version("B", run("run-1", [4, 4, 4, 4], expectations=[True, True], evidence=["e1", "e2"])),
        expectations=["has steps", "has a rollback"],
    )
    a = result.comparison["expectation_results"]["A"]
    assert (a["passed"], a["total"], a["pass_rate"]) == (1, 2, 0.5)
    assert a["details"][1] == {"text": "has a rollback", "passed": False, "runs_passed": 1, "runs_total": 2,
                               "evidence": ["run-1: e2", "run-2: missing"]}


def test_expectations_are_secondary_evidence_they_decide_only_between_close_scores():
    close = compare(
        version("A", run("run-1", [4, 4, 4, 4], expectations=[False, False], evidence=["-", "-"])),
        version("B", run("run-1", [4, 4, 4, 4], expectations=[True, True], evidence=["+", "+"])),
        expectations=["x", "y"],
    )
    assert close.comparison["winner"] == "B"
    assert close.pairwise[0].basis == "expectations"
    apart = compare(
        version("A", run("run-1", [5, 5, 5, 5], expectations=[False, False], evidence=["-", "-"])),
        version("B", run("run-1", [3, 3, 3, 3], expectations=[True, True], evidence=["+", "+"])),
        expectations=["x", "y"],
    )
    assert apart.comparison["winner"] == "A" and apart.pairwise[0].basis == "overall_score"


# --- Step 6: ranking, ties and cycles ---------------------------------------------------------------------


def test_tied_evidence_gives_ties_and_no_winner():
    result = compare(
        version("A", run("run-1", [4, 4, 3, 4]), run("run-2", [4, 4, 3, 4])),
        version("B", run("run-1", [4, 4, 3, 4]), run("run-2", [4, 4, 3, 4])),
        version("C", run("run-1", [2, 2, 2, 2])),
    )
    doc = result.comparison
    assert doc["winner"] is None
    assert doc["ties"] == [["A", "B"]]
    assert doc["ranking"] == ["A", "B", "C"]
    assert "No winner" in doc["reasoning"] and "tied" in doc["reasoning"]
    assert comparison_errors(doc) == []


def test_cyclic_evidence_gives_ties_and_no_forced_winner():
    # Equal overall scores (8.0) and no expectations: each pair is decided by the criteria it wins, and
    # those results go round (a Condorcet cycle): B beats A, C beats B, A beats C.
    result = compare(
        version("A", run("run-1", [5, 4, 3, 4])),
        version("B", run("run-1", [3, 5, 4, 4])),
        version("C", run("run-1", [4, 3, 5, 4])),
        version("D", run("run-1", [2, 2, 2, 2])),
    )
    wins = {(p.winner, p.loser) for p in result.pairwise if p.winner and "D" not in (p.winner, p.loser)}
    assert wins == {("B", "A"), ("C", "B"), ("A", "C")}
    doc = result.comparison
    assert doc["winner"] is None
    assert doc["ties"] == [["A", "B", "C"]]
    assert doc["ranking"] == ["A", "B", "C", "D"]
    assert "cycle" in doc["reasoning"]
    assert comparison_errors(doc) == []


def test_a_cycle_below_a_clear_winner_keeps_the_winner():
    pairs = [
        Pairwise("A", "B", "a", "overall_score", ""), Pairwise("A", "C", "a", "overall_score", ""),
        Pairwise("A", "D", "a", "overall_score", ""), Pairwise("B", "C", "a", "criteria", ""),
        Pairwise("C", "D", "a", "criteria", ""), Pairwise("B", "D", "b", "criteria", ""),
    ]
    ranking = rank(["A", "B", "C", "D"], pairs)
    assert ranking.winner == "A"
    assert ranking.groups == [["A"], ["B", "C", "D"]]
    assert ranking.cycles == [["B", "C", "D"]]


def test_versions_nothing_orders_share_a_place():
    pairs = [Pairwise("A", "B", "equal", "none", ""), Pairwise("A", "C", "a", "overall_score", ""),
             Pairwise("B", "C", "equal", "none", "")]
    ranking = rank(["A", "B", "C"], pairs)
    assert ranking.groups == [["A", "B"], ["C"]] and ranking.winner is None


def test_a_clear_order_has_a_winner_and_no_ties():
    ranking = rank(["A", "B", "C"], [Pairwise("A", "B", "b", "overall_score", ""), Pairwise("A", "C", "a", "overall_score", ""),
                                     Pairwise("B", "C", "a", "overall_score", "")])
    assert ranking.ranking == ["B", "A", "C"] and ranking.ties == [] and ranking.winner == "B"


# --- Output format -----------------------------------------------------------------------------------------


def seed_example():
    return compare(
        version("A", run("run-1", [4, 4, 4, 4]), run("run-2", [4, 4, 4, 4])),
        version("B", run("run-1", [3, 3, 4, 3])),
        version("C", run("run-1", [5, 5, 4, 5])),
        expectations=[],
    ).comparison


def test_the_comparison_has_the_seeds_keys_in_the_seeds_order():
    doc = seed_example()
    assert list(doc) == ["method", "versions_compared", "winner", "ranking", "ties", "reasoning", "rubric",
                         "output_quality", "expectation_results", "limitations"]
    assert doc["method"] == "n_way" and doc["versions_compared"] == ["A", "B", "C"]
    assert list(doc["rubric"]) == ["criteria", "A", "B", "C"]
    assert list(doc["rubric"]["A"]) == ["scores", "overall_score", "run_consistency"]
    assert list(doc["output_quality"]["A"]) == ["score", "strengths", "weaknesses"]
    assert list(doc["expectation_results"]["A"]) == ["passed", "total", "pass_rate", "details"]
    validate_comparison(doc)


@pytest.mark.parametrize(
    "break_it, message",
    [
        (lambda d: d.pop("limitations"), "limitations"),
        (lambda d: d.update(extra=1), "extra"),
        (lambda d: d.update(winner="with_skill"), "winner"),
        (lambda d: d["rubric"]["A"].update(run_consistency="great"), "run_consistency"),
        (lambda d: d["rubric"]["A"]["scores"].update(correctness=6), "correctness"),
        (lambda d: d["rubric"]["A"].update(overall_score=11), "overall_score"),
        (lambda d: d["output_quality"].pop("B"), "output_quality"),
        (lambda d: d.update(ranking=["C", "A", "A"]), "ranking"),
        (lambda d: d.update(winner="A"), "winner"),
        (lambda d: d["rubric"]["B"]["scores"].pop("usability"), "rubric/B/scores"),
        (lambda d: d["output_quality"]["C"].update(score=9.0), "output_quality/C/score"),
        (lambda d: d.update(ties=[["A"]]), "ties"),
    ],
)
def test_the_schema_refuses_what_the_seeds_format_does_not_allow(break_it, message):
    doc = copy.deepcopy(seed_example())
    assert comparison_errors(doc) == []
    break_it(doc)
    errors = comparison_errors(doc)
    assert errors and any(message in e for e in errors), errors


def test_a_version_without_any_scored_run_makes_no_comparison():
    with pytest.raises(ComparisonImpossible, match="version B has no scored run"):
        compare(version("A", run("run-1", [4, 4, 4, 4])), version("B", RunScore("run-1", None, error="judge: parse failure")))


def test_unscored_runs_stray_and_binary_files_are_named_in_the_limitations():
    doc = compare(
        version(
            "A", run("run-1", [4, 4, 4, 4]), RunScore("run-2", None, error="judge: timed out"), stray_files=2, binary_files=1,
        ),
        version("B", run("run-1", [4, 4, 4, 4])),
    ).comparison
    text = " ".join(doc["limitations"])
    assert "Version A run-2 could not be scored (judge: timed out)" in text
    assert "2 file(s) outside its run-* directories" in text and "1 binary file(s)" in text
    assert "No expectations were given" in text
