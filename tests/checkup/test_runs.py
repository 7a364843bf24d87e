"""A check-up over real HTTP against the fake judge server: an oracle, a judge that always says "1", a
20%-noisy judge; the figures recomputed independently from the stored judgments; the response cache on a
re-run; truncated and unparsable replies; the latest check-up going stale when the judge changes."""

import hashlib
import json
from collections import Counter

import pytest
from sklearn.metrics import cohen_kappa_score

from fakejudge import PerConversation, ReplyJSON, When
from judgeapp.judging.pairs import map_back
from judgeapp.judging.selectors import latest_checkup_for_judge, latest_checkups_for_judges
from judgeapp.models import Judgment, Run, RunKind, RunStatus, UnitStatus
from tests.checkup.builders import checkup
from tests.checkup.oracles import LabelOracle, prompt_parts, truncated_reply

pytestmark = pytest.mark.django_db

FIGURES = ("accuracy_consistent", "accuracy_all", "accuracy_mean_of_orders", "position_consistency", "kappa")


def test_an_oracle_judge_scores_accuracy_and_consistency_one_on_every_set(judge, fake_judge):
    oracle = LabelOracle()
    fake_judge.action = oracle
    run = checkup(judge, sample=8, seed=3)
    assert run.status == RunStatus.DONE, run.error
    assert oracle.unknown == 0  # every prompt the judge saw was one of the public pairs
    assert run.report["set_order"] == ["llmbar-natural", "mt-bench-human", "pandalm"]
    assert set(run.report["sets"]) == set(run.report["set_order"])
    for name, entry in run.report["sets"].items():
        figures = entry["figures"]
        assert entry["counts"]["pairs"] == 8, name
        assert figures["accuracy_all"]["value"] == 1.0 and figures["accuracy_consistent"]["value"] == 1.0, name
        assert figures["position_consistency"]["value"] == 1.0 and figures["kappa"]["value"] == 1.0, name
    assert len(fake_judge.chat_requests) == 3 * 8 * 2  # every pair in both orders


def test_a_judge_that_always_says_1_is_never_consistent_and_never_right_over_all(judge, fake_judge):
    fake_judge.action = ReplyJSON({"reasoning": "The first reply is better.", "winner": "1"})
    run = checkup(judge, sets="llmbar-natural,mt-bench-human", sample=10)
    for name, entry in run.report["sets"].items():
        figures = entry["figures"]
        assert figures["position_consistency"]["value"] == 0.0 and figures["accuracy_all"]["value"] == 0.0, name
        assert figures["accuracy_consistent"]["value"] is None
        assert entry["position"]["followed_first"] == entry["position"]["inconsistent"] == 10
        assert entry["position"]["favours"] == "first"
        assert all(not c["consistent"] and c["verdict"] == "tie" for c in entry["cases"])


def expected_kappa(share_a: float, right: float, wrong: float) -> float:
    """Kappa expected of a judge right in both orders with probability `right`, wrong in both with `wrong`
    (a tie otherwise), against labels of which `share_a` are A."""
    judge_a = right * share_a + wrong * (1 - share_a)
    judge_b = right * (1 - share_a) + wrong * share_a
    chance = share_a * judge_a + (1 - share_a) * judge_b
    return (right - chance) / (1 - chance)


def test_a_20_percent_noisy_judge_lands_within_its_expected_interval(judge, fake_judge):
    # Each call is wrong with probability 0.2, independently: both orders right 0.64, both wrong 0.04,
    # the two orders disagreeing 0.32.
    fake_judge.action = LabelOracle(noise=0.2, seed=0)
    run = checkup(judge, sets="llmbar-natural,mt-bench-human", sample=50, seed=1)
    for name, entry in run.report["sets"].items():
        figures = entry["figures"]
        share_a = sum(c["label"] == "A" for c in entry["cases"]) / len(entry["cases"])
        expected = {
            "accuracy_all": 0.64,
            "accuracy_consistent": 0.64 / 0.68,
            "position_consistency": 0.68,
            "accuracy_mean_of_orders": 0.8,
            "kappa": expected_kappa(share_a, 0.64, 0.04),
        }
        for key, value in expected.items():
            low, high = figures[key]["ci95"]
            assert low <= value <= high, f"{name} {key}: expected {value:.3f} outside [{low:.3f}, {high:.3f}]"
        assert 0.4 < figures["position_consistency"]["value"] < 0.9  # noisy, not degenerate


