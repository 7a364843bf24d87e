from judgeapp.pointwise.core import ScoredItem, summarize
from judgeapp.releases.core import gate_decision


def test_stub_judge_4_5_2_5_mean_is_exactly_4_and_gate_passes():
    """The seed's test: scores 4, 5, 2, 5, threshold 3.5, previous release mean 3.9."""
    scores = iter([4, 5, 2, 5])

    def stub_judge(case_input: str) -> int:
        return next(scores)

    items = [ScoredItem(case_id=f"c{i}", criterion="quality", score=stub_judge(f"input {i}")) for i in range(4)]
    report = summarize(items)
    gate = gate_decision(mean=report["mean"], threshold=3.5, baseline_mean=3.9, invalid=report["invalid"])
    assert report["mean"] == 4.0
    assert gate["passed"] is True
    assert gate["reasons"] == []


def test_more_than_five_percent_parse_failures_make_the_run_invalid_and_block():
    items = [ScoredItem(f"c{i}", "q", 5) for i in range(18)]
    items += [ScoredItem(f"c{i}", "q", None, parse_error="no JSON object") for i in (18, 19)]
    report = summarize(items)
    assert report["parse_failures"] == 2
    assert report["parse_failure_rate"] == 0.1
    assert report["invalid"] is True
    gate = gate_decision(mean=report["mean"], threshold=1, baseline_mean=None, invalid=True)
    assert gate["passed"] is False and "the run is invalid" in gate["reasons"]


def test_exactly_five_percent_is_still_valid():
    items = [ScoredItem(f"c{i}", "q", 4) for i in range(19)] + [ScoredItem("c19", "q", None, parse_error="x")]
    assert summarize(items)["invalid"] is False


def test_gate_blocks_below_the_last_released_mean():
    gate = gate_decision(mean=3.8, threshold=3.5, baseline_mean=3.9, invalid=False)
    assert gate["passed"] is False
    assert "below the last released mean" in gate["reasons"][0]


def test_histogram_and_lowest_cases():
    items = [ScoredItem("a", "q", 1, "bad"), ScoredItem("b", "q", 5, "good"), ScoredItem("c", "q", 3, "ok")]
    report = summarize(items, lowest_n=2)
    assert report["histogram"] == {"1": 1, "2": 0, "3": 1, "4": 0, "5": 1}
    assert [x["case_id"] for x in report["lowest"]] == ["a", "c"]


def test_bootstrap_interval_contains_the_mean_and_narrows_with_more_cases():
    from judgeapp.pointwise.core import bootstrap_mean_ci

    few = bootstrap_mean_ci([4, 5, 2, 5])
    many = bootstrap_mean_ci([4, 5, 2, 5] * 50)
    assert few[0] <= 4.0 <= few[1] and many[0] <= 4.0 <= many[1]
    assert (many[1] - many[0]) < (few[1] - few[0])
    assert bootstrap_mean_ci([4, 5, 2, 5]) == few  # seeded: the same scores give the same report


def test_bootstrap_interval_of_identical_scores_is_the_point_and_of_one_score_is_none():
    from judgeapp.pointwise.core import bootstrap_mean_ci

    assert bootstrap_mean_ci([3, 3, 3]) == [3.0, 3.0]
    assert bootstrap_mean_ci([3]) is None


def test_overall_interval_resamples_cases_not_single_scores():
    """Three criteria that always agree are one observation per case, not three."""
    from judgeapp.pointwise.core import bootstrap_mean_ci

    scores = [1, 5, 2, 4, 5, 1, 3, 5]
    items = [ScoredItem(f"c{i}", criterion, s) for i, s in enumerate(scores) for criterion in ("a", "b", "c")]
    report = summarize(items)
    per_case = report["mean_ci95"]
    naive = bootstrap_mean_ci(scores * 3)
    assert (per_case[1] - per_case[0]) > (naive[1] - naive[0])
    assert report["per_criterion_ci95"]["a"] == bootstrap_mean_ci(scores)


def test_lowest_items_link_to_their_judgment_and_histograms_cover_each_criterion():
    items = [ScoredItem("a", "q", 2, "meh", ref="u-1"), ScoredItem("a", "t", 4, "ok", ref="u-2")]
    report = summarize(items, scale=(1, 5))
    assert report["lowest"][0] == {"case_id": "a", "criterion": "q", "score": 2, "reasoning": "meh", "judgment": "u-1"}
    assert report["histogram_per_criterion"] == {
        "q": {"1": 0, "2": 1, "3": 0, "4": 0, "5": 0}, "t": {"1": 0, "2": 0, "3": 0, "4": 1, "5": 0},
    }


def test_markdown_summary_leads_with_the_gate_and_lists_the_lowest_cases():
    from judgeapp.pointwise.core import report_markdown

    items = [ScoredItem("c1", "q", 5, "fine"), ScoredItem("c2", "q", 1, "rude | wrong\nreply")]
    report = {"run_id": "r1", **summarize(items)}
    report["gate"] = gate_decision(mean=report["mean"], threshold=3.5, baseline_mean=None, invalid=False)
    report |= {
        "warnings": ["same family"], "versions": {"testset": "abc"}, "judge": {"model": "m", "family": "f", "temperature": 0.0},
    }
    markdown = report_markdown(report)
    assert markdown.startswith("## Pointwise evaluation `r1`: gate BLOCKED")
    assert "- mean 3.000 is below the threshold 3.5" in markdown
    assert "| c2 | q | 1 | rude \\| wrong reply |" in markdown  # one table row, pipes escaped
    assert "> ⚠ same family" in markdown
