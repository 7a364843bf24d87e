"""Issue #29's acceptance, in headless Chromium as a new team (an empty app: one lead, a judge, a system) over the
live server with a real worker and the fake judge: upload a test set with one bad line (the preview names it,
nothing is stored), fix it and save it as v1; upload support-bot v2.1's outputs; add a custom pointwise prompt;
register a webhook pointing at a receiver in this test; start a pointwise run on the stored test set, outputs and
prompt; read the outputs' source and the prompt version on the run page; tag the run; find it on /runs/; the
receiver gets the gate's message, signed with the secret shown once. Screenshots at 1,280 and 390 px under
SAVE_SCREENSHOTS."""

import json
import os
import re
from decimal import Decimal

import pytest

from judgeapp.demo.registry import EVALS
from judgeapp.judging.content import rubric_load
from judgeapp.models import OutputSet, Run
from judgeapp.models import TestSet as StoredTestSet  # not a pytest class
from tests.browser.conftest import log_in
from tests.helpers import run_state, wait_for
from tests.webhooks.conftest import Receiver

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = {"1280": {"width": 1280, "height": 900}, "390": {"width": 390, "height": 844}}
CASES = [
    ("refund-double", "I was charged twice for my March plan. Can one charge be refunded?"),
    ("password-reset", "The password reset email never arrives. What can I do?"),
    ("cancel-order", "I cancelled my order ten minutes after placing it but was still charged."),
    ("shipping-late", "My parcel was due on Monday and it still has not arrived."),
]
REPLIES = {
    "refund-double": "I'm sorry about the double charge. I've refunded the duplicate; it shows on your card within 5-7 days.",
    "password-reset": "Sorry for the trouble. Go to Settings > Password and click Reset; the link works for 2 hours.",
    "cancel-order": "Orders are final once placed. Please read our terms.",
    "shipping-late": "Thanks for your patience. I've checked the tracking: it arrives within 2 days; I'll email you the link.",
}
PROMPT = """You are grading one reply from our support assistant against the rubric. A short reply that solves the
problem beats a long one; a confident tone is not quality.

<rubric>{{rubric}}</rubric>
<customer_message>{{input}}</customer_message>
<assistant_reply>{{output}}</assistant_reply>

Explain in one or two sentences how the reply meets or misses each criterion, then give one integer score
from 1 to 5 as the rubric defines it. Respond in JSON: {"reasoning": "...", "score": 1-5}
"""


def test_a_new_team_stores_its_data_runs_tags_finds_and_hears_the_gate(
    page, lead, make_judge, make_system, worker_factory, screenshots, tmp_path, capsys
):
    files = _team_files(tmp_path)
    make_judge("team-judge", model="qwen2.5-7b-instruct", family="qwen", input_price_per_million=Decimal("0.20"),
               output_price_per_million=Decimal("0.60"))
    make_system("support-bot")
    rubric_load(path=EVALS / "support" / "rubric.toml")  # the demo's rubric, which the team judges with
    worker = worker_factory(concurrency=2)
    with Receiver() as receiver:
        log_in(page, "leo")
        _test_set_fixed_after_its_preview(page, files, screenshots)
        _outputs_stored(page, files["outputs"], screenshots)
        _prompt_added(page, screenshots)
        secret = _webhook_added(page, receiver.url, screenshots)
        run = _run_started(page, screenshots)

        finished = wait_for(lambda: Run.objects.filter(pk=run.pk, finished_at__isnull=False).first(), 45,
                            message="the run to finish", explain=lambda: run_state(run.pk, worker))
        assert finished.status == "done", run_state(run.pk, worker)
        run = finished
        page.wait_for_selector("#histogram")  # the finished run's page reloads once, with its report
        shown = page.inner_text("main")
        assert re.search(r"Outputs\s+uploaded as support-bot v2\.1 on \d+ \w+ \d{4} by leo", shown), shown
        assert "support-concise v1 @" in shown
        _estimate_and_usage(page, where="run page")
        _shoot(page, screenshots, "team-6-run")

        page.fill("#run-tag-name", "Team-Acceptance")
        page.click("#run-tags button:has-text('Add')")
        page.wait_for_selector("#run-tags a.badge:has-text('team-acceptance')")
        page.goto("/runs/")
        page.fill("input[name=q]", "faq v2.1")
        page.click("#run-filters button[type=submit]")
        page.wait_for_function("() => document.querySelectorAll('#runs tr[data-run]').length === 1")
        assert page.locator("#runs tr[data-run]").get_attribute("data-run") == run.run_id
        assert "team-acceptance" in page.locator("#runs").inner_text()
        _shoot(page, screenshots, "team-7-found")

        gate = wait_for(lambda: [r for r in receiver.requests if r.headers["x-judgeapp-event"].startswith("gate.")], 30,
                        message="the gate's webhook", explain=worker.log)[0]
        assert gate.signed_with(secret) and not gate.signed_with(secret + "x")
        assert gate.json["event"] == f"gate.{'passed' if run.report['gate']['passed'] else 'blocked'}"
        assert run.run_id in gate.json["data"]["url"]
    with capsys.disabled():
        print(f"\nrun {run.run_id}: {run.report['mean']:.2f} mean, gate {gate.json['event']}")


