"""Issue #29 in headless Chromium, as the merger's acceptance reads: a reviewer uploads a test set with one bad
line (the preview names it), fixes it, saves it, uploads support-bot v2.1's outputs, and starts a pointwise run
on them; every Datasets page has no serious axe-core violation and fits a phone's width."""

import json

import pytest

from judgeapp.demo.registry import EVALS
from judgeapp.judging.content import rubric_load
from judgeapp.models import OutputSet, Run
from tests.browser.axe import axe_run
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROWS = [{"id": f"q{i}", "input": f"How do I reset my password? ({i})", "output": "stored in the test set"} for i in range(4)]


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, bypass_csp=True)  # axe is injected as an inline script
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def checked(page, where: str) -> None:
    serious = [v["id"] for v in axe_run(page) if v["impact"] in ("critical", "serious")]
    assert serious == [], f"{where}: {serious}"
    duplicates = page.evaluate("() => { const s = {}; for (const e of document.querySelectorAll('[id]')) "
                               "s[e.id] = (s[e.id] || 0) + 1; return Object.keys(s).filter(k => s[k] > 1); }")
    assert duplicates == [], f"{where}: repeated ids {duplicates}"
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 391, f"{where} scrolls sideways at 390 px"
    page.set_viewport_size({"width": 1280, "height": 800})


def test_upload_preview_fix_save_outputs_and_a_pointwise_run(page, reviewer, judge, make_system, tmp_path, monkeypatch):
    from judgeapp.judging import taskqueue

    monkeypatch.setattr(taskqueue, "send", lambda name, pk, **options: None)  # the run is queued; no worker here
    make_system("support-bot")
    bad = tmp_path / "support.jsonl"
    bad.write_text("\n".join([json.dumps(ROWS[0]), '{"id": "q1", "input": ', *map(json.dumps, ROWS[2:])]) + "\n")
    fixed = tmp_path / "support-fixed.jsonl"
    fixed.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    outputs = tmp_path / "v21.jsonl"
    outputs.write_text(
        "".join(json.dumps({"id": r["id"], "output": f"v2.1: Settings > Password ({r['id']})"}) + "\n" for r in ROWS)
    )

    log_in(page, "rita")
    page.click("nav >> text=Datasets")
    checked(page, "datasets")
    page.set_input_files("#id_file", str(bad))
    page.click("#testset-upload button[type=submit]")
    assert "line 2:" in page.locator("#invalid-lines").inner_text()
    assert page.locator("#testset-save").count() == 0
    checked(page, "preview")

    page.goto("/datasets/")
    page.set_input_files("#id_file", str(fixed))
    page.click("#testset-upload button[type=submit]")
    page.fill("#id_name", "support")
    page.click("#testset-save button[type=submit]")
    assert "Stored support v1: 4 cases." in page.content()
    checked(page, "test set")

    page.goto("/datasets/")
    page.select_option("#outputs_system", label="support-bot")
    page.fill("#outputs_version_label", "v2.1")
    page.select_option("#outputs_testset", label="support (v1, 4 cases)")
    page.set_input_files("#outputs_file", str(outputs))
    page.click("#outputs-upload button[type=submit]")
    assert "4 valid outputs" in page.locator("main").inner_text()
    assert OutputSet.objects.count() == 0  # previewed; nothing stored yet
    checked(page, "outputs preview")
    page.click("#outputs-save button[type=submit]")
    assert "Stored support-bot v2.1: 4 outputs for support." in page.content()
    assert OutputSet.objects.get().version_label == "v2.1"

    rubric_load(path=EVALS / "support" / "rubric.toml")  # the demo's rubric
    page.goto("/pointwise/")
    page.select_option("#id_testset", label="support (v1, 4 cases)")
    page.select_option("#id_rubric", label="support-quality (v1)")
    page.select_option("#id_output_set", index=1)
    page.get_by_role("button", name="Start the evaluation").click()
    page.wait_for_url("**/runs/*/")
    run = Run.objects.get()
    assert run.system.name == "support-bot" and run.options["outputs"]["version"] == "v2.1"
    assert set(run.outputs.values_list("text", flat=True)) == {f"v2.1: Settings > Password (q{i})" for i in range(4)}
