"""The prompt library: versions numbered and never changed, the pages (list, a version with its changes, the
add form with the check's refusals as form errors), `manage.py prompts`, and the rubric helper on the
pointwise form."""

import pytest
from django.core.management import call_command
from django.urls import reverse

from judgeapp.judging.audit import cli_actor
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import FILL_IN
from judgeapp.judging.library import PromptRefused, prompt_template_save
from judgeapp.judging.prompts import library_prompt
from judgeapp.models import AuditLog, PromptTemplate, Run
from tests.helpers import support_inputs_stored

pytestmark = pytest.mark.django_db

SUMMARIES = library_prompt("pointwise").text.replace("one reply from a customer-support assistant", "one summary of a document")
HTMX = {"HX-Request": "true"}


def save(text=SUMMARIES, name="summaries", mode="pointwise", actor=None):
    return prompt_template_save(mode=mode, name=name, text=text, actor=actor or cli_actor())


# --- Versions --------------------------------------------------------------------------------------------


def test_an_edit_saves_the_next_version_and_the_first_stays_as_it_was(reviewer):
    v1 = save(actor=reviewer)
    v2 = save(SUMMARIES.replace("Length", "Brevity"), actor=reviewer)
    assert (v1.number, v1.label, v2.number, v2.label) == (1, "v1", 2, "v2")
    v1.refresh_from_db()
    assert v1.text == SUMMARIES and v2.text != SUMMARIES and v1.version != v2.version
    assert v2.created_by == reviewer
    entries = AuditLog.objects.filter(action=AuditLog.Action.PROMPT_SAVED).order_by("created_at", "id")
    assert [e.subject for e in entries] == ["pointwise prompt summaries v1", "pointwise prompt summaries v2"]
    assert entries[0].actor_label == "rita"


def test_saving_a_text_a_version_already_has_is_refused():
    save()
    with pytest.raises(InputError, match="this text is summaries v1 already"):
        save(SUMMARIES.replace("\n", "\r\n"))  # the same text from a browser's text box
    assert PromptTemplate.objects.filter(name="summaries").count() == 1


def test_a_refused_text_stores_nothing_and_says_every_problem():
    with pytest.raises(PromptRefused) as refused:
        save(SUMMARIES.replace("{{rubric}}", "").replace('"reasoning": "...", ', ""))
    assert len(refused.value.problems) == 2
    assert not PromptTemplate.objects.filter(name="summaries").exists()


@pytest.mark.parametrize(("name", "message"), [
    ("default", "taken by a built-in prompt"), ("juror", "taken by a built-in prompt"), ("Summaries!", "use lowercase letters"),
])
def test_names_of_built_ins_and_odd_names_are_refused(name, message):
    with pytest.raises(InputError, match=message):
        save(name=name)


def test_a_name_belongs_to_one_mode():
    save()
    with pytest.raises(InputError, match="'summaries' is a prompt of another mode"):
        save(library_prompt("jury").text.replace("independent graders", "independent readers"), mode="jury")


def test_the_report_entry_tells_the_built_in_an_adopted_text_and_a_library_version_apart():
    from judgeapp.judging.content import prompt_register
    from judgeapp.judging.library import prompt_entry
    from judgeapp.judging.prompts import Prompt

    builtin = prompt_register(prompt="pointwise")
    adopted = prompt_register(prompt=Prompt(name="pointwise", text=SUMMARIES))  # a calibration candidate's text
    assert prompt_entry(builtin) == {"name": "default", "version": "built-in", "hash": library_prompt("pointwise").version}
    assert prompt_entry(adopted) == {"name": "adopted", "version": "calibration candidate", "hash": adopted.version}
    assert adopted.source_path == "" and builtin.source_path.endswith("prompts/pointwise.md")
    v1 = save()
    assert prompt_entry(v1) == {"name": "summaries", "version": "v1", "hash": v1.version}


# --- Pages -----------------------------------------------------------------------------------------------