def independent_figures(run: Run) -> dict[str, dict[str, float | None]]:
    """The figures recomputed from the stored judgments alone: plain counting and scikit-learn's kappa."""
    labels = {c.case_id: (c.extra["set"], c.extra["label"]) for c in run.testset.cases.all()}
    verdicts: dict[str, dict[str, str | None]] = {}
    for unit in Judgment.objects.filter(run=run).select_related("case"):
        winner = unit.parsed["winner"] if unit.status == UnitStatus.DONE else None
        verdicts.setdefault(unit.case.case_id, {})[unit.order] = map_back(unit.order, winner) if winner else None
    out = {}
    for name in run.report["sets"]:
        ids = [i for i in verdicts if labels[i][0] == name]
        gold = [labels[i][1] for i in ids]
        ab = [verdicts[i].get("ab") for i in ids]
        ba = [verdicts[i].get("ba") for i in ids]
        both = [a is not None and b is not None for a, b in zip(ab, ba)]
        agree = [ok and a == b for ok, a, b in zip(both, ab, ba)]
        right = [ok and a == g for ok, a, g in zip(agree, ab, gold)]
        pair_verdict = [("none" if not ok else a if a == b else "tie") for ok, a, b in zip(both, ab, ba)]
        out[name] = {
            "accuracy_consistent": sum(right) / sum(agree) if sum(agree) else None,
            "accuracy_all": sum(right) / len(ids),
            "accuracy_mean_of_orders": sum((a == g) + (b == g) for a, b, g in zip(ab, ba, gold)) / (2 * len(ids)),
            "position_consistency": sum(agree) / sum(both),
            "kappa": cohen_kappa_score(gold, pair_verdict),
        }
    return out


def byte_of(prompt: str) -> int:
    """A stable pseudo-random byte of a prompt (its retry has the same first message, so the same byte)."""
    return hashlib.sha256(prompt.encode()).digest()[0]


def test_one_check_ups_figures_equal_an_independent_computation_from_its_stored_judgments(judge, fake_judge):
    # Noise, a few ties and a few unparsable replies, so that every category of the kappa table is used.
    noisy = LabelOracle(noise=0.3, seed=4)
    tie = ReplyJSON({"reasoning": "Both are fine.", "winner": "tie"})
    garbage = ReplyJSON({"reasoning": "hmm", "winner": "both"})
    fake_judge.action = When(lambda r: byte_of(r.prompt) < 24, tie, When(lambda r: byte_of(r.prompt) < 48, garbage, noisy))
    run = checkup(judge, sets="llmbar-natural,pandalm", sample=25, seed=2)
    counted = Counter(u.status for u in Judgment.objects.filter(run=run))
    assert counted[UnitStatus.FAILED] > 0 and counted[UnitStatus.DONE] > 0
    mine = independent_figures(run)
    for name, entry in run.report["sets"].items():
        for key in FIGURES:
            theirs, ours = mine[name][key], entry["figures"][key]["value"]
            assert (theirs is None) == (ours is None), (name, key)
            if ours is not None:
                assert abs(theirs - ours) < 1e-9, (name, key, theirs, ours)
        ties = sum(c["verdict"] == "tie" for c in entry["cases"])
        assert ties and entry["counts"]["unjudged"], name  # the table really had tie and none rows


def test_rerunning_a_check_up_on_an_unchanged_judge_costs_no_call_and_the_report_says_so(judge, fake_judge):
    fake_judge.action = LabelOracle(noise=0.1)
    first = checkup(judge, sets="mt-bench-human", sample=6)
    calls = len(fake_judge.chat_requests)
    assert first.report["calls"]["called"] == 12 and first.report["calls"]["cached"] == 0
    second = checkup(judge, sets="mt-bench-human", sample=6)
    assert len(fake_judge.chat_requests) == calls  # not one request reached the judge
    assert second.report["calls"] == {**second.report["calls"], "judgments": 12, "called": 0, "cached": 12, "http_requests": 0}
    assert second.report["calls"]["summary"] == "no judge call made: all 12 judgments came from the response cache"
    assert second.report["sets"]["mt-bench-human"]["figures"] == first.report["sets"]["mt-bench-human"]["figures"]


