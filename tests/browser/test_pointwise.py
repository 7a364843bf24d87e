"""A lead, in headless Chromium: starts a pointwise run from evals/, watches it on a real worker, reads the
report with its histogram, drills into a judgment, then approves and releases on the gate page."""

import pytest

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.models import AuditLog, GateDecision, Release, Run
from tests.browser.conftest import log_in
from tests.helpers import support_inputs_stored

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_lead_runs_reads_the_report_and_releases(page, lead, make_judge, make_system, worker_factory, screenshots, tmp_path):
    import json

    from django.conf import settings

    # support-bot's outputs: the replies the test set file carries, given as the system's own (a run labelled
    # with a system never judges the test set's outputs).
    rows = (settings.BASE_DIR / "evals" / "support" / "testset.jsonl").read_text(encoding="utf-8").splitlines()
    outputs = tmp_path / "support-bot.jsonl"
    outputs.write_text(
        "".join(json.dumps({"id": json.loads(r)["id"], "output": json.loads(r)["output"]}) + "\n" for r in rows if r.strip())
    )
    with FakeJudgeServer(DemoBrain(), latency=0.15) as slow:
        make_judge("qwen-judge", model="qwen2.5-7b-instruct", family="qwen", server=slow, max_concurrency=4)
        make_system("support-bot", model="gpt-4o-mini", family="openai")
        worker_factory(concurrency=4)
        log_in(page, "leo")

        support_inputs_stored()  # what the demo loads from evals/
        page.goto("/pointwise/")
        page.select_option("#id_testset", label="support (v1, 24 cases)")
        page.select_option("#id_rubric", label="support-quality (v1)")
        page.select_option("#id_system", label="support-bot")
        page.set_input_files("#id_outputs_file", str(outputs))
        page.fill("#id_threshold", "3.0")
        page.fill("#id_title", "Nightly support-quality check")
        page.screenshot(path=screenshots / "pointwise-new.png", full_page=True)
        page.get_by_role("button", name="Start the evaluation").click()

        run = Run.objects.get()
        page.wait_for_url(f"**/runs/{run.run_id}/")
        progress = page.locator(f"#progress-{run.run_id}")
        progress.wait_for()
        page.screenshot(path=screenshots / "pointwise-running.png", full_page=True)
        # The finished run reloads its page once, with the report.
        page.wait_for_selector("#histogram", timeout=90_000)
        run.refresh_from_db()
        assert run.status == "done", run.error
        bars = page.locator("#histogram a.col")
        assert bars.count() == 5
        counts = [int(bars.nth(i).get_attribute("data-count")) for i in range(5)]
        assert sum(counts) == 72 == sum(run.report["histogram"].values())
        assert page.locator("#lowest tbody tr").count() == 10
        page.wait_for_selector("#gate-panel[data-passed]")  # loaded by htmx
        page.wait_for_selector("#judgment-list table")
        page.screenshot(path=screenshots / "pointwise-report.png", full_page=True)

        # Drill into the lowest case's judgment: prompt, raw reply, parsed score, attempts.
        page.locator("#lowest tbody tr").first.locator("a").click()
        page.wait_for_selector("text=Raw reply")
        assert "<assistant_reply>" in page.content().replace("&lt;", "<").replace("&gt;", ">")
        page.screenshot(path=screenshots / "pointwise-judgment.png", full_page=True)

        # The histogram's lowest bar filters the judgments.
        page.go_back()
        page.locator('#histogram a.col[data-score="1"]').click()
        page.wait_for_selector("#judgment-list")
        assert page.locator("#judgment-list tbody tr").count() == run.report["histogram"]["1"]

        page.goto(f"/pointwise/runs/{run.run_id}/gate/")
        assert page.locator(".gate-status").inner_text() == "PASSED"
        page.fill("#decide textarea", "Read the lowest cases; the refund replies are acceptable.")
        page.click("#decide button[value=approved]")
        page.wait_for_selector("#decisions td >> text=approved")
        page.fill("#id_label", "v2.0")
        page.once("dialog", lambda dialog: dialog.accept())  # "Mark … released from run …? Later gates … compare against it."
        page.click("#mark-released button[type=submit]")
        page.wait_for_selector("text=is now the baseline")
        page.screenshot(path=screenshots / "pointwise-gate.png", full_page=True)
        assert GateDecision.objects.get().reason.startswith("Read the lowest cases")
        assert Release.objects.get().label == "v2.0"
        assert set(AuditLog.objects.values_list("action", flat=True)) == {"release.approved", "release.marked_released"}

        page.goto("/pointwise/releases/")
        assert page.locator("#releases tbody.release").count() == 1
        page.screenshot(path=screenshots / "pointwise-releases.png", full_page=True)
