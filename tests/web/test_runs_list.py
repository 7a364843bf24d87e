"""The runs page a team lives in: search, filters, tags and real paging (the API's list: tests/api/test_runs_list.py)."""

import datetime as dt
import hashlib

import pytest
from django.urls import reverse
from django.utils import timezone

from judgeapp import models
from judgeapp.judging import runs, tags
from judgeapp.judging.errors import InputError
from judgeapp.models import Run, RunKind, RunStatus, RunTag
from judgeapp.web.selectors import RunFilters, run_outcome, run_page_get, runs_for_filters
from tests.factories import pointwise_run

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


def make_testset(name: str) -> models.TestSet:
    return models.TestSet.objects.create(name=name, content_hash=hashlib.sha256(name.encode()).hexdigest())


def make_run(run_id: str, *, kind=RunKind.JURY, status=RunStatus.DONE, created=None, **fields) -> Run:
    run = Run.objects.create(run_id=run_id, kind=kind, status=status, report={"passed": 1, "total": 2}, **fields)
    if created:
        Run.objects.filter(pk=run.pk).update(created_at=created)
        run.refresh_from_db()
    return run


def ids(runs_) -> list[str]:
    return [run.run_id for run in runs_]


@pytest.fixture
def fleet(make_judge, make_system):
    """Runs that differ in one field each, from the oldest to the newest."""
    judge, other_judge = make_judge("judge-a"), make_judge("qwen-7b")
    bot, mail = make_system("support-bot"), make_system("mail-bot", model="llama-mail")
    faq, billing = make_testset("faq-questions"), make_testset("billing-cases")
    day = timezone.make_aware(dt.datetime(2026, 11, 1, 12, 0))
    made = {
        "r-title": make_run("r-title", title="Nightly refund check", judge=judge, created=day),
        "r-system": make_run("r-system", system=mail, judge=judge, created=day + dt.timedelta(days=1)),
        "r-testset": make_run("r-testset", testset=billing, system=bot, judge=judge, created=day + dt.timedelta(days=2)),
        "r-judge": make_run("r-judge", judge=other_judge, testset=faq, created=day + dt.timedelta(days=3)),
        "r-jury": make_run("r-jury", config={"judges": {"mistral-7b": {}, "llama-8b": {}}}, created=day + dt.timedelta(days=4)),
        "r-pair": make_run("r-pair", kind=RunKind.PAIRWISE, status=RunStatus.RUNNING,
                           config={"options": {"versions": {"A": {"system": "support-bot"}, "B": {"system": "mail-bot"}}}},
                           created=day + dt.timedelta(days=5)),
        "r-failed": make_run("r-failed", kind=RunKind.POINTWISE, status=RunStatus.FAILED, created=day + dt.timedelta(days=6)),
    }
    return made


@pytest.mark.parametrize("q, found", [
    ("refund", {"r-title"}),              # the title
    ("MAIL-BOT", {"r-system", "r-pair"}),  # a system's name, any case; a pairwise run's side too
    ("llama-mail", {"r-system"}),          # a system's model
    ("billing", {"r-testset"}),            # a test set's name
    ("qwen", {"r-judge"}),                 # the judge's name
    ("mistral-7b", {"r-jury"}),            # a jury's juror
    ("r-fail", {"r-failed"}),              # the run's id
    ("no such thing", set()),
])
def test_search_finds_a_run_by_each_field(fleet, q, found):
    assert set(ids(runs_for_filters(filters=RunFilters(q=q)))) == found


def test_each_stored_filter_narrows_the_runs(fleet):
    assert ids(runs_for_filters(filters=RunFilters(kind=RunKind.PAIRWISE))) == ["r-pair"]
    assert set(ids(runs_for_filters(filters=RunFilters(system="mail-bot")))) == {"r-system", "r-pair"}
    assert ids(runs_for_filters(filters=RunFilters(testset="faq-questions"))) == ["r-judge"]
    assert ids(runs_for_filters(filters=RunFilters(outcome="running"))) == ["r-pair"]
    assert ids(runs_for_filters(filters=RunFilters(outcome="failed"))) == ["r-failed"]
    assert set(ids(runs_for_filters(filters=RunFilters(outcome="result")))) == {
        "r-title", "r-system", "r-testset", "r-judge", "r-jury",
    }
    # Dates are days, both ends included.
    assert ids(
        runs_for_filters(filters=RunFilters(since=dt.date(2026, 11, 2), until=dt.date(2026, 11, 3)))
    ) == ["r-testset", "r-system"]
    assert ids(runs_for_filters(filters=RunFilters(until=dt.date(2026, 11, 1)))) == ["r-title"]
    tags.run_tag_add(run=fleet["r-judge"], name="Nightly")
    assert ids(runs_for_filters(filters=RunFilters(tag="nightly"))) == ["r-judge"]
    assert ids(runs_for_filters(filters=RunFilters(tag="nightly", kind=RunKind.PAIRWISE))) == []


