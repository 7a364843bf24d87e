"""Headless Chromium: a reviewer starts a pairwise run and a jury from the browser, a real worker runs
them, and the reports, the side-by-side case and the case x juror grid are read on the page."""

import json

import pytest

from fakejudge import DemoBrain, Reply, When
from judgeapp.judging import content
from judgeapp.judging.outputs import output_set_save
from tests import factories
from tests.browser.conftest import log_in
from tests.factories import GOOD_REPLY, RUBRIC_TWO

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def oracle(reply: str, message: str = "") -> float:
    return min(1.0, len(reply) / 120) if GOOD_REPLY not in reply else 1.0


@pytest.fixture
def roles(transactional_db):
    from django.contrib.auth.models import Group

    from judgeapp.roles import Role

    for role in Role.values:
        Group.objects.get_or_create(name=role)


def test_reviewer_compares_two_systems_in_the_browser(
    roles, page, make_user, make_judge, make_system, fake_judge, worker_factory, screenshots
):
    fake_judge.action = DemoBrain(quality=oracle)
    make_user("rita", "reviewer")
    make_judge("demo-judge", model="qwen2.5-7b-instruct", family="qwen", scripted_demo=True)
    make_system("support-bot-v1", system_prompt="You are a support assistant. Be brief.")
    make_system("support-bot-v2", system_prompt="Give concrete next steps and say what to expect.")
    content.testset_store(data=factories.testset_bytes(6, output=None), name="support.jsonl")
    content.rubric_store(data=RUBRIC_TWO, name="rubric.toml")
    worker_factory(concurrency=4)

    log_in(page, "rita")
    page.click("text=Pairwise A/B")
    page.select_option("#id_testset", index=1)
    page.select_option("#id_rubric", index=1)
    page.select_option("#id_judge", label="demo-judge (qwen2.5-7b-instruct, qwen, scripted demo)")
    page.select_option("#id_system_a", index=1)
    page.select_option("#id_system_b", index=2)
    page.screenshot(path=screenshots / "pairwise-new.png", full_page=True)
    page.click("text=Start the comparison")
    page.wait_for_url("**/runs/*/")
    page.wait_for_selector('[data-status="done"]', timeout=180_000)
    try:
        page.wait_for_selector("#pairwise-result", timeout=30_000)
    except Exception:
        (screenshots / "pairwise-fail.html").write_text(page.content())
        page.screenshot(path=screenshots / "pairwise-fail.png", full_page=True)
        raise
    assert "Version B wins" in page.inner_text("#pairwise-result")
    assert page.locator("#pairwise-cases tbody tr").count() == 6
    page.screenshot(path=screenshots / "pairwise-report.png", full_page=True)

    page.click("#pairwise-cases tbody tr:first-child a")
    page.wait_for_selector("#verdicts")
    assert page.locator("#replies .reply").count() == 2
    assert page.locator("#verdicts .verdict").count() == 2
    assert page.locator("#verdicts blockquote.reasoning").count() == 2
    assert "B wins" in page.inner_text("#case-result")
    page.screenshot(path=screenshots / "pairwise-case.png", full_page=True)


def test_reviewer_convenes_a_jury_and_reads_the_grid(
    roles, page, make_user, make_judge, make_system, fake_judge, worker_factory, screenshots
):
    make_user("rita", "reviewer")
    for name, model, family in [("juror-llama", "llama-3.1-8b", "meta"), ("juror-mistral", "mistral-7b", "mistral"),
                                ("juror-gemma", "gemma-2-9b", "google"), ("juror-qwen", "qwen2.5-7b", "qwen")]:
        make_judge(name, model=model, family=family)
    # The gemma juror fails every reply, so it dissents on the good ones.
    fake_judge.action = When(lambda r: r.model == "gemma-2-9b",
                             Reply('{"reasoning": "Too terse for a customer.", "verdict": "fail"}'),
                             DemoBrain(quality=lambda reply, message="": 1.0 if GOOD_REPLY in reply else 0.0))
    bot = make_system("support-bot", model="gpt-4o-mini", family="openai")
    stored = content.testset_store(data=factories.testset_bytes(6), name="support.jsonl")
    content.rubric_store(data=RUBRIC_TWO, name="rubric.toml")
    # support-bot's own outputs (its newest for the test set is judged; never the test set's)
    replies = b"".join(b'{"id": "%s", "output": %s}\n' % (c.case_id.encode(), json.dumps(c.output).encode())
                       for c in stored.cases.order_by("position"))
    own = content.InputFile(data=replies, name="v1.jsonl")
    output_set_save(system=bot, version_label="v1.0", testset=stored, outputs=own)
    worker_factory(concurrency=4)

    log_in(page, "rita")
    page.click("text=Jury")
    page.select_option("#id_testset", index=1)
    page.select_option("#id_rubric", index=1)
    for name in ("juror-llama", "juror-mistral", "juror-gemma", "juror-qwen"):
        page.check(f"#field-judges label:has-text('{name} ') input")
    page.select_option("#id_system", index=1)
    page.click("text=Convene the jury")
    page.wait_for_selector("#field-judges .errorlist")
    assert "use an odd number" in page.inner_text("#field-judges .errorlist")
    page.screenshot(path=screenshots / "jury-refused.png", full_page=True)

    page.uncheck("#field-judges label:has-text('juror-qwen ') input")
    page.click("text=Convene the jury")
    page.wait_for_url("**/runs/*/")
    page.wait_for_selector('[data-status="done"]', timeout=180_000)
    page.wait_for_selector("#jury-grid", timeout=30_000)
    assert page.locator("#jury-grid td.dissent").count() == 3  # gemma on the three good replies
    assert "review: far below the others" in page.inner_text("#jury-panel")
    assert "uploaded as support-bot v1.0" in page.inner_text("#run-outputs")
    page.screenshot(path=screenshots / "jury-report.png", full_page=True)

    page.click("#jury-grid tbody tr:first-child a")
    page.wait_for_selector("#jurors")
    assert page.locator("#jurors tbody tr").count() == 3
    assert "Too terse for a customer." in page.inner_text("#jurors")
    page.screenshot(path=screenshots / "jury-case.png", full_page=True)
