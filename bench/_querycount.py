"""Loaded into benchmark workers with `celery worker -I bench._querycount`: counts the SQL statements run
while a task of a run executes, per pool process, and writes the count when the process exits."""

import json
import os
import re
import threading
import time
from pathlib import Path

from celery.signals import task_postrun, task_prerun, worker_process_shutdown
from django.db.backends.signals import connection_created

COUNTED_TASKS = {
    "judgeapp.tasks.execute_judgment", "judgeapp.tasks.execute_judgments", "judgeapp.tasks.start_run",
    "judgeapp.judging.tasks.execute_judgment", "judgeapp.judging.tasks.start_run",
}
_state = {"queries": 0, "seconds": 0.0, "tasks": 0, "active": False, "by_kind": {}}
_lock = threading.Lock()


def _count(execute, sql, params, many, context):
    if not _state["active"]:
        return execute(sql, params, many, context)
    started = time.perf_counter()
    try:
        return execute(sql, params, many, context)
    finally:
        elapsed = time.perf_counter() - started
        words = sql.split(None, 1)
        table = re.search(r'(?:FROM|UPDATE|INTO)\s+"?(\w+)"?', sql, re.I)
        key = f"{words[0].upper() if words else '?'} {table.group(1) if table else ''}".strip()
        with _lock:
            _state["queries"] += 1
            _state["seconds"] += elapsed
            count, seconds = _state["by_kind"].get(key, (0, 0.0))
            _state["by_kind"][key] = (count + 1, seconds + elapsed)


@connection_created.connect
def _wrap(sender, connection, **kwargs):
    if _count not in connection.execute_wrappers:
        connection.execute_wrappers.append(_count)


@task_prerun.connect
def _start(sender=None, **kwargs):
    from django.db import connection

    if sender is not None and sender.name in COUNTED_TASKS:
        # The wrapper list belongs to this thread's connection object and survives reconnects; a pool
        # process may reuse a connection opened before this module was loaded (no connection_created then).
        if _count not in connection.execute_wrappers:
            connection.execute_wrappers.append(_count)
        _state["active"] = True
        _state["tasks"] += 1


@task_postrun.connect
def _stop(sender=None, **kwargs):
    _state["active"] = False


@worker_process_shutdown.connect
def _write(**kwargs):
    folder = os.environ.get("BENCH_QUERYCOUNT_DIR")
    if folder and _state["tasks"]:
        Path(folder, f"{os.getpid()}.json").write_text(
            json.dumps({k: _state[k] for k in ("queries", "seconds", "tasks", "by_kind")})
        )