def _team_files(folder) -> dict:
    """The team's test set (one line with `inputs` for `input`), the fixed file, and v2.1's outputs."""
    rows = [json.dumps({"id": case_id, "input": text}) for case_id, text in CASES]
    bad = list(rows)
    bad[2] = json.dumps({"id": CASES[2][0], "inputs": CASES[2][1]})
    files = {"bad": folder / "support-faq.jsonl", "fixed": folder / "support-faq-fixed.jsonl", "outputs": folder / "v2.1.jsonl"}
    files["bad"].write_text("\n".join(bad) + "\n")
    files["fixed"].write_text("\n".join(rows) + "\n")
    files["outputs"].write_text("".join(json.dumps({"id": k, "output": v}) + "\n" for k, v in REPLIES.items()))
    return files


def _test_set_fixed_after_its_preview(page, files, screenshots) -> None:
    page.click("nav >> text=Datasets")
    page.set_input_files("#id_file", str(files["bad"]))
    page.click("#testset-upload button[type=submit]")
    problems = page.locator("#invalid-lines").inner_text()
    assert "line 3:" in problems and "input" in problems, problems
    assert page.locator("#testset-save").count() == 0 and not StoredTestSet.objects.filter(name="support-faq").exists()
    _shoot(page, screenshots, "team-1-preview-bad-line")

    page.goto("/datasets/")
    page.set_input_files("#id_file", str(files["fixed"]))
    page.click("#testset-upload button[type=submit]")
    page.fill("#id_name", "support-faq")
    page.click("#testset-save button[type=submit]")
    assert f"Stored support-faq v1: {len(CASES)} cases." in page.content()
    _shoot(page, screenshots, "team-2-test-set-saved")


def _outputs_stored(page, outputs, screenshots) -> None:
    page.goto("/datasets/")
    page.select_option("#outputs_system", label="support-bot")
    page.fill("#outputs_version_label", "v2.1")
    page.select_option("#outputs_testset", label=f"support-faq (v1, {len(CASES)} cases)")
    page.set_input_files("#outputs_file", str(outputs))
    page.click("#outputs-upload button[type=submit]")
    # Previewed first (every line checked against the test set), stored once the team saves them.
    assert f"{len(CASES)} valid outputs" in page.locator("main").inner_text()
    _shoot(page, screenshots, "team-3-outputs-preview")
    page.click("#outputs-save button[type=submit]")
    assert f"Stored support-bot v2.1: {len(CASES)} outputs for support-faq." in page.content()
    assert OutputSet.objects.get().version_label == "v2.1"
    page.set_viewport_size(WIDTHS["390"])
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 391, "the Datasets page scrolls sideways on a phone"
    page.set_viewport_size(WIDTHS["1280"])
    _shoot(page, screenshots, "team-3-outputs")


