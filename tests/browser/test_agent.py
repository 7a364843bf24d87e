"""A reviewer uploads a workspace, its trace and a checklist, starts the run, watches each requirement
resolve, and opens a transcript (headless Chromium, a real worker)."""

import pytest

from fakejudge import DemoBrain, FakeJudgeServer
from tests.agent.helpers import REQUIREMENTS_MD, TASK, TRACE, png_bytes, zip_bytes
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_reviewer_uploads_a_workspace_and_watches_each_requirement_resolve(
    page, reviewer, make_judge, worker_factory, tmp_path, screenshots
):
    (tmp_path / "task.md").write_text(TASK)
    (tmp_path / "requirements.md").write_bytes(REQUIREMENTS_MD)
    (tmp_path / "trace.jsonl").write_bytes(TRACE)
    (tmp_path / "ws.zip").write_bytes(zip_bytes({
        "ws/train.py": b"print('test accuracy: 0.9')\n", "ws/out/metrics.json": b'{"accuracy": 0.9}\n',
        "ws/out/accuracy.png": png_bytes(),
    }))
    with FakeJudgeServer(DemoBrain(), latency=0.5) as slow:
        make_judge("browser-judge", server=slow, max_concurrency=1)
        worker_factory(concurrency=1)
        log_in(page, "rita")
        page.click("nav >> text=Agent judge")
        page.set_input_files("#id_task_file", str(tmp_path / "task.md"))
        page.set_input_files("#id_requirements_file", str(tmp_path / "requirements.md"))
        page.set_input_files("#id_workspace", str(tmp_path / "ws.zip"))
        page.set_input_files("#id_trace", str(tmp_path / "trace.jsonl"))
        page.screenshot(path=screenshots / "agent-form.png", full_page=True)
        page.click("#agent-form button[type=submit]")
        page.wait_for_selector("#agent-requirements")
        assert page.locator("#agent-requirements tbody tr").count() == 3
        # The rows resolve one by one while the page polls.
        page.wait_for_selector('#agent-requirements tr[data-verdict="met"]', timeout=90_000)
        page.screenshot(path=screenshots / "agent-resolving.png", full_page=True)
        # When the run finishes, the page reloads once and shows the summary.
        page.wait_for_selector("#agent-summary", timeout=90_000)
        page.screenshot(path=screenshots / "agent-done.png", full_page=True)
        assert page.locator("#agent-summary h2").inner_text() == "Requirements met: 100%"
        page.click("#requirement-1 >> text=Transcript")
        page.wait_for_selector("#verdict")
        assert "Tool call 1: read_file" in page.locator("main").inner_text()
        assert "out/accuracy.png: binary file" in page.locator("main").inner_text()
        page.screenshot(path=screenshots / "agent-transcript.png", full_page=True)
