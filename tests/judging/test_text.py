"""A judge's reply is stored whatever it holds: a NUL or a lone surrogate (which PostgreSQL and every driver
refuse) is replaced, never a batch that cannot be recorded."""

import pytest

from fakejudge import Reply
from judgeapp.judging import runs
from judgeapp.judging.text import storable
from tests.factories import pointwise_run

pytestmark = pytest.mark.django_db


def test_storable_replaces_nul_and_lone_surrogates_deep_in_a_result():
    assert storable(
        {"raw_reply": "a\x00b", "parsed": {"reasoning": "x\ud800y", "score": 4}, "messages": [{"content": "\x00"}]}
    ) == {
        "raw_reply": "a\ufffdb", "parsed": {"reasoning": "x?y", "score": 4}, "messages": [{"content": "\ufffd"}],
    }


def test_a_reply_with_a_nul_and_a_lone_surrogate_is_recorded(judge, fake_judge):
    fake_judge.action = Reply('Here: {"reasoning": "fine\\u0000 reply \\ud800", "score": 4} \u0000')
    run = runs.run_execute_inline(run=pointwise_run(judge=judge, n=2, threshold=1.0))
    assert run.status == "done" and run.report["mean"] == 4
    unit = run.judgments.first()
    assert unit.parsed["reasoning"] == "fine\ufffd reply ?" and "\x00" not in unit.raw_reply
