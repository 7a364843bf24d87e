"""Headless Chromium: a reviewer checks up a judge from the judges page; a real worker runs it; the run's
page shows the figures beside the published ones, and the judges page the latest check-up."""

import pytest

from tests.browser.conftest import log_in
from tests.checkup.oracles import LabelOracle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def roles(transactional_db):
    from django.contrib.auth.models import Group

    from judgeapp.roles import Role

    for role in Role.values:
        Group.objects.get_or_create(name=role)


def test_reviewer_checks_up_a_judge_from_the_judges_page(
    roles, page, make_user, make_judge, fake_judge, worker_factory, screenshots
):
    fake_judge.action = LabelOracle(noise=0.2)
    make_user("rita", "reviewer")
    make_judge("small-judge", model="qwen2.5-7b-instruct", family="qwen")
    worker_factory(concurrency=4)

    log_in(page, "rita")
    page.click("nav >> text=Judges")
    cell = page.locator("#checkup-small-judge")
    assert "never checked up" in cell.inner_text()
    cell.locator("input[name=sample]").fill("10")
    page.screenshot(path=screenshots / "checkup-judges-before.png", full_page=True)
    page.once("dialog", lambda dialog: dialog.accept())  # "Check up small-judge? About … calls to its endpoint …"
    cell.locator("text=Check up").click()
    page.wait_for_url("**/runs/*/")
    page.wait_for_selector('[data-status="done"]', timeout=180_000)
    page.wait_for_selector("#checkup-result", timeout=30_000)
    text = page.inner_text("main")
    assert "llmbar-natural" in text and "mt-bench-human" in text and "pandalm" in text
    assert "published" in text and "60 judgments called the judge" in text
    page.screenshot(path=screenshots / "checkup-run.png", full_page=True)

    page.click("nav >> text=Judges")
    cell = page.locator("#checkup-small-judge")
    cell_text = cell.inner_text()
    assert "never" not in cell_text and "llmbar-natural: accuracy" in cell_text
    # A judge wrong on a fifth of its calls agrees with itself across the two orders on half the pairs of
    # one set: below the default floors, so its check-up is shown failed, in red, with the figures that failed.
    assert "check-up failed" in cell_text and "checked up: passed" not in cell_text
    assert "failed: position consistency 50% (floor 60%) on llmbar-natural" in cell_text
    assert cell.locator(".badge.failed").evaluate("e => getComputedStyle(e).color") == "rgb(179, 38, 30)"  # var(--bad)
    page.screenshot(path=screenshots / "checkup-judges-after.png", full_page=True)


def test_reviewer_uploads_the_team_s_own_pairs_and_reads_their_figures_per_tag(
    roles, page, make_user, make_judge, fake_judge, worker_factory, screenshots, tmp_path
):
    from tests.checkup.test_own_sets import jsonl, thirty_pairs

    fake_judge.action = LabelOracle(noise=0.2)
    make_user("rita", "reviewer")
    make_judge("small-judge", model="qwen2.5-7b-instruct", family="qwen")
    worker_factory(concurrency=4)
    bad = tmp_path / "bad-pairs.jsonl"
    bad.write_text(jsonl(thirty_pairs()[:3]) + '{"input": "q", "output_1": "a", "output_2": "b", "label": 7}\n')
    ours = tmp_path / "our-pairs.jsonl"
    ours.write_text(jsonl(thirty_pairs()[:12]))

    log_in(page, "rita")
    page.click("nav >> text=Judges")
    cell = page.locator("#checkup-small-judge")
    cell.locator("input[name=own_set]").set_input_files(str(bad))
    page.once("dialog", lambda dialog: dialog.accept())
    cell.locator("text=Check up").click()
    page.wait_for_selector("main >> text=not started")
    assert "not started: bad-pairs.jsonl line 4: 'label' must be 1, 2 or \"tie\", got 7" in page.inner_text("main")

    cell = page.locator("#checkup-small-judge")
    cell.locator("input[name=own_set]").set_input_files(str(ours))
    page.once("dialog", lambda dialog: dialog.accept())
    cell.locator("text=Check up").click()
    page.wait_for_url("**/runs/*/")
    page.wait_for_selector('[data-status="done"]', timeout=180_000)
    page.wait_for_selector("#checkup-result", timeout=30_000)
    text = page.inner_text("main")
    assert "our-pairs.jsonl" in text and "the team's own labelled pairs" in text and "llmbar-natural" not in text
    assert "24 judgments called the judge" in text and "published:" not in text
    tags = page.locator("table.checkup-slices tr[data-tag]").evaluate_all("rows => rows.map(r => r.dataset.tag)")
    assert sorted(tags) == ["hard", "short"]
    page.screenshot(path=screenshots / "checkup-own-set.png", full_page=True)
