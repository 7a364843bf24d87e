"""Issue 14 over real HTTP against the fake judge: max_tokens sent on every call, a reply cut at it
(finish_reason "length") counted as truncated, retried once with an excerpt, never cached; the counts of
every report add up to its units and the >5% rule reads them all; a context-length 400 fails its unit only."""

import json

import pytest
from django.urls import reverse

from fakejudge import ContextLimit, DemoBrain, Reply, Runaway, Status, When, prompt_contains
from judgeapp.judging.endpoints import MODE_MAX_TOKENS
from judgeapp.judging.errors import InputError
from judgeapp.judging.judges import judges_file_parse
from judgeapp.models import CachedResponse, Judgment, Run, RunStatus

pytestmark = pytest.mark.django_db

RUNAWAY_CASES = ("(ticket 3)", "(ticket 7)")


def evaluate(cli, judge, testset, rubric, *extra):
    return cli("evaluate", "pointwise", "--testset", testset, "--rubric", rubric, "--judge", judge.name, "--concurrency", "1",
               "--threshold", "1", "--format", "json", *extra)


def test_a_runaway_reply_is_truncated_counted_retried_with_an_excerpt_and_never_cached(cli, judge, files, fake_judge):
    fake_judge.action = When(prompt_contains(*RUNAWAY_CASES), Runaway(), DemoBrain())
    testset, rubric = files(n=20)
    result = evaluate(cli, judge, testset, rubric, "--run-id", "runaway")
    assert result.code == 1
    report = json.loads(result.out)
    assert report["counts"] == {**report["counts"], "units": 20, "parsed": 18, "truncated": 2, "parse_failures": 0, "no_reply": 0}
    assert report["invalid"] is True
    assert any("2 of 20 judge replies" in r and "2 truncated" in r for r in report["invalid_reasons"])
    # Every call asked for at most the mode's default; the runaway filled exactly that.
    requests = fake_judge.chat_requests
    assert {r.body.get("max_tokens") for r in requests} == {MODE_MAX_TOKENS["pointwise"]}
    runaway = [r for r in requests if any(c in r.prompt for c in RUNAWAY_CASES)]
    assert len(runaway) == 4  # each cut reply retried once
    for retry in runaway[1::2]:
        shown = retry.messages[1]["content"]
        assert retry.messages[1]["role"] == "assistant" and shown.endswith("[… cut here]") and len(shown) < 250
        assert "cut off at the token limit" in retry.messages[2]["content"]
    units = Judgment.objects.filter(run__run_id="runaway", truncated=True)
    assert units.count() == 2 and all(u.is_parse_failure and u.raw_reply.startswith("Well, let me think") for u in units)
    assert not [r for r in CachedResponse.objects.values_list("response", flat=True) if r.get("finish_reason") == "length"]

    # Again: the parsed replies come from the cache, the cut ones are asked again (nothing of them was kept).
    fake_judge.reset()
    again = json.loads(evaluate(cli, judge, testset, rubric, "--run-id", "runaway-again").out)
    assert again["counts"]["truncated"] == 2
    assert len(fake_judge.chat_requests) == 4


def test_the_run_page_says_how_many_replies_were_cut_at_the_token_limit(cli, judge, files, fake_judge, client, reviewer):
    fake_judge.action = When(prompt_contains(*RUNAWAY_CASES), Runaway(), DemoBrain())
    testset, rubric = files(n=20)
    assert evaluate(cli, judge, testset, rubric, "--run-id", "runaway-page").code == 1
    client.force_login(reviewer)
    page = client.get(reverse("run_detail", args=["runaway-page"])).content.decode()
    assert "18 of 20 read · 0 unreadable after a retry · 2 cut at the token limit · 0 never came" in page
    assert "more than 5% unusable: the run is invalid" in page


def test_one_truncated_reply_in_twenty_is_within_the_rule_and_the_counts_say_so(cli, judge, files, fake_judge):
    fake_judge.action = When(prompt_contains("(ticket 3)"), Runaway(), DemoBrain())
    testset, rubric = files(n=20)
    result = evaluate(cli, judge, testset, rubric)
    report = json.loads(result.out)
    assert result.code == 0 and report["invalid"] is False
    assert report["counts"]["truncated"] == 1 and report["counts"]["unusable_rate"] == 0.05


def test_the_rule_reads_no_reply_and_parse_failures_together_over_all_units(cli, judge, files, fake_judge):
    # One unparsable reply and one refused call in 20: 10% unusable, though each alone is 5%.
    fake_judge.action = When(
        prompt_contains("(ticket 3)"), Status(400, message="the request exceeds the available context size"),
        When(prompt_contains("(ticket 7)"), Reply("{nope"), DemoBrain()),
    )
    testset, rubric = files(n=20)
    result = evaluate(cli, judge, testset, rubric, "--run-id", "both")
    report = json.loads(result.out)
    assert report["counts"] == {**report["counts"], "units": 20, "parsed": 18, "parse_failures": 1, "no_reply": 1, "truncated": 0}
    assert report["invalid"] is True and result.code == 1


def test_a_context_length_400_fails_its_unit_with_the_reason_not_the_run(cli, judge, files, fake_judge):
    fake_judge.action = ContextLimit(DemoBrain(), tokens=2048)
    testset, rubric = files(n=10)
    long_case = json.dumps({"id": "c-long", "input": "word " * 12000, "output": "A reply."})
    with open(testset, "a") as f:
        f.write(long_case + "\n")
    result = evaluate(cli, judge, testset, rubric, "--run-id", "ctx")
    run = Run.objects.get(run_id="ctx")
    assert run.status == RunStatus.INVALID  # 1 of 11 units without a reply; not failed
    report = json.loads(result.out)
    assert report["counts"] == {**report["counts"], "units": 11, "parsed": 10, "no_reply": 1}
    unit = Judgment.objects.get(run=run, case__case_id="c-long")
    assert "HTTP 400" in unit.error and "context size" in unit.error and unit.attempts == 1


def test_max_tokens_comes_from_the_judges_file_and_is_sent(cli, make_judge, files, fake_judge):
    judges, _ = judges_file_parse(b'[judges.short]\nmodel = "m"\nmax_tokens = 64\n', "judges.toml")
    assert judges["short"]["max_tokens"] == 64
    for bad in (b"0", b"-3", b"true", b'"64"'):
        with pytest.raises(InputError, match="max_tokens must be a positive integer"):
            judges_file_parse(b'[judges.short]\nmodel = "m"\nmax_tokens = ' + bad + b"\n", "judges.toml")
    judge = make_judge("short", max_tokens=64)
    testset, rubric = files(n=2)
    assert evaluate(cli, judge, testset, rubric).code == 0
    assert {r.body.get("max_tokens") for r in fake_judge.chat_requests} == {64}
