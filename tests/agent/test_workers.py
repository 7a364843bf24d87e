"""Agent runs on real Celery workers: requirements in parallel, and a killed worker resumed from the cache."""

import json
import re
from collections import Counter

import pytest

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.judging import runs
from judgeapp.models import Judgment, Run, RunStatus, UnitStatus
from tests.agent.helpers import agent_run, make_workspace
from tests.helpers import wait_for

pytestmark = pytest.mark.slow

CHECKLIST = b"".join(
    f"{i}. writes the metrics to out/metrics.json and mentions \"accuracy\" ({i})\n".encode() for i in range(1, 9)
)


def test_killed_worker_loses_no_requirement_and_resumes_from_the_cache(worker_factory, make_judge, tmp_path, settings):
    settings.AGENT_SANDBOX_ENABLED = False
    with FakeJudgeServer(DemoBrain(), latency=0.4) as slow:
        judge = make_judge("slow", server=slow, max_concurrency=4)
        run = agent_run(judge, make_workspace(tmp_path / "ws"), requirements=CHECKLIST, executor="celery")
        first = worker_factory(concurrency=3, AGENT_SANDBOX_ENABLED="false")
        runs.run_enqueue(run=run)
        wait_for(lambda: Run.objects.get(pk=run.pk).done_units >= 2, 90, message="two requirements judged")
        first.kill()
        done_at_kill = {j.key for j in Judgment.objects.filter(run=run, status=UnitStatus.DONE)}
        assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING

        worker_factory(concurrency=3, AGENT_SANDBOX_ENABLED="false")
        wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, 120, message="the run to finish")
        run.refresh_from_db()
        assert run.status == RunStatus.DONE, run.error
        assert run.done_units == 8 and run.failed_units == 0
        assert [r["verdict"] for r in run.report["requirements"]] == ["met"] * 8
        # Each requirement is a conversation of two calls (read, then verdict). A call is sent twice only if
        # its requirement was in flight when the worker died (one call per killed process at most); a
        # requirement judged before the kill is never judged again, and a resumed one's earlier calls come
        # from the response cache. (Units seen claimed right after the kill once undercounted what was in
        # flight, 2 claims for 3 calls, on PostgreSQL: the bound is the killed processes, and every repeated
        # call must belong to a requirement not done at the kill.)
        bodies = [json.dumps(r.messages, sort_keys=True) for r in slow.chat_requests]
        assert len(set(bodies)) == 16
        assert len(bodies) - 16 <= 3
        repeated = Counter(bodies) - Counter(set(bodies))
        for body in repeated:
            number = re.search(r'out/metrics.json and mentions \\"accuracy\\" \((\d+)\)', body).group(1)
            assert f"req/{number}" not in done_at_kill, f"requirement {number} was judged twice"
        assert max(slow.max_in_flight, 1) > 1  # requirements ran in parallel
