from judgeapp.core.pointwise import ScoredItem, gate_decision, summarize


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
