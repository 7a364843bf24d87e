"""CI over HTTP, end to end: the web server and a Celery worker as separate processes, a token made with
`manage.py api-token create`, and scripts/ci-gate.sh driving whole pointwise runs with curl: exit 0 on a
passing gate, 1 on a blocked one, and the same run back for a retried Idempotency-Key."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from judgeapp.models import Output, Run, RunStatus
from tests import factories
from tests.factories import BAD_REPLY, GOOD_REPLY, RUBRIC_ONE
from tests.helpers import database_url_for_subprocess, free_port, listening, wait_for

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def child_env() -> dict:
    return {
        **os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": database_url_for_subprocess(),
        "PYTHONUNBUFFERED": "1",
    }


@pytest.fixture
def web_server(transactional_db, tmp_path):
    """`manage.py runserver` in its own process, on the test database; stopped at the end."""
    port = free_port()
    log_path = tmp_path / "web.log"
    with open(log_path, "w") as log:
        web = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", "--noreload", "--skip-checks", f"127.0.0.1:{port}"],
            cwd=ROOT, env=child_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        wait_for(lambda: listening(port) or web.poll() is not None, 60, message="the web server")
        assert web.poll() is None, log_path.read_text()
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        try:
            web.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(web.pid, signal.SIGKILL)
            web.wait(timeout=10)


def jsonl(rows) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode() + b"\n"


def test_ci_gate_over_http_passes_blocks_and_gets_the_same_run_for_a_retried_key(
    web_server, worker_factory, make_judge, make_system, reviewer, tmp_path
):
    judge = make_judge("judge-a", max_concurrency=4)
    make_system("support-bot")
    worker_factory(concurrency=2)

    made = subprocess.run(
        [sys.executable, "manage.py", "api-token", "create", "rita", "--name", "github-actions"],
        cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=120, check=False,
    )
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.startswith("ja_") and "not shown again" in made.stderr

    testset = tmp_path / "testset.jsonl"
    testset.write_bytes(factories.testset_bytes(6, output=None))
    rubric = tmp_path / "rubric.toml"
    rubric.write_bytes(RUBRIC_ONE)
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_bytes(jsonl({"id": f"c{i:03d}", "output": GOOD_REPLY} for i in range(6)))
    bad.write_bytes(jsonl({"id": f"c{i:03d}", "output": BAD_REPLY} for i in range(6)))

    def ci_gate(outputs: Path, key: str) -> subprocess.CompletedProcess:
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "JUDGEAPP_URL": web_server, "JUDGEAPP_TOKEN": token}
        return subprocess.run(
            ["bash", str(ROOT / "scripts" / "ci-gate.sh"), "--testset", str(testset), "--rubric", str(rubric),
             "--outputs", str(outputs), "--judge", judge.name, "--system", "support-bot", "--threshold", "3",
             "--idempotency-key", key, "--poll", "0.5", "--timeout", "120", "--report", str(tmp_path / f"{key}.json")],
            env=env, capture_output=True, text=True, timeout=180, check=False,
        )

    passing = ci_gate(good, "build-7-pass")
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "gate PASSED" in passing.stdout.splitlines()[0] and "GATE: PASSED" in passing.stderr

    blocked = ci_gate(bad, "build-8-block")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "gate BLOCKED" in blocked.stdout.splitlines()[0] and "Blocked because:" in blocked.stdout
    assert "GATE: BLOCKED" in blocked.stderr and "threshold" in blocked.stderr

    retried = ci_gate(good, "build-7-pass")
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert "already started under Idempotency-Key build-7-pass" in retried.stderr

    runs = list(Run.objects.order_by("created_at"))
    assert len(runs) == 2 and all(r.status == RunStatus.DONE for r in runs)
    passed_run, blocked_run = runs
    assert passed_run.run_id in retried.stderr and passed_run.run_id in passing.stderr
    assert passed_run.created_by == reviewer and passed_run.executor == "celery"
    assert passed_run.testset_id == blocked_run.testset_id  # one test set version, two outputs files
    assert Output.objects.filter(run=passed_run, source=Output.Source.FILE).count() == 6
    report = json.loads((tmp_path / "build-7-pass.json").read_text())
    assert report["run_id"] == passed_run.run_id and report["gate"]["passed"] is True
    assert report["mean"] > json.loads((tmp_path / "build-8-block.json").read_text())["mean"]


def test_ci_gate_exits_2_with_one_line_on_a_bad_token_or_bad_input(web_server, make_judge, reviewer, tmp_path):
    make_judge("judge-a")
    testset = tmp_path / "testset.jsonl"
    testset.write_bytes(b"not json\n")
    rubric = tmp_path / "rubric.toml"
    rubric.write_bytes(RUBRIC_ONE)
    from judgeapp.api.services import api_token_create

    token = api_token_create(user=reviewer)[1]

    def ci_gate(*args, token=token):
        env = {"PATH": os.environ["PATH"], "JUDGEAPP_URL": web_server, "JUDGEAPP_TOKEN": token}
        return subprocess.run(
            ["bash", str(ROOT / "scripts" / "ci-gate.sh"), *args], env=env, capture_output=True, text=True, timeout=60,
            check=False,
        )

    bad_input = ci_gate("--testset", str(testset), "--rubric", str(rubric), "--judge", "judge-a")
    assert (
        bad_input.returncode == 2 and bad_input.stderr.strip() == "ci-gate: HTTP 400: testset.jsonl line 1: not valid JSON "
        "(Expecting value)"
    )
    bad_token = ci_gate("--testset", str(testset), "--rubric", str(rubric), token="ja_0_nope")
    assert bad_token.returncode == 2 and "HTTP 401" in bad_token.stderr
    usage = ci_gate("--testset", str(tmp_path / "missing.jsonl"))
    assert usage.returncode == 2 and "no such file" in usage.stderr
    assert Run.objects.count() == 0
