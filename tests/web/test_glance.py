"""Issue 16, item 1: the pages people decide from say the outcome in words: the dashboard (gate passed or
blocked with the mean, winner or inconclusive with the sign test, the ranklist's top, the share met, the
blind winner; filterable by outcome and system), the releases (gate and mean with its interval, a trend
chart) and the judges (a status per judge)."""

import re

import pytest
from django.urls import reverse

from judgeapp.judging import runs
from judgeapp.models import EndpointSource, Judge, Run, RunKind, RunStatus
from judgeapp.releases import services as release_services
from tests.factories import pointwise_run

pytestmark = pytest.mark.django_db


def _rows(html: str) -> dict[str, str]:
    """{run id: its dashboard row's text}."""
    rows = re.findall(r'<tr data-run="([^"]+)" data-outcome="[^"]*">(.*?)</tr>', html, flags=re.S)
    return {run_id: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)) for run_id, body in rows}


def _finished(kind, run_id, report, **fields):
    return Run.objects.create(
        kind=kind, run_id=run_id, status=RunStatus.DONE, report=report, config=fields.pop("config", {}), **fields,
    )


@pytest.fixture
def gated(judge, make_system):
    system = make_system("support-bot")
    passed = pointwise_run(judge=judge, n=4, run_id="pw-pass", system=system, threshold=1.0)
    runs.run_execute_inline(run=passed)
    blocked = pointwise_run(judge=judge, n=4, run_id="pw-block", system=system, threshold=4.99)
    runs.run_execute_inline(run=blocked)
    return passed, blocked


def test_dashboard_says_gate_passed_or_blocked_with_the_mean(client, reviewer, gated):
    passed, blocked = gated
    client.force_login(reviewer)
    rows = _rows(client.get(reverse("runs")).content.decode())
    passed.refresh_from_db()
    assert "gate passed" in rows["pw-pass"] and f"mean {passed.report['mean']:.2f}" in rows["pw-pass"]
    assert "gate blocked" in rows["pw-block"] and "threshold" in rows["pw-block"]
    # The judge with its calibration badge.
    assert "not calibrated" in rows["pw-pass"]


def test_dashboard_names_a_pairwise_winner_only_when_the_sign_test_says_so(client, reviewer):
    _finished(RunKind.PAIRWISE, "ab-close", {"wins_a": 460, "wins_b": 476, "ties": 38, "winner": "B", "inconclusive": False})
    _finished(RunKind.PAIRWISE, "ab-clear", {"wins_a": 2, "wins_b": 30, "ties": 1, "winner": "B", "inconclusive": False},
              config={"options": {"versions": {"A": {"system": "bot-v1"}, "B": {"system": "bot-v2"}}}})
    _finished(RunKind.PAIRWISE, "ab-order", {"wins_a": 3, "wins_b": 4, "winner": None, "inconclusive": True,
                                             "inconclusive_reasons": ["the two orders disagreed on 9 of 16 cases"]})
    client.force_login(reviewer)
    rows = _rows(client.get(reverse("runs")).content.decode())
    assert (
        "inconclusive: no clear winner" in rows["ab-close"] and "476 of 936" in rows["ab-close"]
        and "p = 0.62" in rows["ab-close"]
    )
    assert "winner bot-v2" in rows["ab-clear"] and "94%" in rows["ab-clear"]
    assert "inconclusive" in rows["ab-order"] and "disagreed on 9 of 16" in rows["ab-order"]


def test_dashboard_says_the_top_item_the_share_met_and_the_blind_winner(client, reviewer):
    _finished(RunKind.RANK, "rk", {"top": [{"id": "alder.md"}, {"id": "fir.md"}], "ranking": ["alder.md", "fir.md"]})
    _finished(RunKind.AGENT, "ag", {"counts": {"total": 6, "met": 4, "not_met": 2, "unverified": 0}, "met_share": 0.6667})
    _finished(RunKind.BLIND, "bl", {"comparison": {"winner": "B", "ranking": ["B", "A"]}})
    client.force_login(reviewer)
    rows = _rows(client.get(reverse("runs")).content.decode())
    assert "top: alder.md" in rows["rk"]
    assert "4 of 6 requirements met" in rows["ag"] and "67%" in rows["ag"]
    assert "blind winner B" in rows["bl"]


def test_dashboard_filters_by_outcome_and_system(client, reviewer, gated, make_system):
    other = make_system("other-bot")
    _finished(RunKind.PAIRWISE, "ab-clear", {"wins_a": 2, "wins_b": 30, "winner": "B", "inconclusive": False},
              config={"options": {"versions": {"A": {"system": "other-bot"}, "B": {"system": "bot-v2"}}}})
    client.force_login(reviewer)
    assert set(_rows(client.get(reverse("runs"), {"outcome": "blocked"}).content.decode())) == {"pw-block"}
    assert set(_rows(client.get(reverse("runs"), {"outcome": "winner"}).content.decode())) == {"ab-clear"}
    assert set(_rows(client.get(reverse("runs"), {"system": other.name}).content.decode())) == {"ab-clear"}
    assert set(_rows(client.get(reverse("runs"), {"system": "support-bot", "outcome": "passed"}).content.decode())) == {"pw-pass"}


def test_dashboard_shows_the_title_with_the_id_beneath(client, reviewer):
    _finished(RunKind.RANK, "20261201T112144Z_21335092", {"top": []}, title="Eight postmortems")
    client.force_login(reviewer)
    html = client.get(reverse("runs")).content.decode()
    link = re.search(r'<a href="/runs/20261201T112144Z_21335092/">([^<]+)</a>', html)
    assert link and link.group(1) == "Eight postmortems"


def test_releases_page_says_each_release_gate_and_mean_with_interval_and_draws_the_trend(client, lead, gated):
    passed, blocked = gated
    passed.refresh_from_db()
    release_services.release_mark(run=passed, actor=lead, label="v1.0")
    client.force_login(lead)
    html = client.get(reverse("releases:releases")).content.decode()
    row = re.search(r'<tbody class="release" data-release="v1.0">(.*?)</tbody>', html, flags=re.S).group(1)
    low, high = passed.report["mean_ci95"]
    assert "gate passed" in row and f"{passed.report['mean']:.2f}" in row and f"{low:.2f}–{high:.2f}" in row
    assert '<svg id="release-trend"' in html and html.count("<circle") >= 1
    # The recent runs say their gate in words, not "gate →".
    assert "gate →" not in html and "gate blocked" in html


def test_judges_page_says_a_status_per_judge(client, reviewer, judge, monkeypatch):
    Judge.objects.create(name="imported-judge", model="gpt-3.5-turbo", family="openai", source=EndpointSource.IMPORT)
    keyed = Judge.objects.create(
        name="keyed", model="m", family="x", base_url="https://judge.example.com/v1", api_key_env="GLANCE_KEY",
    )
    monkeypatch.delenv("GLANCE_KEY", raising=False)
    client.force_login(reviewer)
    html = client.get(reverse("judges")).content.decode()

    def status(name):
        cell = re.search(rf'<td data-readiness="{name}">(.*?)</td>', html, flags=re.S).group(1)
        return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", cell)).strip()

    assert status("imported-judge").startswith("imported, no endpoint")
    assert status(keyed.name).startswith("key not set") and "GLANCE_KEY" in status(keyed.name)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    html = client.get(reverse("judges")).content.decode()
    assert status(judge.name).startswith("ready, not calibrated")
