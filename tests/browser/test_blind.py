"""Blind comparison (issue 7). A reviewer in headless Chromium: a leaky comparison stops on the leakage page, the sanitized one
runs on a real worker, the run page shows the blinded versions side by side, and the reveal shows the mapping."""

import pytest

from judgeapp.models import AuditLog, Run
from tests.blind.helpers import EXPECTATIONS, FAILED_RUN, MIDDLING, STRONG, TASK, WEAK, write_version
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_reviewer_stops_on_leakage_reruns_sanitized_and_reveals_after_the_verdict(
    page, reviewer, make_judge, make_system, worker_factory, screenshots, tmp_path, settings
):
    inbox = tmp_path / "inbox"
    write_version(inbox, "alpha-terse", [MIDDLING, MIDDLING, FAILED_RUN])
    write_version(inbox, "beta-stepwise", [STRONG, STRONG])
    write_version(inbox, "gamma-prose", single=WEAK)
    leaky = write_version(inbox, "with-skill", ["# Runbook\nWritten by support-bot-v2 from skills/runbooks/SKILL.md.\n"])
    settings.BROWSE_ROOTS = [inbox]
    make_judge("scripted")
    make_system("support-bot-v2")
    worker_factory(concurrency=2)

    log_in(page, "rita")
    page.click("text=Blind compare")
    page.click("text=New blind comparison")
    page.check("text=with-skill (1 run)")
    page.check("text=gamma-prose (1 run)")
    page.fill("#id_prompt", TASK)
    page.fill("#id_expectations", "\n".join(EXPECTATIONS))
    page.screenshot(path=screenshots / "blind-new.png", full_page=True)
    page.click("text=Check for leakage and compare")
    page.wait_for_selector("#leakage-flags")
    # The system's name, the skill path, and "skill" (the distinctive word of the version's name with-skill).
    assert page.locator("h1").inner_text() == "Stopped: 3 leakage flags"
    flags = page.locator("#leakage-flags").inner_text()
    assert "support-bot-v2" in flags and "skills/runbooks/SKILL.md" in flags and "run-1/runbook.md line 2" in flags
    assert "rule: known name, whole token" in flags and "rule: skill path" in flags
    page.screenshot(path=screenshots / "blind-leakage.png", full_page=True)
    assert not Run.objects.exists()

    # Sanitize, re-run from the prefilled form with the three clean versions instead.
    (leaky / "run-1" / "runbook.md").write_text("# Runbook\n1. Notify the on-call engineer.\n")
    page.click("#rerun")
    assert page.input_value("#id_prompt") == TASK
    assert page.is_checked("text=with-skill (1 run)")
    page.uncheck("text=with-skill (1 run)")
    page.check("text=alpha-terse (3 runs)")
    page.check("text=beta-stepwise (2 runs)")
    page.click("text=Check for leakage and compare")
    page.wait_for_selector("#blind-mapping")
    run = Run.objects.get()
    page.wait_for_selector(f'#progress-{run.run_id}[data-status="done"]', timeout=90_000)
    page.wait_for_selector("#blind-ranking")  # the page reloads once the run is done
    body = page.locator("main").inner_text()
    for real in ("alpha-terse", "beta-stepwise", "gamma-prose"):
        assert real not in body
    assert page.locator("#blind-versions .version").count() == 3
    page.screenshot(path=screenshots / "blind-run.png", full_page=True)
    page.locator("#blind-ranking").screenshot(path=screenshots / "blind-run-ranking.png")
    page.locator("#blind-rubric").screenshot(path=screenshots / "blind-run-rubric.png")
    page.locator("#blind-versions").screenshot(path=screenshots / "blind-run-versions.png")

    page.click("#reveal-mapping")
    page.wait_for_selector("#mapping-table")
    mapping = page.locator("#mapping-table").inner_text()
    assert "alpha-terse" in mapping and "beta-stepwise" in mapping and "gamma-prose" in mapping
    assert AuditLog.objects.filter(action="blind.mapping_revealed", actor=reviewer).count() == 1
    page.screenshot(path=screenshots / "blind-revealed.png", full_page=True)
