"""A lead, in headless Chromium: two releases, a lock that comes later, the releases page that keeps each
release as it was decided, and a candidate compared with the last release case by case, regressions first."""

import json

import pytest

from judgeapp.judging import content, runs
from judgeapp.releases.services import release_mark
from tests.browser.conftest import log_in
from tests.factories import BAD_REPLY, GOOD_REPLY, RUBRIC_TWO, judge_locked

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def finished(judge, system, replies, name):
    rows = [
        {"id": f"c{i:03d}", "input": f"I can't reset my password (ticket {i}).", "output": reply} for i,
        reply in enumerate(replies)
    ]
    run = runs.run_create(
        kind="pointwise", executor="inline", judge=judge, system=system,
        testset=content.testset_store(data="\n".join(json.dumps(r) for r in rows).encode(), name=name),
        rubric=content.rubric_store(data=RUBRIC_TWO, name="rubric.toml"), prompt=content.prompt_register(prompt="pointwise"),
        options={"threshold": 1.0},
    )
    return runs.run_execute_inline(run=run, concurrency=4)


def test_releases_keep_their_decision_and_the_comparison_shows_regressions_first(
    page, transactional_db, lead, make_judge, make_system, screenshots
):
    judge = make_judge("qwen-judge", model="qwen2.5-7b-instruct", family="qwen")
    system = make_system("support-bot")
    v1 = finished(judge, system, [GOOD_REPLY] * 5 + [BAD_REPLY] * 3, "support-v1")
    release_mark(run=v1, actor=lead, label="v1.0")
    v2 = finished(judge, system, [GOOD_REPLY] * 8, "support-v2")
    release_mark(run=v2, actor=lead, label="v2.0")
    # Later, people's labels lock the judge (in the scope every run here is judged in).
    judge_locked(v2)
    candidate = finished(judge, system, [BAD_REPLY, GOOD_REPLY, BAD_REPLY] + [GOOD_REPLY] * 5, "support-v3")

    log_in(page, "leo")
    page.goto("/pointwise/releases/")
    v1_row = page.locator('#releases tbody[data-release="v1.0"]')
    # v1.0 was decided passed, and it stays so: the later release and the lock are dated notes beside it.
    assert v1_row.locator(".verdict").inner_text() == "gate passed"
    notes = v1_row.locator(".release-note").all_inner_texts()
    assert any("superseded by v2.0" in n for n in notes)
    assert any("this release was gated by a judge now below level" in n for n in notes)
    assert page.locator("#release-trend circle[fill='#b3261e']").count() == 0
    page.screenshot(path=screenshots / "releases-as-decided.png", full_page=True)

    # The candidate's gate: compared with v2.0 on the same cases, blocked, linking to the comparison.
    page.goto(f"/pointwise/runs/{candidate.run_id}/gate/")
    assert page.locator(".gate-status").inner_text() == "BLOCKED"
    assert "shared with support-bot's release v2.0" in page.locator("#gate-reasons").inner_text()
    page.screenshot(path=screenshots / "gate-baseline.png", full_page=True)
    page.click("#compare-baseline")
    page.wait_for_selector("#compare-table")
    first_rows = page.locator("#compare-table tbody tr")
    assert first_rows.first.get_attribute("class") == "worse"
    worst = [first_rows.nth(i).locator("td").first.inner_text() for i in range(4)]
    assert set(worst) == {"c000", "c002"}
    assert "2 worse" in page.locator("#compare-summary").inner_text()
    page.screenshot(path=screenshots / "compare-runs.png", full_page=True)
    # Filtered to one criterion.
    page.select_option("#id_criterion", "tone")
    page.click("#compare-form button[type=submit]")
    page.wait_for_url("**criterion=tone**")
    criteria = set(page.locator("#compare-table tbody tr td:nth-child(2)").all_inner_texts())
    assert criteria == {"tone"}
