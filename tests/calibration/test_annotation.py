"""A lead runs annotation in the app: invites annotators (a password shown once), fills a sample's queue,
writes the sample's instructions; an annotator reads them and the criterion on every item, comments and flags.
Hostile input (instructions, names, comments) is refused or escaped."""

import re
from html import unescape

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from calibration.models import Assignment, AssignmentState, ItemNote, NoteKind, Sample
from calibration.selectors.samples import item_notes_for_sample
from calibration.services.annotation import annotator_invite, item_note_create, sample_annotator_add, sample_instructions_set
from calibration.services.samples import sample_draw
from judgeapp.judging.errors import InputError
from judgeapp.judging.markdown import MAX_MARKDOWN_LENGTH, markdown_html
from judgeapp.models import AuditLog
from judgeapp.roles import Role, has_role
from tests.calibration.conftest import RUBRIC_TWO, scores_for
from tests.calibration.test_web import assert_blind, current
from tests.helpers import rendered_without_queries

pytestmark = pytest.mark.django_db

User = get_user_model()
HTMX = {"HX-Request": "true"}

HOSTILE_MARKDOWN = (
    "# Read me\n\n**Score the reply**, not the message.\n\n"
    "<script>alert('x')</script>\n\n<img src=x onerror=alert(1)>\n\n"
    "[click](javascript:alert(1)) [also](JaVaScRiPt:alert(2)) [entity](&#106;avascript:alert(3)) "
    "[data](data:text/html;base64,PHNjcmlwdD4=) <javascript:alert(4)> [relative](/admin/)\n\n"
    "[the guide](https://example.org/guide) [mail the lead](mailto:lead@example.org) ![pixel](https://example.org/p.png)\n"
)


@pytest.fixture
def bob(make_user):
    return make_user("bob", "annotator")


@pytest.fixture
def scored_sample(planted_run, annotator, bob, lead):
    run = planted_run(scores_for(10), rubric=RUBRIC_TWO)
    return sample_draw(run=run, size=6, seed=1, overlap=2, annotators=[annotator, bob], created_by=lead)


def password_in(response) -> str | None:
    match = re.search(r'id="one-time-password">([^<]+)<', response.content.decode())
    return match.group(1) if match else None


# --- Invites ---------------------------------------------------------------------------------------------


def test_lead_invites_a_new_annotator_and_sees_the_password_once_never_stored_or_audited_in_clear(client, lead, scored_sample):
    client.force_login(lead)
    response = client.post(
        reverse("calibration:annotator_invite"), {"username": "carol", "email": "carol@example.org"}, headers=HTMX,
    )
    assert response.status_code == 200
    password = password_in(response)
    assert password and len(password) >= 16
    assert "no-store" in response["Cache-Control"]
    carol = User.objects.get(username="carol")
    assert has_role(carol, Role.ANNOTATOR) and carol.email == "carol@example.org"
    assert carol.check_password(password) and password not in carol.password  # only its hash
    entry = AuditLog.objects.get(action="calibration.annotator_invited")
    assert entry.actor == lead and entry.subject == "carol"
    assert password not in f"{entry.subject} {entry.reason} {entry.detail}"
    # Shown once: the overview (the audit log on it too) never shows it again.
    again = client.get(reverse("calibration:overview")).content.decode()
    assert "carol" in again and password not in again
    # The new annotator logs in with it and finds their (empty) queue.
    client.logout()
    assert client.login(username="carol", password=password)
    assert "No items are assigned to you yet" in client.get(reverse("calibration:queue")).content.decode()


def test_an_invite_with_a_sample_puts_the_new_annotator_on_every_item_of_it(client, lead, scored_sample):
    client.force_login(lead)
    response = client.post(reverse("calibration:annotator_invite"), {"username": "dora", "sample": scored_sample.pk})
    assert response.status_code == 200 and password_in(response)  # without htmx: the whole overview, once
    dora = User.objects.get(username="dora")
    shown = scored_sample.items.filter(leakage_flags=[]).count()
    assert Assignment.objects.filter(annotator=dora, item__sample=scored_sample).count() == shown == 6
    assert "6 items of sample" in response.content.decode()
    scored_sample.refresh_from_db()
    assert scored_sample.overlap == 3  # one more annotator on every item
    positions = sorted(Assignment.objects.filter(annotator=dora).values_list("position", flat=True))
    assert positions == list(range(6))