def test_an_outcome_the_gate_decides_is_read_run_by_run(judge):
    run = pointwise_run(judge=judge, n=2, run_id="r-gated")
    runs.run_execute_inline(run=run)
    key = run_outcome(Run.objects.get(pk=run.pk))["key"]
    assert key in ("passed", "blocked")
    other = "blocked" if key == "passed" else "passed"
    assert ids(runs_for_filters(filters=RunFilters(outcome=key))) == ["r-gated"]
    assert ids(runs_for_filters(filters=RunFilters(outcome=other))) == []
    page = run_page_get(filters=RunFilters(outcome=key))
    assert page["page"].paginator.count == 1 and page["rows"][0]["outcome"]["key"] == key


def test_paging_counts_every_run_and_keeps_the_filters(client, reviewer):
    for i in range(120):
        make_run(f"r-{i:03d}", title="batch" if i % 2 else "other")
    client.force_login(reviewer)
    first = client.get(reverse("runs"), {"q": "batch"})
    html = first.content.decode()
    assert "60 runs match" in html and "page 1 of 2" in html
    assert 'href="?q=batch&amp;page=2"' in html
    second = client.get(reverse("runs"), {"q": "batch", "page": "2"}).content.decode()
    assert "Page 2 of 2" in second and "r-001" in second and "r-002" not in second
    assert 'href="?q=batch&amp;page=1"' in second
    # Page 2 holds the 10 oldest of the 60: none of page 1's.
    assert second.count("data-run=") == 10


@pytest.mark.parametrize("page", ["999", "-1", "two", ""])
def test_a_page_out_of_range_shows_a_page_not_an_error(client, reviewer, page):
    for i in range(55):
        make_run(f"r-{i:03d}")
    client.force_login(reviewer)
    response = client.get(reverse("runs"), {"page": page})
    assert response.status_code == 200
    assert response.content.decode().count("data-run=") in (50, 5)


@pytest.mark.parametrize("params, field", [
    ({"since": "2026-13-40"}, "From"),
    ({"until": "yesterday"}, "To"),
    ({"since": "2026-11-05", "until": "2026-11-01"}, "To"),
    ({"outcome": "<script>"}, "Outcome"),
])
def test_bad_filters_are_a_form_error_and_the_list_still_shows(client, reviewer, fleet, params, field):
    client.force_login(reviewer)
    response = client.get(reverse("runs"), params)
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="filter-errors"' in html and f"<li>{field}:" in html and "This filter is not applied" in html
    assert "<script>" not in html.split('id="filter-errors"')[1]
    assert html.count("data-run=") == 7


def test_htmx_request_gets_only_the_list(client, reviewer, fleet):
    client.force_login(reviewer)
    html = client.get(reverse("runs"), {"q": "refund"}, headers=HTMX).content.decode()
    assert html.lstrip().startswith('<div id="runs-list">') and "<form" not in html
    assert "r-title" in html and "r-system" not in html


def test_empty_state_says_nothing_matches(client, reviewer, fleet):
    client.force_login(reviewer)
    html = client.get(reverse("runs"), {"q": "zzz"}).content.decode()
    assert "No run matches these filters" in html


def test_a_page_of_50_runs_reads_in_a_bounded_number_of_queries(
    client, reviewer, make_judge, make_system, django_assert_max_num_queries
):
    judge, system, faq = make_judge(), make_system(), make_testset("faq")
    for i in range(60):
        run = make_run(f"r-{i:03d}", judge=judge, system=system, testset=faq)
        tags.run_tags_add(run=run, names=["nightly", f"t{i % 3}"])
    client.force_login(reviewer)
    with django_assert_max_num_queries(20):
        response = client.get(reverse("runs"), {"tag": "nightly"})
    html = response.content.decode()
    assert html.count("data-run=") == 50 and html.count('class="badge" href="/runs/?tag=nightly"') == 50


def test_tag_names_are_checked():
    assert tags.tag_name_clean(" RC-2 ") == "rc-2"
    for bad in ("", "two words", "x" * 41, "-lead", "<b>", "a;b"):
        with pytest.raises(InputError):
            tags.tag_name_clean(bad)


