"""A 10-pair check-up on a real local model (llama.cpp's OpenAI-compatible server with SmolLM2), when one
is wired in; skipped otherwise.

The session fixture `real_model` (tests/realmodel/conftest.py) starts the server and sets the environment;
pointed at a server of your own, the same variables work:
  JUDGEAPP_REALMODEL_BASE_URL           the server's OpenAI base URL, e.g. http://127.0.0.1:8080/v1
  JUDGEAPP_REALMODEL_MODEL              the model name it answers to, e.g. smollm2-135m
  JUDGEAPP_REALMODEL_STRUCTURED_OUTPUT  optional: json_object (the default: llama.cpp takes the schema in it) or none
  JUDGEAPP_REALMODEL_TIMEOUT            optional: seconds a call may take (default 300)

A model this small is not expected to judge well: the test asserts that the report is honest about what
it measured (every call counted, unusable replies counted and the run invalid exactly when they pass 5%,
the figures equal to a recomputation from the stored judgments, a re-run answered by the cache), never a
particular accuracy. The summary is printed, so `pytest -s` shows the figures.
"""

import json
import os

import pytest

from judgeapp.models import Judge, Run, RunStatus
from tests.checkup.builders import run_checkup_command
from tests.checkup.test_runs import FIGURES, independent_figures

pytestmark = pytest.mark.slow


def test_a_ten_pair_check_up_on_the_local_model_reports_honestly_what_it_measured(real_model, transactional_db, capsys, tmp_path):
    BASE_URL = os.environ["JUDGEAPP_REALMODEL_BASE_URL"]
    MODEL = os.environ["JUDGEAPP_REALMODEL_MODEL"]
    Judge.objects.create(
        name="realmodel",
        model=MODEL,
        family="smollm",
        base_url=BASE_URL,
        structured_output=os.environ.get("JUDGEAPP_REALMODEL_STRUCTURED_OUTPUT", "json_object"),
        timeout_seconds=float(os.environ.get("JUDGEAPP_REALMODEL_TIMEOUT", "300")),
        max_concurrency=1,
    )
    report_path = tmp_path / "checkup.json"
    argv = ["--judge", "realmodel", "--set", "llmbar-natural", "--sample", "10", "--seed", "0", "--concurrency", "1"]
    code, out, err = run_checkup_command(capsys, *argv, "--report", str(report_path))
    with capsys.disabled():
        print("\n" + out + (f"\nstderr: {err}" if err.strip() else ""))
    report = json.loads(report_path.read_text())
    run = Run.objects.get(run_id=report["run_id"])
    assert run.status in (RunStatus.DONE, RunStatus.INVALID), run.error
    # Exit 1 on an invalid check-up and on one below the lead's floors (a 135M model is, by far).
    assert code == (0 if run.status == RunStatus.DONE and report["verdict"]["passed"] else 1)
    assert out.rstrip().endswith("\nverdict: " + report["verdict"]["text"])

    assert report["judge"]["model"] == MODEL and report["judge"]["scripted_demo"] is False
    counts, calls = report["counts"], report["calls"]
    assert counts["units"] == calls["judgments"] == 20  # 10 pairs, both orders
    assert calls["called"] + calls["cached"] == 20 and calls["http_requests"] >= calls["called"]
    assert counts["parsed"] + counts["parse_failures"] + counts["truncated"] + counts["no_reply"] == 20
    assert (run.status == RunStatus.INVALID) == (counts["unusable_rate"] > 0.05)
    entry = report["sets"]["llmbar-natural"]
    assert entry["counts"]["pairs"] == 10 and entry["counts"]["judged"] <= 10
    recomputed = independent_figures(run)["llmbar-natural"]
    for key in FIGURES:
        ours = entry["figures"][key]["value"]
        assert (ours is None) == (recomputed[key] is None), key
        if ours is not None:
            assert abs(ours - recomputed[key]) < 1e-9, key

    # The same check-up of the unchanged judge again: every reply it got came from the response cache;
    # only a call that got no reply at all (a refused or timed-out request) or a reply cut at max_tokens
    # (never cached) is asked again.
    code, out, _ = run_checkup_command(capsys, *argv, "--json")
    again = json.loads(out)
    assert again["calls"]["called"] == counts["no_reply"] + counts["truncated"]
    if not counts["no_reply"] and not counts["truncated"]:
        assert again["calls"]["summary"].startswith("no judge call made")
        assert again["sets"]["llmbar-natural"]["figures"] == entry["figures"]
