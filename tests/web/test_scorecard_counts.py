"""Issue 28, item 8: the scorecard's counts are exact. One judge, over real HTTP against the fake judge: an
agent run (a verdict it could not read, a reply cut at max_tokens, a refused call), a pairwise run (a case
with unparsable replies, a case where it follows the order), a cache replay of that run, and a check-up.
Every count on the scorecard equals a recount from the units in this test, and the sum of the runs' own
report counts; position evidence counts each distinct prompt pair once, the check-up's pairs included."""

import hashlib
import re
import zlib

import pytest
from django.urls import reverse

from fakejudge import DemoBrain, Reply, ReplyJSON, Runaway, Status
from judgeapp.judging import runs
from judgeapp.models import Judgment, Run, RunStatus, UnitStatus
from judgeapp.web.selectors import scorecard_get
from tests.agent.helpers import agent_run, make_workspace
from tests.checkup.builders import checkup
from tests.pairwise.builders import good_and_bad, pairwise_run

pytestmark = pytest.mark.django_db

AGENT_PROMPT = "You are checking whether another agent's work meets one requirement"
REQUIREMENTS = b"""# Checklist
1. saves the plot to out/accuracy.png
2. writes the metrics to out/metrics.json
3. train.py prints the test accuracy when run
4. keeps a README.md that explains how to run it
"""
CATEGORIES = ("parsed", "parse_failures", "truncated", "no_reply")


def unreadable_checkup_pair(prompt: str) -> bool:
    """About one check-up prompt in three gets a reply with no verdict (deterministic per prompt)."""
    return zlib.crc32(prompt.encode()) % 3 == 0


class Script:
    """The judge: the demo brain, except where a test case needs a failure or a position-following verdict."""

    def __init__(self):
        self.brain = DemoBrain()

    def __call__(self, request):
        prompt = request.prompt
        if AGENT_PROMPT in prompt:
            if "writes the metrics" in prompt:
                return Reply("I looked around and it all seems fine to me.")(request)  # no verdict, ever
            if "prints the test accuracy" in prompt:
                return Runaway()(request)
            if "README" in prompt:
                return Status(400, message="refused")(request)
            return self.brain(request)
        if "(case 1)" in prompt:
            return Reply("Both replies are fine, I suppose.")(request)
        if "(case 2)" in prompt:
            return ReplyJSON({"reasoning": "The first reply is better.", "winner": "1"})(request)
        if "(case " not in prompt and unreadable_checkup_pair(prompt):
            return Reply("I cannot decide.")(request)
        return self.brain(request)


def category(unit: Judgment) -> str:
    """The test's own reading of a unit, from its columns (CONTRACT §6; an agent's verdict says why it is
    unverified)."""
    if unit.run.kind == "agent" and unit.status == UnitStatus.DONE:
        return {"unparsable": "parse_failures", "truncated": "truncated"}.get((unit.parsed or {}).get("reply_problem"), "parsed")
    if unit.status == UnitStatus.DONE:
        return "parsed"
    if unit.parse_error and not unit.error:
        return "truncated" if unit.truncated else "parse_failures"
    return "no_reply"


def distinct_pairs(judge) -> dict[frozenset, tuple[str, str]]:
    """{the two orders' prompts: (the judge's winner in ab, in ba)} of the pairs judged in both orders, the
    first run's answer kept: recounted from the units' stored messages, not their hashes."""
    pairs: dict[frozenset, tuple[str, str]] = {}
    units = Judgment.objects.filter(
        judge=judge, run__kind__in=["pairwise", "checkup"], status=UnitStatus.DONE, order__in=["ab", "ba"],
    )
    by_case: dict[tuple, dict] = {}
    for unit in units.select_related("run").order_by("run__created_at", "id"):
        by_case.setdefault((unit.run.created_at, unit.run_id, unit.case_id), {})[unit.order] = unit
    for _, orders in sorted(by_case.items(), key=lambda item: item[0][:2]):
        if set(orders) == {"ab", "ba"}:
            prompts = frozenset(hashlib.sha256(orders[o].messages[0]["content"].encode()).hexdigest() for o in orders)
            pairs.setdefault(prompts, (orders["ab"].parsed["winner"], orders["ba"].parsed["winner"]))
    return pairs


@pytest.fixture
def mixed_runs(judge, fake_judge, tmp_path):
    fake_judge.action = Script()
    agent = agent_run(judge, make_workspace(tmp_path / "ws"), requirements=REQUIREMENTS)
    runs.run_execute_inline(run=agent, concurrency=1)
    a, b = good_and_bad(6)
    first = pairwise_run(judge=judge, a=a, b=b, n=6, run_id="pairwise-first")
    runs.run_execute_inline(run=first, concurrency=1)
    calls_before_replay = len(fake_judge.chat_requests)
    replay = pairwise_run(judge=judge, a=a, b=b, n=6, run_id="pairwise-replay")
    runs.run_execute_inline(run=replay, concurrency=1)
    replay_calls = len(fake_judge.chat_requests) - calls_before_replay
    check = checkup(judge, sets="llmbar-natural", sample=12, seed=4)
    return {"agent": agent, "first": first, "replay": replay, "checkup": check, "replay_calls": replay_calls}


