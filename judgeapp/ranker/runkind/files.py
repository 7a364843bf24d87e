"""The ranker's files (CONTRACT §2), always written from the database: the ranklist by temp file and
os.replace, the two logs by appending what they do not hold yet, and beside the ranklist its sidecar,
`<set>.ranklist.meta.json`: the strategy, how well each adjacent pair is supported, the unplaced
candidates with their reasons, the calls made (the ranklist itself stays a plain array of IDs)."""

from __future__ import annotations

from judgeapp.judging.atomic import json_text, write_text_atomic
from judgeapp.models import Artifact, Comparison, Ranklist, RanklistEntry, Run
from judgeapp.ranker.core import jsonl_ensure, read_ranklist, write_ranklist
from judgeapp.ranker.runkind.summary import ranklist_summary


def metadata_record(artifact: Artifact) -> dict:
    return {
        "artifact_id": artifact.artifact_id,
        "relative_path": artifact.relative_path,
        "registered_at": artifact.created_at.isoformat(),
        "artifact_set": artifact.artifact_set.name,
        "content_sha256": artifact.content_hash,
    }


def metadata_sync(ranklist: Ranklist) -> int:
    """metadata.jsonl holds every artifact registered in the ranklist, in arrival order."""
    artifacts = (
        Artifact.objects.filter(insertion__ranklist=ranklist).select_related("artifact_set").order_by("insertion__sequence")
    )
    return jsonl_ensure(
        ranklist.run.run_dir / "metadata.jsonl",
        [metadata_record(a) for a in artifacts],
        key=lambda r: (r.get("artifact_set"), r["artifact_id"]),
    )


def comparison_record(comparison: Comparison) -> dict:
    return {
        "uuid": str(comparison.uuid),
        "compared_at": comparison.created_at.isoformat(),
        "run_id": comparison.run.run_id,
        "artifact_set": comparison.artifact_a.artifact_set.name,
        "ranklist": comparison.ranklist.name if comparison.ranklist_id else None,
        "stage": comparison.stage,
        "index": comparison.index,
        "goal": comparison.goal.text,
        "a": comparison.artifact_a.artifact_id,
        "b": comparison.artifact_b.artifact_id,
        "winner": comparison.winner,
        "rationale": comparison.rationale,
        "verdicts": comparison.verdicts or None,
        "judgment": str(comparison.judgment.uuid),
        "judgment_swapped": str(comparison.judgment_swapped.uuid) if comparison.judgment_swapped_id else None,
    }


def comparisons_sync(run: Run, *, ranklist: Ranklist | None = None, insertion=None) -> int:
    """comparisons.jsonl holds every comparison of the run (narrowed to one ranklist or one insertion
    when only those can be missing)."""
    comparisons = Comparison.objects.filter(run=run).select_related(
        "run", "ranklist__artifact_set", "artifact_a__artifact_set", "artifact_b", "goal", "judgment", "judgment_swapped"
    )
    if ranklist is not None:
        comparisons = comparisons.filter(ranklist=ranklist)
    if insertion is not None:
        comparisons = comparisons.filter(insertion=insertion)
    return jsonl_ensure(
        run.run_dir / "comparisons.jsonl",
        [comparison_record(c) for c in comparisons.order_by("created_at", "id")],
        key=lambda r: r["uuid"],
    )


def ranklist_ids(ranklist: Ranklist) -> list[str]:
    """The ranklist as its file holds it: the first max_size entries (robust's reserve stays out)."""
    return list(
        RanklistEntry.objects.filter(ranklist=ranklist, position__lt=ranklist.max_size)
        .order_by("position")
        .values_list("artifact__artifact_id", flat=True)
    )


def sidecar_path(ranklist: Ranklist):
    return ranklist.path.with_name(f"{ranklist.artifact_set.name}.ranklist.meta.json")


def ranklist_file_write(ranklist: Ranklist) -> list[str]:
    ids = ranklist_ids(ranklist)
    write_ranklist(ranklist.path, ids)
    sidecar_write(ranklist)
    return ids


def sidecar_write(ranklist: Ranklist) -> None:
    summary = ranklist_summary(ranklist)
    keys = (
        "goal", "strategy", "strategy_options", "max_size", "both_orders", "ranking", "reserve", "support",
        "unplaced", "waiting", "comparisons", "judge_calls", "judge", "prompt_version",
    )
    record = {"ranklist": ranklist.path.name, **{key: summary[key] for key in keys}}
    write_text_atomic(sidecar_path(ranklist), json_text(record))


def ranklist_files_repair(ranklist: Ranklist) -> None:
    """Bring the files level with the database (a crash can fall between a commit and a file write).
    Called by the lease holder only."""
    metadata_sync(ranklist)
    comparisons_sync(ranklist.run, ranklist=ranklist)
    ids = ranklist_ids(ranklist)
    try:
        on_disk = read_ranklist(ranklist.path)
    except (OSError, ValueError):
        on_disk = None
    if on_disk != ids:
        write_ranklist(ranklist.path, ids)
    sidecar_write(ranklist)