def _prompt_added(page, screenshots) -> None:
    page.click("nav >> text=Prompts")
    page.click("text=Add a prompt")
    page.select_option("#id_mode", "pointwise")
    page.fill("#id_name", "support-concise")
    page.fill("#id_text", PROMPT)
    _shoot(page, screenshots, "team-4-prompt-form")
    page.click("#prompt-form button[type=submit]")
    page.wait_for_selector("text=support-concise")
    assert "/prompts/new/" not in page.url, page.locator("#prompt-form").inner_text()


def _webhook_added(page, url, screenshots) -> str:
    """The webhook's signing secret, as the page shows it this once."""
    page.goto("/webhooks/")
    page.fill("#id_name", "team-channel")
    page.fill("#id_url", url)
    page.click("#webhook-create button[type=submit]")
    secret = page.locator("#webhook-secret").inner_text().strip()
    assert secret.startswith("whsec_")
    _shoot(page, screenshots, "team-4-webhook")
    return secret


def _run_started(page, screenshots) -> Run:
    """The pointwise form, opened from the Datasets page's "Judge these outputs": the stored test set by name,
    support-bot v2.1's outputs, the team's prompt; through the confirmation when the form asks one."""
    page.click("nav >> text=Datasets")
    page.click("#outputs-table a:has-text('Judge these outputs')")
    page.wait_for_url("**/pointwise/?outputs=*")
    testset = f"support-faq (v1, {len(CASES)} cases)"
    picked = page.eval_on_selector_all("#pointwise-form select", "all => all.map(s => s.selectedOptions[0]?.text || '')")
    assert testset in picked and "support-bot" in picked and any(p.startswith("support-bot v2.1") for p in picked), picked
    page.select_option("#id_testset", label=testset)
    page.select_option("#id_rubric", label="support-quality (v1)")
    page.select_option("#id_prompt", label=_option_starting(page, "#id_prompt", "support-concise"))
    page.fill("#id_title", "Support FAQ v2.1 check")
    _estimate_and_usage(page, where="before start")
    _shoot(page, screenshots, "team-5-form")
    page.get_by_role("button", name="Start the evaluation").click()
    page.wait_for_load_state()
    confirm = page.locator("#id_confirm, #large-run input[type=checkbox]")
    if "/runs/" not in page.url and confirm.count():
        _shoot(page, screenshots, "team-5-confirm")
        for box in confirm.all():
            box.check()
        page.get_by_role("button", name="Start the evaluation").click()
        page.wait_for_load_state()
    refused = page.locator(".errorlist, .banner.error").all_inner_texts() if "/runs/" not in page.url else []
    assert not refused, refused
    run = wait_for(lambda: Run.objects.first(), 10, message="the run stored")
    page.wait_for_url(f"**/runs/{run.run_id}/")
    return run


def _option_starting(page, select: str, start: str) -> str:
    labels = page.locator(f"{select} option").all_inner_texts()
    return next(label for label in labels if label.strip().startswith(start))


def _estimate_and_usage(page, *, where: str) -> None:
    """Before start: the form's estimate of calls and cost (no judge asked); on the run page: the calls made,
    the tokens and the cost at the judge's prices. 4 cases x 3 criteria: 12 judge calls."""
    if where == "before start":
        page.get_by_role("button", name="Estimate calls and cost").click()
        page.wait_for_selector("#estimate >> text=Estimate:")
        estimate = page.inner_text("#estimate")
        assert "about 12 judge calls" in estimate and "$" in estimate, estimate
    else:
        usage = page.inner_text("#run-usage")
        assert "12 judge calls" in usage and "cost $" in usage, usage


def _shoot(page, folder, name: str) -> None:
    if not os.environ.get("SAVE_SCREENSHOTS"):
        return
    for width, size in WIDTHS.items():
        page.set_viewport_size(size)
        page.screenshot(path=folder / f"{name}-{width}.png", full_page=True)
    page.set_viewport_size(WIDTHS["1280"])