def test_every_scorecard_count_equals_a_recount_from_the_units(judge, mixed_runs):
    for run in Run.objects.all():
        assert run.status in (RunStatus.DONE, RunStatus.INVALID), (run.run_id, run.error)
    # The replay was answered from the response cache: no call made.
    replayed = Judgment.objects.filter(run=mixed_runs["replay"])
    assert replayed.filter(cached=True).count() == 12 and mixed_runs["replay_calls"] == 0

    card = scorecard_get(name=judge.name, version=judge.version)
    calls = card["calls"]
    units = list(Judgment.objects.filter(judge=judge, status__in=[UnitStatus.DONE, UnitStatus.FAILED]).select_related("run"))
    recount = {c: sum(1 for u in units if category(u) == c) for c in CATEGORIES}
    assert {c: calls[c] for c in CATEGORIES} == recount
    assert calls["calls"] == len(units) == 4 + 12 + 12 + 24
    assert calls["cached"] == sum(1 for u in units if u.cached)
    # The same figures as the four reports' own counts, added up.
    reports = [Run.objects.get(pk=mixed_runs[k].pk).report["counts"] for k in ("agent", "first", "replay", "checkup")]
    assert {c: calls[c] for c in CATEGORIES} == {c: sum(r[c] for r in reports) for c in CATEGORIES}
    # By hand: the agent's unread verdict, cut reply and refused call; case 1 unparsable in both orders of
    # both pairwise runs; the check-up's unreadable prompts (each order a prompt of its own).
    checkup_unreadable = sum(
        1 for u in units if u.run.kind == "checkup" and unreadable_checkup_pair(u.messages[0]["content"] if u.messages else "")
    )
    assert checkup_unreadable > 0
    assert calls["parse_failures"] == 1 + 2 + 2 + checkup_unreadable
    assert calls["truncated"] == 1 and calls["no_reply"] == 1
    by_kind = {row["kind"]: row for row in calls["by_kind"]}
    assert by_kind["agent-as-a-judge"] == {"kind": "agent-as-a-judge", "units": 4, "parsed": 1, "parse_failures": 1,
                                           "truncated": 1, "no_reply": 1}


def test_position_evidence_counts_each_distinct_prompt_pair_once_with_the_check_up(judge, mixed_runs):
    card = scorecard_get(name=judge.name, version=judge.version)
    position = card["position"]
    pairs = distinct_pairs(judge)
    agreed = {"1": "2", "2": "1", "tie": "tie"}  # ab's "1" is A, ba's "2" is A
    expected = {
        "both": len(pairs),
        "agreed": sum(1 for ab, ba in pairs.values() if agreed[ab] == ba),
        "first": sum((ab == "1") + (ba == "1") for ab, ba in pairs.values() if agreed[ab] != ba),
        "second": sum((ab == "2") + (ba == "2") for ab, ba in pairs.values() if agreed[ab] != ba),
    }
    assert {k: position[k] for k in expected} == expected
    rows = {row["run"].run_id: row for row in position["runs"]}
    check_up_pairs = 12 - len({u.case_id for u in Judgment.objects.filter(run=mixed_runs["checkup"], status=UnitStatus.FAILED)})
    # Pairwise: 6 cases, case 1 unreadable, 5 pairs; the replay adds none; the check-up adds its readable pairs.
    assert (rows["pairwise-first"]["both"], rows["pairwise-first"]["repeated"]) == (5, 0)
    assert (rows["pairwise-replay"]["both"], rows["pairwise-replay"]["repeated"]) == (0, 5)
    assert rows[mixed_runs["checkup"].run_id]["both"] == check_up_pairs > 0
    assert position["both"] == 5 + check_up_pairs and position["repeated"] == 5
    # Case 2 follows the order in both runs (the first position twice), counted once.
    assert rows["pairwise-first"]["first"] == 2 and rows["pairwise-replay"]["first"] == 0


def test_the_scorecard_page_shows_the_exact_counts_and_says_what_distinct_means(judge, mixed_runs, client, reviewer):
    card = scorecard_get(name=judge.name, version=judge.version)
    client.force_login(reviewer)
    page = client.get(reverse("judge_scorecard_version", args=[judge.name, judge.version])).content.decode()
    for key in ("parse_failures", "truncated", "no_reply"):
        shown = re.search(rf'data-count="{key}">(\d+)', page)
        assert shown and int(shown.group(1)) == card["calls"][key]
    assert f"of {card['position']['both']} distinct prompt pairs judged in both orders" in page
    assert "the two orders&#x27; prompts (the sha-256 of each, sorted)" in page and "5 repeated pairs left out" in page
    assert 'id="calls-by-kind"' in page and "agent-as-a-judge" in page
