"""Schemathesis against the live API (slow): every operation of /api/v1/openapi.json with a lead's token —
the coverage phase's edge and boundary values (negative and non-numeric limits, NUL bytes, lone
surrogates, over-long strings, unknown enum values, undeclared methods and content types), then random
cases, valid and not. What must hold: no answer is a server error (5xx), and a method a path does not take
is a 405 that names the ones it does (`Allow`)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from judgeapp.api.services import api_token_create
from tests import factories

pytestmark = pytest.mark.slow

# Lean enough for a shared 2-core machine (about a minute): the coverage phase tries each parameter's
# edges whatever this is; the fuzzing phase adds up to this many random cases per operation.
MAX_EXAMPLES = 12
CHECKS = "not_a_server_error,unsupported_method,allow_header_conformance"


@pytest.fixture
def lead_token(transactional_db, make_user, make_judge, make_system):
    """A lead's token (a lead reads and decides: every endpoint), a judge, a system and a pointwise run to find."""
    lead = make_user("leo", "reviewer", "lead")
    judge = make_judge("judge-a")
    factories.pointwise_run(judge=judge, system=make_system("support-bot"))
    return api_token_create(user=lead, name="schemathesis")[1]


def test_schemathesis_finds_no_server_error_on_any_operation(live_server, lead_token, tmp_path, capsys):
    report_path = tmp_path / "report.json"
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "st"), "run", f"{live_server.url}/api/v1/openapi.json",
            "--checks", CHECKS,
            "--header", f"Authorization: Bearer {lead_token}",
            "--phases", "examples,coverage,fuzzing",
            "--mode", "all",
            "--max-examples", str(MAX_EXAMPLES),
            "--seed", "26",
            "--workers", "1",
            "--no-shrink",
            "--request-timeout", "30",
            "--report", "json", "--report-json-path", str(report_path),
        ],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path,
    )
    output = result.stdout + result.stderr
    assert report_path.exists(), output[-3000:]
    report = json.loads(report_path.read_text())
    operations, cases = report["operations"], report["test_cases"]
    with capsys.disabled():
        print(f"\nschemathesis {report['schemathesis_version']}: {operations['tested']} of {operations['total']} operations, "
              f"{cases['generated']} cases, {cases['with_failures']} with failures, {len(report['failures'])} unique failures, "
              f"{cases['errored']} errored, in {report['running_time']:.0f} s")
    assert result.returncode == 0 and not report["failures"] and not report["errors"], output[-6000:]
    assert operations["tested"] == operations["total"] >= 16 and cases["generated"] >= 300
