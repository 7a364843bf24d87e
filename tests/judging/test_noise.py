"""The pure noise figures of `--trials K` (judging/noise.py), each against an independent recomputation:
hand counts, statsmodels and scikit-learn called directly."""

import hashlib
import json
import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from judgeapp.judging.errors import InputError
from judgeapp.judging.judge_calls import JudgeOutcome, cache_key
from judgeapp.judging.noise import (
    MEAN,
    TIE_PASS_FAIL,
    NoiseItem,
    changed_share,
    flaky_lines,
    fleiss,
    majority,
    noise_report,
    pairwise_weighted_kappa,
    trial_band,
    trials_check,
    two_level_interval,
)
from judgeapp.judging.trials import combined

CATEGORICAL = [
    ["pass", "pass", "pass", "pass", "pass"],
    ["pass", "fail", "pass", "pass", "pass"],
    ["fail", "fail", "fail", "fail", "fail"],
    ["fail", "pass", "fail", "pass", "fail"],
    ["pass", "pass", "pass", "fail", "pass"],
    ["fail", "fail", "fail", "fail", "fail"],
]


def items_of(rows, criterion=""):
    return [NoiseItem(case_id=f"c{i}", criterion=criterion, verdicts=list(row)) for i, row in enumerate(rows)]


def test_the_majority_of_trials_and_what_a_tied_majority_gives():
    assert majority(["1", "1", "2"], tie="tie") == "1"
    assert majority(["1", "2"], tie="tie") == "tie"
    assert majority(["1", "2", "tie", "tie", "1"], tie="tie") == "tie"  # 1 and tie both twice: a tie
    assert majority(["pass", "fail"], tie=TIE_PASS_FAIL) == "fail"
    assert majority(["pass", "fail", None, "pass"], tie=TIE_PASS_FAIL) == "pass"  # a trial without a verdict is left out
    assert majority([None, None], tie="tie") is None


def test_changed_share_is_the_hand_count_with_statsmodels_wilson_interval():
    from statsmodels.stats.proportion import proportion_confint

    items = items_of(CATEGORICAL) + [NoiseItem("c9", "", ["pass", None, None, None, None])]  # one usable trial: not compared
    figures = changed_share(items)
    assert (figures["changed"], figures["items"]) == (3, 6)
    assert figures["share"] == 0.5
    low, high = proportion_confint(3, 6, alpha=0.05, method="wilson")
    assert figures["ci95"] == [round(low, 4), round(high, 4)]


def test_retest_agreement_is_fleiss_kappa_as_statsmodels_gives_it():
    coded = np.array([[0 if v == "fail" else 1 for v in row] for row in CATEGORICAL])
    expected = fleiss_kappa(aggregate_raters(coded)[0], method="fleiss")
    assert fleiss(CATEGORICAL) == pytest.approx(expected, abs=1e-4)
    assert -1 < expected < 1


def test_scores_retest_agreement_is_the_mean_quadratic_kappa_over_pairs_of_trials():
    rows = [[5, 5, 4], [3, 3, 3], [1, 2, 1], [4, 4, 5], [2, 2, 2]]
    columns = list(zip(*rows))
    pairs = [(0, 1), (0, 2), (1, 2)]
    expected = sum(cohen_kappa_score(columns[i], columns[j], weights="quadratic") for i, j in pairs) / 3
    assert pairwise_weighted_kappa(rows) == pytest.approx(expected, abs=1e-4)


def test_the_band_is_the_lowest_and_highest_trial_mean_and_flaky_says_so_in_words():
    items = items_of([[4, 4, 3], [3, 4, 4], [5, 5, 4]])
    assert trial_band(items, trials=3) == [pytest.approx(11 / 3, abs=1e-4), pytest.approx(13 / 3, abs=1e-4)]
    band = [3.62, 3.81]
    assert flaky_lines(band=band, threshold=3.7, baseline=None) == [
        "trial means ranged 3.62–3.81; the threshold 3.7 lies inside: flaky"
    ]
    assert flaky_lines(band=band, threshold=2.0, baseline=3.75) == [
        "trial means ranged 3.62–3.81; the baseline 3.75 lies inside: flaky"
    ]
    assert flaky_lines(band=band, threshold=2.0, baseline=4.5) == []


def test_the_two_level_interval_holds_the_mean_and_widens_with_trial_noise():
    rng = np.random.default_rng(1)
    truth = rng.integers(1, 6, size=40)
    steady = items_of([[int(t)] * 5 for t in truth])
    noisy = items_of([[int(min(5, max(1, t + d))) for d in rng.integers(-1, 2, size=5)] for t in truth])
    steady_ci, noisy_ci = two_level_interval(steady), two_level_interval(noisy)
    assert steady_ci[0] <= truth.mean() <= steady_ci[1]
    assert noisy_ci[1] - noisy_ci[0] > 0