def test_truncated_and_unparsable_replies_are_counted_and_too_many_make_the_check_up_invalid(judge, fake_judge):
    oracle = LabelOracle()
    # Every pair of one kind of message is cut at the token limit, and its retry too.
    fake_judge.action = When(lambda r: len(prompt_parts(r.prompt)[0]) % 3 == 0, truncated_reply, oracle)
    run = checkup(judge, sets="llmbar-natural", sample=20, seed=9)
    entry = run.report["sets"]["llmbar-natural"]
    cut = sum(1 for c in entry["cases"] if c.get("truncated"))
    assert cut, "the sample should hold some cut pairs"
    assert entry["counts"]["truncated"] == entry["counts"]["parse_failures"] == 2 * cut
    assert run.report["counts"]["truncated"] == 2 * cut and run.report["counts"]["unusable"] == 2 * cut
    assert entry["counts"]["unjudged"] == cut and entry["figures"]["accuracy_all"]["value"] == pytest.approx((20 - cut) / 20)
    assert run.status == RunStatus.INVALID and run.report["invalid"] is True
    assert "truncated" in run.report["invalid_reasons"][0]


def test_a_parse_failure_retried_into_a_verdict_is_not_a_failure(judge, fake_judge):
    fake_judge.action = PerConversation(ReplyJSON({"reasoning": "?", "winner": "maybe"}), LabelOracle())
    run = checkup(judge, sets="llmbar-natural", sample=5)
    entry = run.report["sets"]["llmbar-natural"]
    assert entry["counts"]["parse_failures"] == 0 and entry["figures"]["accuracy_all"]["value"] == 1.0
    assert run.status == RunStatus.DONE


def test_the_latest_check_up_is_part_of_the_judges_record_and_goes_stale_when_its_configuration_changes(
    judge, make_judge, fake_judge
):
    fake_judge.action = LabelOracle()
    other = make_judge("judge-b")
    assert latest_checkup_for_judge("judge-a") is None and latest_checkup_for_judge("no-such-judge") is None
    checkup(judge, sets="llmbar-natural", sample=3, run_id="checkup-1")
    checkup(judge, sets="llmbar-natural", sample=4, run_id="checkup-2")
    latest = latest_checkup_for_judge("judge-a")
    assert latest.run_id == "checkup-2" and latest.state == "current" and not latest.stale
    assert latest.checked_version == judge.version and latest.sets["llmbar-natural"]["accuracy_all"]["value"] == 1.0
    assert latest.sets["llmbar-natural"]["pairs"] == 4
    assert latest_checkups_for_judges(judges=[judge, other]) == {"judge-a": latest, "judge-b": None}

    judge.model = "another-model"  # the judges file changed: a new configuration, a new version
    judge.save()
    stale = latest_checkup_for_judge("judge-a")
    assert stale.stale and stale.state == "stale" and stale.current_version == judge.version != stale.checked_version
    assert latest_checkup_for_judge("judge-a", stale.checked_version).stale is False  # asked about the version it checked


def test_the_judge_sees_only_the_two_outputs_as_replies_1_and_2(judge, fake_judge):
    fake_judge.action = LabelOracle()
    run = checkup(judge, sets="pandalm", sample=2, seed=0)
    prompts = [r.prompt for r in fake_judge.chat_requests]
    assert len(prompts) == 4
    for text in prompts:
        assert "pandalm" not in text.lower() and "label" not in text.lower() and judge.name not in text
        assert "checkup-general-helpfulness" not in text  # the rubric's criteria go in, not its file name
        assert "Criterion: helpfulness" in text
    case = run.testset.cases.get(case_id=run.report["sets"]["pandalm"]["cases"][0]["case_id"])
    ab, ba = (Judgment.objects.get(run=run, case=case, order=o) for o in ("ab", "ba"))
    assert prompt_parts(ab.messages[0]["content"])[1:] == (case.extra["output_1"], case.extra["output_2"])
    assert prompt_parts(ba.messages[0]["content"])[1:] == (case.extra["output_2"], case.extra["output_1"])
    assert Run.objects.filter(kind=RunKind.CHECKUP).count() == 1
    assert json.loads(json.dumps(run.report)) == run.report
