"""Runs: create, start, fan out into tasks of a few units, claim, record, advance, finalize, cancel, recover.

The database is the source of truth, not the broker. A unit (a Judgment row) is created once per run
(unique key), claimed with a conditional UPDATE before its judge is called, and recorded with another
conditional UPDATE that only the claim's holder can make. A killed worker therefore loses nothing: its
claims are released when its process is found dead (same host) or its lease runs out (elsewhere), and the
units go back to pending; and nothing is judged twice, because a unit is recorded at most once and the
response cache answers a repeated call without reaching the judge.

The rooms: `lifecycle` (a run from created to finished), `units` (claim, judge, record), `sequential` (a run
one task holds), `inline` (a run in the calling process, the CLI), `recovery` (a crashed worker's work put
back). This module names what the rest of the app calls.
"""

from judgeapp.judging.runs.inline import modules_preload, run_execute_inline
from judgeapp.judging.runs.lifecycle import (
    Progress,
    batch_size_for,
    endpoint_snapshots,
    run_advance,
    run_budget_stop,
    run_cancel,
    run_create,
    run_dispatch,
    run_dispatch_next,
    run_enqueue,
    run_fail,
    run_finish,
    run_id_check,
    run_id_free_check,
    run_id_new,
    run_interrupt,
    run_start,
    run_task_send,
)
from judgeapp.judging.runs.recovery import runs_recover
from judgeapp.judging.runs.sequential import run_sequential_execute
from judgeapp.judging.runs.units import (
    claims_give_back,
    endpoint_has_replied,
    judgment_claim,
    judgment_execute,
    judgment_record,
    judgments_claim,
    judgments_execute,
    judgments_record,
    unit_judge,
)

__all__ = [
    "Progress", "batch_size_for", "claims_give_back", "endpoint_has_replied", "endpoint_snapshots", "judgment_claim",
    "judgment_execute", "judgment_record", "judgments_claim", "judgments_execute", "judgments_record",
    "modules_preload", "run_advance", "run_budget_stop", "run_cancel", "run_create", "run_dispatch",
    "run_dispatch_next", "run_enqueue", "run_execute_inline", "run_fail", "run_finish", "run_id_check", "run_id_free_check",
    "run_id_new", "run_interrupt", "run_sequential_execute", "run_start", "run_task_send", "runs_recover", "unit_judge",
]