def test_noise_report_is_none_for_one_trial_and_per_criterion_otherwise():
    assert noise_report(items_of([[3], [4]]), trials=1, rule=MEAN) is None
    items = items_of([[4, 4], [3, 5]], "tone") + items_of([[2, 2], [1, 1]], "helpfulness")
    report = noise_report(items, trials=2, rule=MEAN)
    assert report["verdict_used"] == "mean" and report["trials"] == 2
    assert set(report["per_criterion"]) == {"tone", "helpfulness"}
    assert report["per_criterion"]["tone"]["changed_share"]["share"] == 0.5
    assert report["changed_share"]["share"] == 0.25


@pytest.mark.parametrize("value", [0, 11, -1, 2.5, True])
def test_trials_outside_one_to_ten_are_refused_in_one_line(value):
    with pytest.raises(InputError) as refused:
        trials_check(value)
    assert "\n" not in str(refused.value) and "1 to 10" in str(refused.value)


def test_trial_one_keeps_the_cache_key_a_judgment_always_had_and_other_trials_get_their_own():
    messages, params = [{"role": "user", "content": "judge this"}], {"temperature": 0.0, "max_tokens": 64}
    before = hashlib.sha256(
        json.dumps(
            {"base_url": "http://x/v1", "model": "m", "messages": messages, "params": params},
            sort_keys=True, ensure_ascii=False, separators=(",", ":"),
        ).encode("utf-8")
    ).hexdigest()
    assert cache_key("http://x/v1/", "m", messages, params) == before
    assert cache_key("http://x/v1", "m", messages, params, trial=1) == before
    keys = {cache_key("http://x/v1", "m", messages, params, trial=t) for t in range(1, 6)}
    assert len(keys) == 5


def test_combined_trials_use_the_majority_and_keep_every_trial():
    def outcome(winner):
        return JudgeOutcome(
            parsed={"reasoning": "r", "winner": winner}, raw_reply="{}", messages=[], prompt_tokens=10, completion_tokens=2,
        )

    result = combined([outcome("1"), outcome("2"), outcome("2")], field="winner", rule="majority", tie="tie")
    assert result.parsed["winner"] == "2"
    assert [t["verdict"] for t in result.trials] == ["1", "2", "2"]
    assert result.prompt_tokens == 30 and result.completion_tokens == 6
    tied = combined([outcome("1"), outcome("2")], field="winner", rule="majority", tie="tie")
    assert tied.parsed["winner"] == "tie"
    scores = [JudgeOutcome(parsed={"score": s}, raw_reply="", messages=[]) for s in (4, 5, 5)]
    assert math.isclose(combined(scores, field="score", rule=MEAN).parsed["score"], 4.6667, abs_tol=1e-4)


def test_a_unit_taken_over_half_way_pays_only_for_the_trials_not_yet_in_the_cache():
    from fakejudge import FakeJudgeServer, Flip, ReplyJSON, Status, When
    from judgeapp.judging.client import JudgeClient
    from judgeapp.judging.judge_calls import EndpointConfig
    from judgeapp.judging.judge_errors import JudgeRejected
    from judgeapp.judging.parsing import PAIRWISE_SPEC
    from judgeapp.judging.trials import judge_trials
    from tests.helpers import MemoryCache

    answer = Flip(ReplyJSON({"reasoning": "r", "winner": "1"}), share=0.5, seed=2)
    down = {"on": True}
    with FakeJudgeServer(When(lambda r: down["on"] and len(server.chat_requests) > 3, Status(400), answer)) as server:
        client = JudgeClient(EndpointConfig(name="j", model="m", base_url=server.url, max_attempts=1), cache=MemoryCache())
        ask = {"judged": (), "trials": 5, "field": "winner", "tie": "tie"}
        with pytest.raises(JudgeRejected):  # the worker's fourth trial fails: the unit is not recorded
            judge_trials(client, [{"role": "user", "content": "which?"}], PAIRWISE_SPEC, **ask)
        assert len(server.chat_requests) == 4
        down["on"] = False
        outcome = judge_trials(client, [{"role": "user", "content": "which?"}], PAIRWISE_SPEC, **ask)
        # Taken over: trials 1-3 from the cache, trials 4 and 5 asked; every request the same request.
        assert len(server.chat_requests) == 6
        assert [t["cached"] for t in outcome.trials] == [True, True, True, False, False]
        assert len({json.dumps(r.body, sort_keys=True) for r in server.chat_requests}) == 1
        again = judge_trials(client, [{"role": "user", "content": "which?"}], PAIRWISE_SPEC, **ask)
        assert len(server.chat_requests) == 6 and again.cached and again.parsed == outcome.parsed