def test_inviting_an_existing_account_adds_the_role_and_shows_no_password(client, lead, reviewer):
    client.force_login(lead)
    before = User.objects.get(pk=reviewer.pk).password
    response = client.post(reverse("calibration:annotator_invite"), {"username": "rita"}, headers=HTMX)
    assert response.status_code == 200 and password_in(response) is None
    assert "an existing account" in response.content.decode()
    reviewer = User.objects.get(pk=reviewer.pk)
    assert has_role(reviewer, Role.ANNOTATOR) and reviewer.password == before


@pytest.mark.parametrize(
    "username, error",
    [
        ("ann", "ann is an annotator already"),
        ("ANN", "a user named &#x27;ann&#x27; exists already"),
        ("bad name!", "letters, digits and @ . + - _ only"),
        ("<script>alert(1)</script>", "letters, digits and @ . + - _ only"),
        ("x" * 151, "at most 150 characters"),
        ("nul\x00byte", "Null characters are not allowed"),
    ],
)
def test_a_duplicate_or_invalid_name_is_a_form_error_and_nothing_is_created(client, lead, annotator, username, error):
    client.force_login(lead)
    users = User.objects.count()
    response = client.post(reverse("calibration:annotator_invite"), {"username": username})
    html = response.content.decode()
    assert response.status_code == 400 and error in html, html[:200]
    assert "<script>alert(1)" not in html and "Traceback" not in html
    assert User.objects.count() == users and not AuditLog.objects.filter(action="calibration.annotator_invited").exists()
    assert password_in(response) is None


def test_a_bad_email_is_a_form_error(client, lead):
    client.force_login(lead)
    response = client.post(reverse("calibration:annotator_invite"), {"username": "erin", "email": "not-an-email"}, headers=HTMX)
    assert response.status_code == 200 and "Enter a valid email address" in response.content.decode()
    assert not User.objects.filter(username="erin").exists()


@pytest.mark.parametrize("who", ["annotator", "reviewer"])
def test_only_a_lead_invites_assigns_or_writes_instructions(client, request, who, scored_sample):
    client.force_login(request.getfixturevalue(who))
    assert client.post(reverse("calibration:annotator_invite"), {"username": "mallory"}).status_code == 403
    assert client.post(reverse("calibration:annotator_assign"), {"annotator": 1, "sample": scored_sample.pk}).status_code == 403
    url = reverse("calibration:sample_instructions", args=[scored_sample.uuid])
    assert client.get(url).status_code == 403
    assert client.post(url, {"instructions": "pwned"}).status_code == 403
    assert not User.objects.filter(username="mallory").exists()
    assert Sample.objects.get(pk=scored_sample.pk).instructions == ""


def test_a_reviewer_sees_no_invite_form_on_the_overview(client, reviewer, lead):
    client.force_login(reviewer)
    assert 'id="invite-form"' not in client.get(reverse("calibration:overview")).content.decode()
    client.force_login(lead)
    assert 'id="invite-form"' in client.get(reverse("calibration:overview")).content.decode()


# --- Filling a sample's queue ----------------------------------------------------------------------------


def test_adding_an_annotator_fills_the_items_short_of_annotators_then_every_item_once(
    planted_run, annotator, bob, lead, make_user
):
    run = planted_run(scores_for(10))
    sample = sample_draw(run=run, size=8, seed=3, overlap=2, annotators=[annotator, bob])
    short = list(Assignment.objects.filter(item__sample=sample, annotator=bob).order_by("position")[:3])
    Assignment.objects.filter(pk__in=[a.pk for a in short]).delete()  # bob left after three items
    carol = make_user("carol", "annotator")
    assert sample_annotator_add(sample=sample, annotator=carol, actor=lead) == 3
    assert set(Assignment.objects.filter(annotator=carol).values_list("item_id", flat=True)) == {a.item_id for a in short}
    assert sample_annotator_add(sample=sample, annotator=carol, actor=lead) == 0  # nothing short any more
    assert sample_annotator_add(sample=sample, annotator=carol, actor=lead, every_item=True) == 5
    assert sample_annotator_add(sample=sample, annotator=carol, actor=lead, every_item=True) == 0
    assert Assignment.objects.filter(annotator=carol).count() == 8
    assert sorted(Assignment.objects.filter(annotator=carol).values_list("position", flat=True)) == list(range(8))
    with pytest.raises(InputError, match="not an annotator"):
        sample_annotator_add(sample=sample, annotator=lead, actor=lead)
    assert AuditLog.objects.filter(action="calibration.annotator_assigned").count() == 2  # the adds that added