def test_the_library_lists_the_built_in_and_the_teams_prompts_per_mode(client, reviewer):
    v1 = save()
    client.force_login(reviewer)
    html = client.get(reverse("prompts")).content.decode()
    assert html.count("built-in, read-only") == 3  # pointwise, pairwise, jury
    assert reverse("prompt_detail", args=[v1.uuid]) in html and reverse("prompt_builtin", args=["jury"]) in html


def test_a_built_in_prompt_shows_its_text_and_cannot_be_edited(client, reviewer):
    client.force_login(reviewer)
    html = client.get(reverse("prompt_builtin", args=["pointwise"])).content.decode()
    assert "customer-support assistant" in html and library_prompt("pointwise").version in html
    assert "Edit (saves" not in html and "Start a prompt of your own from this one" in html
    assert client.get(reverse("prompt_builtin", args=["ranker"])).status_code == 404


def test_a_version_page_shows_its_text_and_its_changes_escaped(client, reviewer):
    save()
    v2 = save(SUMMARIES.replace("Length and confident tone", "<script>alert(1)</script> tone"))
    client.force_login(reviewer)
    html = client.get(reverse("prompt_detail", args=[v2.uuid])).content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<del>-against the rubric. Length and confident tone are not quality.</del>" in html
    assert "Changes from v1" in html and "Edit (saves v3)" in html


def test_the_form_saves_a_prompt_and_shows_the_checks_refusals_as_form_errors(client, lead):
    client.force_login(lead)
    bad = SUMMARIES.replace('{"reasoning": "...", "score": 1-5}', '{"score": 1-5, "reasoning": "..."}') + "{{tone}}"
    refused = client.post(reverse("prompt_new"), {"mode": "pointwise", "name": "summaries", "text": bad})
    html = refused.content.decode()
    assert refused.status_code == 400
    assert (
        "{{tone}} is not a slot of a pointwise prompt" in html
        and "asks for &quot;score&quot; before &quot;reasoning&quot;" in html
    )
    assert not PromptTemplate.objects.filter(name="summaries").exists()
    saved = client.post(reverse("prompt_new"), {"mode": "pointwise", "name": "summaries", "text": SUMMARIES})
    template = PromptTemplate.objects.get(name="summaries")
    assert saved.status_code == 302 and saved["Location"] == reverse("prompt_detail", args=[template.uuid])
    assert template.created_by == lead and template.number == 1


def test_editing_starts_from_the_version_and_saves_the_next(client, reviewer):
    v1 = save()
    client.force_login(reviewer)
    form = client.get(reverse("prompt_new"), {"from": str(v1.uuid)}).content.decode()
    assert 'value="summaries"' in form and "one summary of a document" in form
    client.post(reverse("prompt_new"), {"mode": "pointwise", "name": "summaries", "text": SUMMARIES + "Be brief.\n"})
    assert list(PromptTemplate.objects.filter(name="summaries").order_by("number").values_list("number", flat=True)) == [1, 2]
    assert client.get(reverse("prompt_new"), {"from": "not-a-uuid"}).status_code == 200


def test_annotators_never_see_the_library(client, annotator):
    v1 = save()
    client.force_login(annotator)
    for url in (reverse("prompts"), reverse("prompt_detail", args=[v1.uuid]), reverse("prompt_new")):
        assert client.get(url).status_code == 403
    assert client.post(reverse("prompt_new"), {"mode": "pointwise", "name": "other", "text": SUMMARIES}).status_code == 403
    assert PromptTemplate.objects.filter(number__isnull=False).count() == 1


# --- The command -----------------------------------------------------------------------------------------


