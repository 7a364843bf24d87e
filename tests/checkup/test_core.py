"""The check-up's figures from plain cases (no server, no database): what a user reads in the report."""

import random
from pathlib import Path

import pytest
from django.conf import settings
from sklearn.metrics import cohen_kappa_score

from judgeapp.checkup.core import (
    CheckupCase,
    cohen_kappa,
    load_pairs,
    pandalm_gpt35_reference,
    parse_sets,
    sample_pairs,
    set_figures,
    verdict_category,
    wilson,
)
from judgeapp.judging.errors import InputError

DATASETS = Path(settings.BASE_DIR) / "datasets"


def cases_from(rows):
    return [CheckupCase(case_id=f"c{i}", label=label, ab=ab, ba=ba) for i, (label, ab, ba) in enumerate(rows)]


def test_a_judge_that_knows_every_label_scores_one_on_every_figure():
    figures = set_figures(cases_from([("A", "A", "A"), ("B", "B", "B"), ("A", "A", "A"), ("B", "B", "B")]))
    values = {k: f["value"] for k, f in figures["figures"].items()}
    assert values == {"accuracy_consistent": 1.0, "accuracy_all": 1.0, "accuracy_mean_of_orders": 1.0,
                      "position_consistency": 1.0, "kappa": 1.0}
    assert figures["position"]["inconsistent"] == 0 and figures["position"]["favours"] is None


def test_a_judge_that_always_picks_reply_1_disagrees_with_itself_on_every_pair():
    # "1" in both orders: output 1 when it is shown first (ab), output 2 when it is (ba).
    figures = set_figures(cases_from([("A", "A", "B"), ("B", "A", "B"), ("A", "A", "B"), ("B", "A", "B")]))
    f = figures["figures"]
    assert f["position_consistency"]["value"] == 0.0 and f["accuracy_all"]["value"] == 0.0
    assert f["accuracy_consistent"]["value"] is None  # no consistent verdict to be right about
    assert f["accuracy_mean_of_orders"]["value"] == 0.5  # right in exactly one order of every pair
    assert f["kappa"]["value"] == 0.0  # every pair a tie, a verdict no person gave
    assert figures["position"] == {
        **figures["position"], "inconsistent": 4, "followed_first": 4, "followed_second": 0, "favours": "first",
    }
    assert all(c["followed"] == "first" for c in figures["cases"])


def test_disagreements_and_unjudged_pairs_are_misses_over_all_but_not_over_consistent_verdicts():
    cases = cases_from([("A", "A", "A"), ("B", "B", "B"), ("A", "B", "B"), ("A", "A", "tie"), ("B", None, "B")])
    figures = set_figures(cases)
    f, counts = figures["figures"], figures["counts"]
    assert (counts["pairs"], counts["judged"], counts["consistent"], counts["correct"], counts["unjudged"]) == (5, 4, 3, 2, 1)
    assert f["accuracy_consistent"]["value"] == pytest.approx(2 / 3)
    assert f["accuracy_all"]["value"] == pytest.approx(2 / 5)
    assert f["position_consistency"]["value"] == pytest.approx(3 / 4)  # the unjudged pair says nothing about position
    assert figures["position"]["mixed"] == 1 and figures["position"]["favours"] is None


def test_an_agreed_tie_is_consistent_but_a_miss():
    figures = set_figures(cases_from([("A", "tie", "tie"), ("B", "B", "B")]))
    assert figures["counts"]["agreed_ties"] == 1
    assert figures["figures"]["position_consistency"]["value"] == 1.0
    assert figures["figures"]["accuracy_consistent"]["value"] == 0.5


def test_shares_carry_wilson_intervals_that_hold_the_value_and_narrow_with_more_pairs():
    small, large = wilson(8, 10), wilson(80, 100)
    assert small["ci95"][0] < 0.8 < small["ci95"][1] and large["ci95"][0] < 0.8 < large["ci95"][1]
    assert large["ci95"][1] - large["ci95"][0] < small["ci95"][1] - small["ci95"][0]
    assert wilson(10, 10)["ci95"][1] == pytest.approx(1.0) and wilson(10, 10)["ci95"][0] < 1.0  # not a zero-width interval
    assert wilson(0, 0) == {**wilson(0, 0), "value": None, "ci95": None}


def test_kappa_equals_scikit_learns_with_ties_and_unjudged_pairs():
    rng = random.Random(7)
    for _ in range(20):
        labels = [rng.choice("AB") for _ in range(60)]
        verdicts = [rng.choice(["A", "B", "tie", "none", label, label]) for label in labels]
        assert cohen_kappa(labels, verdicts) == pytest.approx(cohen_kappa_score(labels, verdicts), abs=1e-12)


