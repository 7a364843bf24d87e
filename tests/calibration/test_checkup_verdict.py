"""A check-up's verdict in words against the lead's floors (calibration/core/checkup.py, no Django)."""

from calibration.core.checkup import Floors, checkup_verdict


def figures(position=0.9, accuracy=0.9, kappa=0.8):
    """One set's figures as the report holds them."""
    return {
        "figures": {
            "position_consistency": {"value": position, "ci95": [0.0, 1.0], "n": 10, "method": "wilson"},
            "accuracy_consistent": {"value": accuracy, "ci95": [0.0, 1.0], "n": 10, "method": "wilson"},
            "accuracy_all": {"value": 0.0, "ci95": [0.0, 1.0], "n": 10, "method": "wilson"},  # not floored
            "kappa": {"value": kappa, "ci95": [-1.0, 1.0], "n": 10, "method": "bootstrap"},
        }
    }


def test_a_judge_at_or_above_every_floor_passes():
    verdict = checkup_verdict({"llmbar-natural": figures(position=0.6, accuracy=0.6, kappa=0.4)}, floors=Floors())
    assert verdict.passed and verdict.text == "passed" and verdict.failures == () and verdict.notes == ()


def test_a_judge_that_follows_the_position_fails_with_each_figure_below_its_floor_in_words():
    verdict = checkup_verdict({"llmbar-natural": figures(position=0.0, accuracy=0.0, kappa=0.1)}, floors=Floors())
    assert not verdict.passed
    assert verdict.text == (
        "failed: position consistency 0% (floor 60%); accuracy over consistent verdicts 0% (floor 60%); kappa 0.10 (floor 0.40)"
    )
    assert verdict.failures == (
        "position consistency 0% (floor 60%)", "accuracy over consistent verdicts 0% (floor 60%)", "kappa 0.10 (floor 0.40)",
    )


def test_with_several_sets_each_failure_names_its_set_and_a_set_that_passes_is_not_mentioned():
    sets = {"llmbar-natural": figures(position=0.4), "pandalm": figures(kappa=-0.08), "mt-bench-human": figures()}
    verdict = checkup_verdict(sets, floors=Floors())
    assert verdict.text == "failed: position consistency 40% (floor 60%) on llmbar-natural; kappa -0.08 (floor 0.40) on pandalm"
    assert "mt-bench-human" not in verdict.text


def test_the_lead_s_floors_decide():
    sets = {"pandalm": figures(position=0.7, accuracy=0.7, kappa=0.5)}
    assert checkup_verdict(sets, floors=Floors(position_consistency=0.75)).text == "failed: position consistency 70% (floor 75%)"
    assert checkup_verdict(sets, floors=Floors(kappa=0.625)).text == "failed: kappa 0.50 (floor 0.625)"
    assert checkup_verdict(sets, floors=Floors(position_consistency=0.0, accuracy_consistent=0.0, kappa=-1.0)).passed


def test_a_figure_just_below_its_floor_never_reads_as_equal_to_it():
    verdict = checkup_verdict({"s": figures(position=0.595, accuracy=0.5999, kappa=0.3996)}, floors=Floors())
    assert verdict.text == (
        "failed: position consistency 59.5% (floor 60%); accuracy over consistent verdicts 59.99% (floor 60%); kappa 0.3996 "
        "(floor 0.40)"
    )


def test_an_undefined_figure_fails_nothing_and_a_note_says_so():
    verdict = checkup_verdict({"mt-bench-human": figures(accuracy=None, kappa=None)}, floors=Floors())
    assert verdict.passed and verdict.text == "passed"
    assert verdict.notes == (
        "accuracy over consistent verdicts is undefined on mt-bench-human, so it was not compared with its floor (60%)",
        "kappa is undefined on mt-bench-human, so it was not compared with its floor (0.40)",
    )
    failed = checkup_verdict({"mt-bench-human": figures(position=0.0, accuracy=None)}, floors=Floors())
    assert failed.text == "failed: position consistency 0% (floor 60%)" and len(failed.notes) == 1


def test_an_invalid_check_up_fails_with_its_reason_whatever_its_figures():
    verdict = checkup_verdict(
        {"llmbar-natural": figures()}, floors=Floors(), invalid=True,
        invalid_reasons=["8 of 8 judge replies failed to parse after a retry; the figures count them as misses"],
    )
    assert not verdict.passed
    assert verdict.text == (
        "failed: the check-up is invalid (8 of 8 judge replies failed to parse after a retry; the figures count them as misses)"
    )
    assert checkup_verdict({}, floors=Floors(), invalid=True).text == "failed: the check-up is invalid"


def test_a_judge_s_record_holds_the_figures_bare_and_reads_the_same():
    bare = {"llmbar-natural": {"pairs": 10, **figures(position=0.0)["figures"]}}
    assert checkup_verdict(bare, floors=Floors()).text == "failed: position consistency 0% (floor 60%)"


def test_a_check_up_that_measured_no_set_does_not_pass():
    assert checkup_verdict({}, floors=Floors()).text == "failed: the check-up measured no set"


def test_the_defaults_are_the_issue_s_floors():
    assert Floors() == Floors(position_consistency=0.6, accuracy_consistent=0.6, kappa=0.4)
