"""A reviewer in headless Chromium: uploads candidates, watches the batch rank on a real worker, reads the
comparisons, inserts one more, runs a direct compare."""

import pytest
from django.contrib.auth.models import Group

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.roles import Role
from tests.browser.conftest import log_in
from tests.ranker.conftest import Oracle

pytestmark = [pytest.mark.browser, pytest.mark.slow]



@pytest.fixture
def roles(transactional_db):
    """The role groups (a data migration's rows; an earlier transactional test may have flushed them)."""
    for role in Role.values:
        Group.objects.get_or_create(name=role)


GOAL = "a postmortem that explains the root cause, the customer impact and concrete follow-up actions"


def test_reviewer_ranks_inserts_and_compares_in_the_browser(
    roles, page, reviewer, make_judge, worker_factory, tmp_path, screenshots
):
    oracle = Oracle()
    with FakeJudgeServer(DemoBrain(artifact_quality_fn=oracle, tie_margin=1e-9), latency=0.1) as slow:
        make_judge("comparator", server=slow, model="qwen2.5-7b-instruct")
        truth = oracle.write(tmp_path / "up", 12, seed=17)
        ranking = sorted(truth, key=truth.get, reverse=True)
        worker_factory(concurrency=2)
        log_in(page, "rita")

        page.goto("/ranker/")
        # Each form says what is known of its judge as soon as the page loads (htmx, its own region).
        for region in ("#rank-preflight", "#compare-preflight"):
            page.wait_for_selector(f"{region} .preflight-warnings li")
            assert "comparator is not calibrated" in page.locator(region).inner_text()
        page.screenshot(path=screenshots / "ranker-index.png", full_page=True)
        form = page.locator("#rank-form")
        form.locator("#id_goal").fill(GOAL)
        form.locator("#id_set_name").fill("postmortems")
        form.locator("#id_max_size").fill("5")
        form.locator("#id_files").set_input_files(sorted(str(p) for p in (tmp_path / "up").iterdir()))
        form.locator("button[type=submit]").click()
        page.wait_for_url("**/runs/*/")
        page.wait_for_selector('.progress[data-status="done"]', timeout=90_000)
        page.wait_for_selector("#ranklist tbody tr[data-artifact]")
        rows = page.locator("#ranklist tbody tr[data-artifact]")
        assert [rows.nth(i).get_attribute("data-artifact") for i in range(rows.count())] == ranking[:5]
        assert page.locator("details.insertion").count() == 12
        assert page.locator("details.insertion table.comparisons td").first.is_visible()
        page.screenshot(path=screenshots / "ranker-run-done.png", full_page=True)

        new = tmp_path / "new-best.md"
        oracle.add(new, "# New best\n\nThe best write-up of all.", 2.0)
        page.locator("#insert-form #id_file").set_input_files(str(new))
        page.locator("#insert-form button[type=submit]").click()
        page.wait_for_selector('#ranklist tbody tr[data-artifact="new-best.md"]:first-child', timeout=60_000)
        page.screenshot(path=screenshots / "ranker-after-insert.png", full_page=True)

        page.goto("/ranker/")
        form = page.locator("#compare-form")
        form.locator("#compare_goal").fill(GOAL)
        form.locator("#compare_file_a").set_input_files(str(tmp_path / "up" / ranking[-1]))
        form.locator("#compare_file_b").set_input_files(str(tmp_path / "up" / ranking[0]))
        form.locator("#compare_both_orders").check()
        form.locator("button[type=submit]").click()
        page.wait_for_url("**/runs/*/")
        page.wait_for_selector(".direct-compare .winner", timeout=60_000)
        assert page.locator(".direct-compare .winner").inner_text() == "B"
        page.screenshot(path=screenshots / "ranker-compare.png", full_page=True)


def test_a_bad_upload_shows_a_form_error_in_place(roles, page, reviewer, make_judge, screenshots, tmp_path):
    make_judge("comparator")
    log_in(page, "rita")
    page.goto("/ranker/")
    empty = tmp_path / "empty.md"
    empty.write_text("")
    form = page.locator("#rank-form")
    form.locator("#id_goal").fill(GOAL)
    form.locator("#id_set_name").fill("x")
    form.locator("#id_files").set_input_files(str(empty))
    form.locator("button[type=submit]").click()
    page.wait_for_selector("#rank-form .errorlist")
    errors = page.locator("#rank-form .errorlist")
    assert errors.count() == 1 and "empty" in errors.inner_text()
    assert page.url.endswith("/ranker/")  # swapped in place, no navigation
    page.screenshot(path=screenshots / "ranker-form-error.png", full_page=True)