def test_an_item_held_back_on_leakage_goes_to_no_annotator_added_later(planted_run, annotator, lead, make_user):
    run = planted_run(scores_for(6))
    sample = sample_draw(run=run, size=6, seed=2, annotators=[annotator])
    held = sample.items.order_by("position").first()
    held.leakage_flags = [{"kind": "system_name"}]
    held.save()
    carol = make_user("carol", "annotator")
    assert sample_annotator_add(sample=sample, annotator=carol, actor=lead, every_item=True) == 5
    assert not Assignment.objects.filter(annotator=carol, item=held).exists()


def test_the_lead_adds_an_annotator_from_the_overview(client, lead, scored_sample, make_user):
    carol = make_user("carol", "annotator")
    client.force_login(lead)
    response = client.post(reverse("calibration:annotator_assign"),
                           {"annotator": carol.pk, "sample": scored_sample.pk, "every_item": "on"}, headers=HTMX)
    assert response.status_code == 200 and "<html" not in response.content.decode()
    assert "6 items of sample" in response.content.decode()
    assert Assignment.objects.filter(annotator=carol).count() == 6
    bad = client.post(reverse("calibration:annotator_assign"), {"annotator": carol.pk, "sample": 999999})
    assert bad.status_code == 400 and "Select a valid choice" in bad.content.decode()


# --- Instructions ----------------------------------------------------------------------------------------


def test_instructions_show_at_the_top_of_the_queue_and_on_every_item(client, lead, annotator, scored_sample):
    client.force_login(lead)
    url = reverse("calibration:sample_instructions", args=[scored_sample.uuid])
    response = client.post(url, {"instructions": "Read **slowly**.\n\n- score the reply\n- not the message"})
    assert response.status_code == 302
    assert AuditLog.objects.filter(action="calibration.instructions_set", actor=lead).exists()
    assert "<strong>slowly</strong>" in client.get(url).content.decode()  # the lead's preview
    client.force_login(annotator)
    page = client.get(reverse("calibration:queue"))
    seen = 0
    while current(page):
        html = page.content.decode()
        assert "<strong>slowly</strong>" in html and "<li>not the message</li>" in html
        assert_blind(html, scored_sample.run)
        page = client.post(reverse("calibration:queue_label", args=[current(page)]), {"answer": "3"}, headers=HTMX)
        seen += 1
    assert seen == 6


def test_hostile_instructions_are_rendered_without_html_and_links_go_only_to_http_https_mailto(
    client, lead, annotator, scored_sample
):
    sample_instructions_set(sample=scored_sample, instructions=HOSTILE_MARKDOWN, actor=lead)
    client.force_login(annotator)
    html = client.get(reverse("calibration:queue")).content.decode()
    region = html[html.index('id="instructions"'):html.index('id="criterion"')]
    assert "<h1>Read me</h1>" in region and "<strong>Score the reply</strong>" in region
    assert "<script>alert" not in region and "&lt;script&gt;" in region
    assert "<img" not in region and "onerror=alert(1)&gt;" in region
    hrefs = re.findall(r'href="([^"]*)"', region)
    assert hrefs == ["https://example.org/guide", "mailto:lead@example.org", "https://example.org/p.png"]
    assert region.count('rel="noopener noreferrer nofollow"') == 3


