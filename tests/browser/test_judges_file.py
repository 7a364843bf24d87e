import pytest

from tests.browser.conftest import log_in

pytestmark = pytest.mark.browser


def test_reviewer_sees_the_changed_judges_file_and_reloads_it_from_the_form(
    page, reviewer, judge, tmp_path, settings, screenshots
):
    path = tmp_path / "judges.toml"
    path.write_text(f'[judges.qwen-small]\nmodel = "qwen2.5-7b-instruct"\nbase_url = "{judge.base_url}"\n')
    settings.JUDGES_FILE = str(path)
    log_in(page, "rita")
    page.goto("/pointwise/")
    notice = page.locator(".messages li.warning")
    assert "has not been loaded yet" in notice.inner_text()
    assert page.locator("#id_judge option", has_text="qwen-small").count() == 0
    page.screenshot(path=screenshots / "judges-file-changed.png", full_page=True)
    notice.locator("#reload-judges").click()
    page.wait_for_load_state()
    assert page.url.endswith("/pointwise/")
    assert "Judges file loaded: qwen-small." in page.locator(".messages li.success").inner_text()
    assert page.locator(".messages li.warning").count() == 0
    assert page.locator("#id_judge option", has_text="qwen-small").count() == 1
    page.screenshot(path=screenshots / "judges-file-reloaded.png", full_page=True)