def test_manage_prompts_add_list_and_show(tmp_path, capsys):
    path = tmp_path / "summaries.md"
    path.write_text(SUMMARIES)
    call_command("prompts", "add", "--mode", "pointwise", "--name", "summaries", "--file", str(path))
    template = PromptTemplate.objects.get(name="summaries")
    assert capsys.readouterr().out == f"saved pointwise prompt summaries v1 ({template.version}); run with --prompt summaries\n"
    call_command("prompts", "list", "--mode", "pointwise")
    assert capsys.readouterr().out.splitlines() == [
        f"pointwise  default  built-in, read-only  {library_prompt('pointwise').version}",
        f"pointwise  summaries  v1  {template.version} (latest)",
    ]
    call_command("prompts", "show", "summaries@v1")
    assert capsys.readouterr().out == SUMMARIES
    call_command("prompts", "show", "default", "--mode", "jury")
    assert capsys.readouterr().out == library_prompt("jury").text
    assert AuditLog.objects.get(action=AuditLog.Action.PROMPT_SAVED).actor_label.startswith("cli:")


def test_manage_prompts_add_refuses_a_bad_text_in_one_line_with_exit_2(tmp_path, monkeypatch):
    from io import StringIO

    from django.core.management import load_command_class
    from django.core.management.base import OutputWrapper
    from django.db import connections

    monkeypatch.setattr(connections, "close_all", lambda: None)  # run_from_argv closes them; the test's transaction lives on
    path = tmp_path / "bad.md"
    path.write_text(SUMMARIES.replace("{{output}}", ""))
    command = load_command_class("judgeapp", "prompts")
    err = StringIO()
    command.stderr = OutputWrapper(err)
    with pytest.raises(SystemExit) as exited:
        command.run_from_argv(["manage.py", "prompts", "add", "--mode", "pointwise", "--name", "summaries", "--file", str(path)])
    assert exited.value.code == 2
    assert (
        err.getvalue() == "error: the prompt text lacks {{output}}: a pointwise prompt uses every one of {{rubric}}, {{input}}, "
        "{{output}}\n"
    )
    assert not PromptTemplate.objects.filter(name="summaries").exists()


# --- The rubric helper on the pointwise form -------------------------------------------------------------------


def test_the_draft_button_fills_the_rubric_box_with_a_skeleton(client, reviewer):
    client.force_login(reviewer)
    url = reverse("pointwise:rubric_skeleton")
    part = client.get(url, {"rubric_criterion": "Is the summary faithful to the source?"}, headers=HTMX).content.decode()
    assert part.lstrip().startswith('<div id="rubric-text">') and "<html" not in part
    assert "Is the summary faithful to the source?" in part and part.count(f"{FILL_IN}:") == 10
    # Without JavaScript the whole form comes back, the box filled in.
    page = client.get(url, {"rubric_criterion": "Is it <b>kind</b>?"}).content.decode()
    assert "<h1>New pointwise evaluation</h1>" in page and "Is it &lt;b&gt;kind&lt;/b&gt;?" in page
    assert "give the criterion in one sentence" in client.get(url, {"rubric_criterion": ""}, headers=HTMX).content.decode()


def test_a_drafted_rubric_is_refused_until_filled_in_then_starts_a_run(
    client, reviewer, judge, monkeypatch, django_capture_on_commit_callbacks
):
    from judgeapp.judging import taskqueue
    from judgeapp.judging.files import rubric_skeleton

    monkeypatch.setattr(taskqueue, "send", lambda *args, **kwargs: None)
    client.force_login(reviewer)
    draft = rubric_skeleton("Is the summary faithful to the source?")
    form = {"judge": judge.pk, "threshold": "3", **support_inputs_stored().form}
    refused = client.post(reverse("pointwise:new"), {**form, "rubric_text": draft})
    assert refused.status_code == 400 and "still says &#x27;FILL IN&#x27;; write your own words there" in refused.content.decode()
    assert not Run.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(reverse("pointwise:new"), {**form, "rubric_text": draft.replace(f"{FILL_IN}: ", "")})
    assert started.status_code == 302
    run = Run.objects.get()
    assert list(run.rubric.criteria.values_list("description", flat=True)) == ["Is the summary faithful to the source?"]
