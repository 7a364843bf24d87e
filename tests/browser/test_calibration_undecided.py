"""Headless Chromium: a judge whose agreement interval reaches across the level is `undecided` on the
calibration page and on the gate — with how many more labels would settle it, and the handling its figure used."""

import pytest
from django.urls import reverse

from calibration.services.agreement import agreement_compute
from calibration.services.labels import labels_import
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


def test_an_undecided_judge_says_how_many_labels_would_settle_it_on_the_calibration_page_and_the_gate(
    page, planted_run, lead, screenshots  # noqa: F811 - the fixture
):
    run = planted_run(scores_for(N))
    labels = [6 - s if i < 5 else s for i, s in enumerate(scores_for(N))]  # kappa 0.667, its interval across 0.6
    rows = [(run.run_id, f"c{i:03d}", "helpfulness", "ann", label) for i, label in enumerate(labels)]
    sample = labels_import(data=labels_csv(two_annotators(rows)), name="labels.csv").samples[0]
    agreement_compute(sample_pk=sample.pk)

    log_in(page, "leo")
    page.goto(reverse("calibration:overview"))
    row = page.locator('#judge-statuses tr[data-judge="planted-judge"]')
    assert row.locator('[data-calibration="undecided"]').count() == 1
    text = row.inner_text()
    assert "more labelled items would settle it, if the kappa stays near 0.67 — an estimate" in text
    assert "pooled labels, non-answers counted as disagreements" in text
    assert "warns on the gate" in text
    assert "pooled labels, non-answers counted as disagreements" in page.locator("table.sensitivity").first.inner_text()
    page.screenshot(path=screenshots / "undecided-1-calibration.png", full_page=True)

    page.goto(reverse("releases:gate", args=[run.run_id]))
    page.wait_for_selector("#gate-panel")
    assert "undecided" in page.locator("#gate-calibration").inner_text()
    page.screenshot(path=screenshots / "undecided-2-gate.png", full_page=True)