def test_kappa_interval_is_a_reproducible_bootstrap_around_the_value():
    rng = random.Random(3)
    rows = [(label, label if rng.random() < 0.8 else "B" if label == "A" else "A", None) for label in rng.choices("AB", k=80)]
    cases = [CheckupCase(case_id=f"c{i}", label=label, ab=v, ba=v) for i, (label, v, _) in enumerate(rows)]
    first, again = set_figures(cases)["figures"]["kappa"], set_figures(cases)["figures"]["kappa"]
    assert first == again and "bootstrap" in first["method"]
    assert first["ci95"][0] < first["value"] < first["ci95"][1]
    assert first["value"] == pytest.approx(
        cohen_kappa_score([c.label for c in cases], [verdict_category(c.verdict) for c in cases])
    )


def test_the_three_public_sets_load_with_their_human_labels():
    natural, mt_bench, pandalm = (load_pairs(name, DATASETS) for name in ("llmbar-natural", "mt-bench-human", "pandalm"))
    assert (len(natural), len(mt_bench)) == (100, 200)
    assert natural[0].case_id == "llmbar-natural/0" and natural[0].label in ("A", "B")
    # PandaLM: 999 pairs, three people each; the 105 whose majority is a tie have nothing to be right about.
    assert len(pandalm) == 894 and {p.label for p in pandalm} == {"A", "B"}
    assert all(isinstance(p.output_1, str) and isinstance(p.output_2, str) for p in pandalm)


def test_pandalm_labels_are_the_majority_of_three_annotators(tmp_path):
    (tmp_path / "pandalm").mkdir()
    rows = [
        {
            "idx": 1, "instruction": "Say hi.", "input": "", "response1": "hi", "response2": "bye", "annotator1": 1,
            "annotator2": 1, "annotator3": 2,
        },
        {
            "idx": 2, "instruction": "Say hi.", "input": "politely", "response1": "hi", "response2": "hello", "annotator1": 2,
            "annotator2": 0, "annotator3": 2,
        },
        {
            "idx": 3, "instruction": "Say hi.", "input": "", "response1": "a", "response2": "b", "annotator1": 0, "annotator2": 0,
            "annotator3": 1,
        },
        {
            "idx": 4, "instruction": "Say hi.", "input": "", "response1": "a", "response2": "b", "annotator1": 0, "annotator2": 1,
            "annotator3": 2,
        },
    ]
    (tmp_path / "pandalm" / "testset-v1.json").write_text(__import__("json").dumps(rows))
    pairs = load_pairs("pandalm", tmp_path)
    assert [(p.case_id, p.label) for p in pairs] == [("pandalm/1", "A"), ("pandalm/2", "B")]
    assert pairs[1].input == "Say hi.\n\nInput: politely"


def test_gpt35s_published_pandalm_verdicts_are_scored_like_a_judge_on_the_same_pairs():
    pairs = load_pairs("pandalm", DATASETS)[:200]
    refs = {r["figure"]: r for r in pandalm_gpt35_reference(DATASETS, pairs)}
    assert refs["accuracy_all"]["label"] == "computed here from published verdicts" and 0.4 < refs["accuracy_all"]["value"] < 0.9
    assert "200 pairs" in refs["accuracy_all"]["how"] and refs["kappa"]["who"] == "GPT-3.5"


def test_sets_are_named_checked_and_deduplicated():
    assert parse_sets(None) == ["llmbar-natural", "mt-bench-human", "pandalm"]
    assert parse_sets("pandalm, llmbar-natural,pandalm") == ["pandalm", "llmbar-natural"]
    with pytest.raises(InputError, match="unknown set 'llmbar-adversarial': choose from llmbar-natural"):
        parse_sets("llmbar-natural,llmbar-adversarial")
    with pytest.raises(InputError, match="--set is empty"):
        parse_sets(" , ")


def test_the_sample_is_drawn_by_seed_from_each_set_and_a_small_set_is_taken_whole():
    pairs = load_pairs("llmbar-natural", DATASETS)
    first, again, other = (sample_pairs(pairs, sample=10, seed=s) for s in (5, 5, 6))
    assert [p.case_id for p in first] == [p.case_id for p in again] != [p.case_id for p in other]
    assert len(first) == 10 and sample_pairs(pairs, sample=500, seed=1) == pairs


def test_a_missing_or_malformed_set_is_one_line(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_pairs("llmbar-natural", tmp_path)
    (tmp_path / "llmbar").mkdir()
    (tmp_path / "llmbar" / "natural.json").write_text('[{"input": "x", "output_1": "a", "output_2": "b", "label": 3}]')
    with pytest.raises(InputError, match="'label' must be 1 or 2, got 3"):
        load_pairs("llmbar-natural", tmp_path)