def test_instructions_past_the_bound_are_refused_and_a_long_stored_text_is_cut(client, lead, scored_sample):
    client.force_login(lead)
    url = reverse("calibration:sample_instructions", args=[scored_sample.uuid])
    response = client.post(url, {"instructions": "a" * (MAX_MARKDOWN_LENGTH + 1)})
    assert response.status_code == 400 and "at most 20000 characters" in response.content.decode().replace(",", "")
    assert Sample.objects.get(pk=scored_sample.pk).instructions == ""
    with pytest.raises(InputError, match="at most 20,000"):
        sample_instructions_set(sample=scored_sample, instructions="b" * 20_001, actor=lead)
    with pytest.raises(InputError, match="NUL"):
        sample_instructions_set(sample=scored_sample, instructions="a\x00b", actor=lead)
    # A huge text that reached the database some other way is cut at the bound, never parsed whole.
    assert len(markdown_html("*x* " * 200_000)) < 40 * MAX_MARKDOWN_LENGTH


def test_a_new_sample_takes_its_instructions_from_the_draw_form(client, lead, annotator, bob, planted_run):
    run = planted_run(scores_for(8))
    client.force_login(lead)
    response = client.post(reverse("calibration:sample_new"), {
        "run": run.run_id, "size": 4, "seed": 9, "overlap": 1, "annotators": [annotator.pk, bob.pk],
        "instructions": "Be *strict*.",
    })
    assert response.status_code == 302
    assert Sample.objects.get(run=run).instructions == "Be *strict*."


# --- The criterion, large, and its change ----------------------------------------------------------------


def test_the_criterion_with_its_scale_and_examples_is_on_every_item_and_a_change_is_cued(client, annotator, scored_sample):
    client.force_login(annotator)
    page = client.get(reverse("calibration:queue"))
    previous = None
    cued = 0
    while current(page):
        html = page.content.decode()
        assignment = Assignment.objects.select_related("item").get(uuid=current(page))
        criterion = scored_sample.run.rubric.criteria.get(name=assignment.item.criterion)
        card = unescape(html[html.index('id="criterion"'):html.index('class="card queue-answer"')])
        assert f"Criterion: {criterion.name.capitalize()}" in card and criterion.description in card
        assert all(example in card for example in criterion.examples.values())
        changed = previous is not None and previous != criterion.name
        assert ('id="criterion-changed"' in card) == changed
        if changed:
            assert f"You scored <strong>{previous.capitalize()}</strong>" in card
            cued += 1
        assert_blind(html, scored_sample.run)
        previous = criterion.name
        page = client.post(reverse("calibration:queue_label", args=[assignment.uuid]), {"answer": "4"}, headers=HTMX)
    assert cued >= 1  # the sample mixes two criteria


# --- Comments and flags ----------------------------------------------------------------------------------