def test_a_reviewer_tags_a_run_and_finds_it_by_tag(client, reviewer, fleet):
    client.force_login(reviewer)
    url = reverse("run_tag_add", args=["r-judge"])
    response = client.post(url, {"name": "Release-Candidate"}, headers=HTMX)
    assert response.status_code == 200 and "release-candidate" in response.content.decode()
    tag = RunTag.objects.get(run=fleet["r-judge"])
    assert tag.name == "release-candidate" and tag.created_by == reviewer
    # Twice is once.
    client.post(url, {"name": "release-candidate"}, headers=HTMX)
    assert RunTag.objects.filter(run=fleet["r-judge"]).count() == 1
    found = client.get(reverse("runs"), {"tag": "release-candidate"}).content.decode()
    assert found.count("data-run=") == 1 and 'data-run="r-judge"' in found
    # The run page shows it; removing it takes it off.
    assert "release-candidate" in client.get(reverse("run_detail", args=["r-judge"])).content.decode()
    client.post(reverse("run_tag_remove", args=["r-judge", "release-candidate"]), headers=HTMX)
    assert not RunTag.objects.filter(run=fleet["r-judge"]).exists()


def test_a_bad_tag_is_a_form_error_and_nothing_is_stored(client, reviewer, fleet):
    client.force_login(reviewer)
    response = client.post(reverse("run_tag_add", args=["r-judge"]), {"name": "<img src=x>"}, headers=HTMX)
    html = response.content.decode()
    # A 200, as every form answers htmx: htmx 2 swaps no 4xx answer, so a 400 left the box without its error.
    assert response.status_code == 200 and html.lstrip().startswith('<div id="run-tags"')
    assert 'id="run-tag-error"' in html and "Tag &#x27;&lt;img src=x&gt;&#x27; is not allowed" in html and "<img" not in html
    assert not RunTag.objects.exists()
    # Without JavaScript: back to the run's page, the error said there.
    response = client.post(reverse("run_tag_add", args=["r-judge"]), {"name": "two words"}, follow=True)
    assert "is not allowed" in response.content.decode() and not RunTag.objects.exists()


def test_an_annotator_cannot_tag(client, annotator, fleet):
    client.force_login(annotator)
    assert client.post(reverse("run_tag_add", args=["r-judge"]), {"name": "x"}).status_code == 403
    assert not RunTag.objects.exists()


# A finished run of every kind with a report its outcome can be read from (pointwise: tests above).
REPORTS = {
    RunKind.PAIRWISE: {"wins_a": 9, "wins_b": 1, "winner": "A", "sign_test": {"significant": True, "p_value": 0.02}},
    RunKind.BLIND: {"comparison": {"winner": "v2", "ranking": ["v2", "v1"]}},
    RunKind.RANK: {"ranking": [{"id": "a.md"}, {"id": "b.md"}]},
    RunKind.AGENT: {"counts": {"met": 2, "total": 3}},
    RunKind.JURY: {"passed": 1, "total": 2},
}


def test_every_kind_says_its_own_outcome_and_the_filter_finds_it(make_judge):
    """Each kind's handler words its finished runs (no ladder in the web shell), within the outcomes it declares;
    the runs page's outcome filter, built from those declarations, finds each run under the key it shows."""
    from judgeapp.judging.runkind import handlers_all

    for handler in handlers_all():
        for status in (RunStatus.DONE, RunStatus.INVALID):
            run = Run.objects.create(run_id=f"{handler.kind}-{status}", kind=handler.kind, status=status,
                                     report=REPORTS.get(handler.kind, {"invalid_reasons": ["a reason"]}))
            if handler.kind == RunKind.POINTWISE:
                continue  # its gate needs a judged run (test_an_outcome_the_gate_decides_is_read_run_by_run)
            shown = run_outcome(run)
            assert shown["key"] in (handler.outcomes or ("result", "failed")), (handler.kind, status, shown)
            assert run.run_id in ids(runs_for_filters(filters=RunFilters(outcome=shown["key"]))), (handler.kind, status, shown)
    assert run_outcome(Run.objects.get(run_id="pairwise-done"))["word"] == "winner A"
    assert run_outcome(Run.objects.get(run_id="checkup-invalid")) == {
        "key": "failed", "word": "invalid", "tone": "bad", "detail": "a reason",
    }


def test_a_page_filtered_by_a_gate_outcome_reads_each_runs_gate_once(client, reviewer, judge, monkeypatch):
    """The filter reads each run's gate to find the matches; the page's rows say the same outcome without
    reading it again (a gate reads the baseline, the calibration and the leads' decisions)."""
    from judgeapp.releases import selectors as release_selectors

    run = pointwise_run(judge=judge, n=2, run_id="r-gated")
    runs.run_execute_inline(run=run)
    key = run_outcome(Run.objects.get(pk=run.pk))["key"]
    read = []
    gate_for_run = release_selectors.gate_for_run
    monkeypatch.setattr(release_selectors, "gate_for_run", lambda **kw: read.append(kw["run"].run_id) or gate_for_run(**kw))
    client.force_login(reviewer)
    html = client.get(reverse("runs"), {"outcome": key}).content.decode()
    assert 'data-run="r-gated"' in html and read == ["r-gated"]
