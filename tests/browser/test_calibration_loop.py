"""Headless Chromium walks the recalibration loop a team lives in: a locked judge blocks the gate; a lead
runs a candidate prompt on the sample's labelled items, sees it beside the current judge, adopts it; the
run judged with the old prompt stays locked (its scope's lock), and a run with the adopted prompt passes."""

import pytest

from calibration.models import Candidate, JudgeLock
from calibration.services.agreement import agreement_compute
from calibration.services.labels import labels_import
from fakejudge import DemoBrain
from fakejudge.server import When, prompt_contains
from judgeapp.judging.runs import run_execute_inline
from tests.browser.conftest import log_in
from tests.calibration.conftest import (  # noqa: F401 - fixtures
    fast_bootstrap,
    labels_csv,
    planted_grade,
    planted_run,
    planted_server,
    scores_for,
    two_annotators,
)

pytestmark = pytest.mark.browser

N = 30
MARKER = "Read each point of the scale literally before you score."


def test_locked_judge_candidate_side_by_side_adopt_and_a_run_with_the_adopted_prompt_passes(
    page, planted_run, planted_server, lead, screenshots
):
    # The judge scores 'grade N' replies N; under the candidate's prompt it scores 6 - N, as the people do.
    planted_server.action = When(
        prompt_contains(MARKER), DemoBrain(quality=lambda reply, message="": 1 - planted_grade(reply)),
        DemoBrain(quality=planted_grade)
    )
    run = planted_run(scores_for(N))
    rows = [(run.run_id, f"c{i:03d}", "helpfulness", "ann", 6 - s) for i, s in enumerate(scores_for(N))]
    sample = labels_import(data=labels_csv(two_annotators(rows)), name="labels.csv").samples[0]
    agreement_compute(sample_pk=sample.pk)  # what the worker's agreement task does when the labels commit
    assert JudgeLock.objects.get().locked

    log_in(page, "leo")
    page.goto(_gate_path(run.run_id))
    page.wait_for_selector("#gate-panel")
    assert page.locator("#gate-panel").get_attribute("data-passed") == "false"
    assert "below level — locked" in page.locator("#gate-calibration").inner_text()
    page.screenshot(path=screenshots / "loop-1-gate-locked.png", full_page=True)

    page.goto(f"/calibration/samples/{sample.uuid}/")
    page.click("#candidates-link")
    page.click("text=New candidate")
    prompt = page.locator("#id_prompt_text")
    prompt.fill(MARKER + "\n\n" + prompt.input_value())
    page.fill("#id_label", "literal scale")
    page.click("#candidate-form button[type=submit]")
    page.wait_for_url(f"**/calibration/samples/{sample.uuid}/candidates/")
    candidate = Candidate.objects.get()
    assert candidate.run.status == "queued"  # sent to the workers; here the test does a worker's part
    run_execute_inline(run=candidate.run)
    column = page.locator(f'[data-column="{candidate.uuid}"]')
    column.locator(".badge.done").wait_for()  # the board polls until the candidate's run is done
    assert candidate.run.calibration_candidate.changes == ["prompt"]
    assert "1.000" in column.locator('[data-metric="quadratic_kappa"]').inner_text()
    assert "-1.000" in page.locator('[data-column="current"] [data-metric="quadratic_kappa"]').inner_text()
    assert page.locator("table.confusion").count() == 2
    page.screenshot(path=screenshots / "loop-2-side-by-side.png", full_page=True)

    column.locator("input[name=reason]").fill("the literal reading agrees with the people")
    column.locator("button", has_text="Adopt this candidate").click()
    page.wait_for_selector(".column.adopted")
    page.screenshot(path=screenshots / "loop-3-adopted.png", full_page=True)

    # The run judged with the old prompt keeps that prompt's lock: the candidate's agreement speaks for its own prompt.
    page.goto(_gate_path(run.run_id))
    page.wait_for_selector("#gate-panel")
    assert page.locator("#gate-panel").get_attribute("data-passed") == "false"
    assert "below level — locked" in page.locator("#gate-calibration").inner_text()
    page.screenshot(path=screenshots / "loop-4-old-prompt-still-locked.png", full_page=True)

    adopted = planted_run(scores_for(N), run_id="with-adopted-prompt", prompt_text=candidate.run.versions["prompt"])
    page.goto(_gate_path(adopted.run_id))
    page.wait_for_selector("#gate-panel")
    assert page.locator("#gate-panel").get_attribute("data-passed") == "true"
    assert "calibrated" in page.locator("#gate-calibration").inner_text()
    page.screenshot(path=screenshots / "loop-5-adopted-prompt-passes.png", full_page=True)


def _gate_path(run_id: str) -> str:
    from django.urls import reverse

    return reverse("releases:gate", args=[run_id])
