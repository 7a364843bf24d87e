"""Agent runs: read and check the inputs, take the workspace in, store everything in the run's directory,
create the run (one unit per requirement; judgeapp/agent/runkind.py judges them).

Everything is read and checked before anything is stored: the workspace is unpacked into a staging
directory under DATA_DIR, which becomes the run's directory (`DATA_DIR/runs/<run-id>/`) only when the run
row is created; on any error the staging directory is removed and nothing is left behind.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import transaction

from judgeapp.agent.core import (
    MAX_TOOL_CALLS,
    Requirement,
    Trace,
    Workspace,
    ingest_archive,
    ingest_directory,
    parse_requirements,
    parse_task,
    parse_trace,
)
from judgeapp.agent.runkind import TRACE_FILE, WORKSPACE_DIR, workspace_limits
from judgeapp.judging.atomic import json_text, write_text_atomic
from judgeapp.judging.content import prompt_register
from judgeapp.judging.costs import budget_check
from judgeapp.judging.errors import InputError, refused_when_disk_full
from judgeapp.judging.runs import run_create, run_enqueue, run_id_free_check
from judgeapp.models import Executor, Run, RunKind, content_hash, short_version

log = logging.getLogger(__name__)



@dataclass
class AgentInputs:
    """The task, checklist and trace, read and checked (the workspace is taken in separately)."""

    task: str
    requirements: list[Requirement]
    trace: Trace | None = None
    trace_name: str = ""

    @property
    def versions(self) -> dict:
        requirements = [r.as_dict() for r in self.requirements]
        return {
            "task": short_version(content_hash(self.task)),
            "requirements": short_version(content_hash(requirements)),
            "trace": short_version(content_hash(self.trace.to_jsonl())) if self.trace else None,
        }


def agent_inputs_read(
    *,
    task: bytes,
    task_name: str,
    requirements: bytes,
    requirements_name: str,
    trace: bytes | None = None,
    trace_name: str = "",
) -> AgentInputs:
    return AgentInputs(
        task=parse_task(task, task_name),
        requirements=parse_requirements(requirements, requirements_name),
        trace=parse_trace(trace, trace_name, max_bytes=settings.AGENT_TRACE_MAX_BYTES) if trace is not None else None,
        trace_name=trace_name,
    )


def _ingest(source: str | Path | bytes, name: str, dest: Path, mentioned: str):
    limits = workspace_limits()
    if isinstance(source, bytes):
        return ingest_archive(source, name, dest, limits=limits, mentioned=mentioned)
    path = Path(source)
    if path.is_dir():
        return ingest_directory(path, dest, limits=limits)
    if not path.exists():
        raise InputError(f"{path}: no such directory or archive")
    return ingest_archive(path, name or path.name, dest, limits=limits, mentioned=mentioned)


@refused_when_disk_full
def agent_run_create(
    *,
    inputs: AgentInputs,
    workspace: str | Path | bytes,
    workspace_name: str = "",
    judge,
    run_id: str | None = None,
    executor: str = Executor.CELERY,
    created_by=None,
    title: str = "",
    budget=None,
) -> Run:
    """Take the workspace in (a directory, an archive file, or an archive's bytes) and create the run. `budget`:
    a spend cap in dollars (judging/costs.py): the run stops at it, invalid, its unjudged requirements unverified."""
    budget = agent_check(judge=judge, run_id=run_id, budget=budget)
    runs_dir = Path(settings.DATA_DIR) / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    staging = runs_dir / f".incoming-{uuid.uuid4().hex}"
    try:
        staging.mkdir()
        options, manifest = _workspace_stage(inputs=inputs, workspace=workspace, workspace_name=workspace_name, staging=staging)
        return _agent_store(
            staging=staging, options=options, versions={**inputs.versions, "workspace": short_version(manifest)},
            judge=judge, run_id=run_id, executor=executor, created_by=created_by, title=title, budget=budget,
        )
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def agent_check(*, judge, run_id: str | None, budget) -> Decimal | None:
    """The run id and the budget, checked before the workspace is taken in; the checked budget."""
    budget = budget_check(budget=budget, judges=[judge])
    if run_id:
        run_id_free_check(run_id)
    return budget


def _workspace_stage(
    *, inputs: AgentInputs, workspace: str | Path | bytes, workspace_name: str, staging: Path
) -> tuple[dict, str]:
    """The workspace, task, checklist and trace written into the staging directory (a workspace over its limits
    is refused here, one line); the run's options and the workspace's manifest hash."""
    mentioned = "\n".join([inputs.task, *(r.text for r in inputs.requirements)])
    intake = _ingest(workspace, workspace_name or str(workspace)[:200], staging / WORKSPACE_DIR, mentioned)
    manifest = Workspace(staging / WORKSPACE_DIR).manifest_hash()
    if inputs.trace is not None:
        (staging / TRACE_FILE).write_text(inputs.trace.to_jsonl(), encoding="utf-8")
    (staging / "task.md").write_text(inputs.task + "\n", encoding="utf-8")
    (staging / "requirements.json").write_text(
        json.dumps([r.as_dict() for r in inputs.requirements], indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    warnings = []
    if intake.files == 0:
        warnings.append("the workspace has no files")
    warnings += [f"left out of the workspace: {s}" for s in intake.skipped]
    options = {
        "task": inputs.task,
        "requirements": [r.as_dict() for r in inputs.requirements],
        "workspace": {
            "source": workspace_name or (str(workspace) if not isinstance(workspace, bytes) else "upload"),
            **intake.as_dict(),
        },
        "trace": {"source": inputs.trace_name, "steps": len(inputs.trace.steps)} if inputs.trace else None,
        "max_tool_calls": MAX_TOOL_CALLS,
        "warnings": warnings,
    }
    return options, manifest


@transaction.atomic
def _agent_store(
    *, staging: Path, options: dict, versions: dict, judge, run_id: str | None, executor: str, created_by, title: str, budget,
) -> Run:
    """The queued run, and the staging directory made its directory; a Celery run is sent to the workers once
    this transaction commits."""
    run = run_create(
        kind=RunKind.AGENT,
        run_id=run_id,
        executor=executor,
        created_by=created_by,
        title=title,
        judge=judge,
        prompt=prompt_register(prompt="agent"),
        budget=budget,
        options=options,
        versions=versions,
    )
    destination = run.run_dir
    if destination.exists():
        # Left by a run whose row is gone (a reset database): kept aside, never overwritten.
        orphan = destination.with_name(f".orphan-{destination.name}-{uuid.uuid4().hex[:8]}")
        os.replace(destination, orphan)
        log.warning("moved %s, left by a deleted run, to %s", destination, orphan)
    destination.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staging, destination)
    if executor == Executor.CELERY:
        run_enqueue(run=run)
    return run


def report_write(*, report: dict, path: str | Path) -> Path:
    """Write a report as JSON atomically (temp file + os.replace): a reader never sees half a report."""
    return write_text_atomic(path, json_text(report))