def test_an_annotator_comments_and_flags_an_item_and_the_lead_reads_both_escaped(client, annotator, lead, scored_sample):
    client.force_login(annotator)
    item = current(client.get(reverse("calibration:queue")))
    url = reverse("calibration:queue_note", args=[item])
    response = client.post(url, {"kind": "comment", "text": "Unsure <b>here</b> <script>alert(1)</script>"}, headers=HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html and 'id="my-notes"' in html
    assert "Your comment is saved" in html and "<script>alert(1)" not in html and "&lt;script&gt;" in html
    response = client.post(url, {"kind": "flag", "text": "The reply is cut off."}, headers=HTMX)
    assert "Your flag is saved" in response.content.decode()
    assert list(ItemNote.objects.order_by("id").values_list("kind", flat=True)) == [NoteKind.COMMENT, NoteKind.FLAG]
    assert Assignment.objects.get(uuid=item).state == AssignmentState.PENDING  # a note is no label
    assert current(client.get(reverse("calibration:queue"))) == item  # and the item stays in the queue

    client.force_login(lead)
    sample_page = client.get(reverse("calibration:sample_detail", args=[scored_sample.uuid])).content.decode()
    notes = sample_page[sample_page.index('id="item-notes"'):]
    assert "The reply is cut off." in notes and "ann" in notes and "&lt;script&gt;" in notes and "<script>alert(1)" not in notes
    # The sample page's view reads the notes (selectors.item_notes_for_sample); the partial renders them without a query.
    read = item_notes_for_sample(sample=scored_sample)
    assert read["flags"] == 1 and [n.kind for n in read["rows"]] == [NoteKind.FLAG, NoteKind.COMMENT] and not read["more"]
    assert "1 flagged" in rendered_without_queries("calibration/_item_notes.html", {"notes": read})
    assert item_notes_for_sample(sample=scored_sample, limit=1)["more"]
    overview = client.get(reverse("calibration:overview")).content.decode()
    assert 'data-flags="1"' in overview and "1 flagged" in overview


@pytest.mark.parametrize(
    "kind, text, error",
    [
        ("flag", "   ", "say why the item is flagged"),
        ("comment", "", "write the comment first"),
        ("comment", "x" * 2001, "at most 2,000"),
        ("praise", "nice", "a comment or a flag"),
        ("comment", "a\x00b", "NUL character"),
    ],
)
def test_an_empty_overlong_or_unknown_note_is_refused_and_nothing_stored(client, annotator, scored_sample, kind, text, error):
    client.force_login(annotator)
    item = current(client.get(reverse("calibration:queue")))
    response = client.post(reverse("calibration:queue_note", args=[item]), {"kind": kind, "text": text}, headers=HTMX)
    assert response.status_code == 200 and error in response.content.decode()
    assert 'aria-invalid="true"' in response.content.decode()
    without_htmx = client.post(reverse("calibration:queue_note", args=[item]), {"kind": kind, "text": text})
    assert without_htmx.status_code == 400 and error in without_htmx.content.decode()
    assert not ItemNote.objects.exists()


def test_without_javascript_a_note_returns_to_the_same_item(client, annotator, scored_sample):
    client.force_login(annotator)
    item = current(client.get(reverse("calibration:queue")))
    response = client.post(reverse("calibration:queue_note", args=[item]), {"kind": "flag", "text": "broken"})
    assert response.status_code == 302 and response["Location"] == reverse("calibration:queue_item", args=[item])
    assert "Your flag is saved" in client.get(response["Location"]).content.decode()


def test_an_annotator_cannot_note_another_annotators_item_and_a_reviewer_cannot_note(
    client, annotator, bob, reviewer, scored_sample
):
    theirs = Assignment.objects.filter(annotator=bob).first()
    client.force_login(annotator)
    assert client.post(reverse("calibration:queue_note", args=[theirs.uuid]), {"kind": "flag", "text": "x"}).status_code == 403
    client.force_login(reviewer)
    assert client.post(reverse("calibration:queue_note", args=[theirs.uuid]), {"kind": "flag", "text": "x"}).status_code == 403
    assert not ItemNote.objects.exists()


def test_item_note_create_keeps_the_text_and_its_annotator(scored_sample, annotator):
    assignment = Assignment.objects.filter(annotator=annotator).first()
    note = item_note_create(assignment=assignment, kind="flag", text="  two\r\nlines  ")
    assert (note.text, note.annotator_id, note.item_id) == ("two\nlines", annotator.pk, assignment.item_id)


def test_annotator_invite_service_refuses_a_deactivated_account(lead, make_user):
    gone = make_user("gone")
    gone.is_active = False
    gone.save()
    with pytest.raises(InputError, match="deactivated"):
        annotator_invite(username="gone", actor=lead)
    invitation = annotator_invite(username="fresh", actor=lead)
    assert invitation.password and invitation.password not in repr(invitation)


def test_instructions_that_name_the_system_or_the_judge_are_refused(client, lead, scored_sample):
    from tests.calibration.conftest import SYSTEM_MODEL, SYSTEM_NAME

    for revealing in (f"These replies come from {SYSTEM_NAME}.", f"Model: {SYSTEM_MODEL}", "The judge is judge-model-xl."):
        with pytest.raises(InputError, match="annotators must not learn"):
            sample_instructions_set(sample=scored_sample, instructions=revealing, actor=lead)
    client.force_login(lead)
    response = client.post(reverse("calibration:sample_instructions", args=[scored_sample.uuid]),
                           {"instructions": f"Be kind to {SYSTEM_NAME}."})
    assert response.status_code == 400 and "annotators must not learn" in response.content.decode()
    assert Sample.objects.get(pk=scored_sample.pk).instructions == ""
    # Ordinary words about scoring pass.
    sample_instructions_set(
        sample=scored_sample, instructions="Score version 2 of the **refund policy** wording, 1 to 5.", actor=lead,
    )
