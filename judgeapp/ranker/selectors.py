"""Reads for the ranker's pages."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404

from judgeapp.models import (
    Artifact,
    Comparison,
    ComparisonStage,
    Insertion,
    InsertionStatus,
    Ranklist,
    RanklistEntry,
    Run,
    RunKind,
)
from judgeapp.ranker.runkind.lease import ranklist_lease_held
from judgeapp.ranker.services import ranklist_summary


def ranklist_list(*, limit: int = 20) -> QuerySet[Ranklist]:
    return Ranklist.objects.select_related("run", "artifact_set", "goal", "judge").order_by("-created_at")[:limit]


def ranklist_get(*, uuid) -> Ranklist:
    return get_object_or_404(Ranklist.objects.select_related("run", "artifact_set", "goal", "judge", "prompt"), uuid=uuid)


def artifact_get(*, ranklist_or_run: Ranklist | Run, pk: int) -> Artifact:
    run = ranklist_or_run.run if isinstance(ranklist_or_run, Ranklist) else ranklist_or_run
    return get_object_or_404(Artifact.objects.select_related("artifact_set"), pk=pk, artifact_set__run=run)


@dataclass
class RanklistState:
    ranklist: Ranklist
    entries: list[RanklistEntry]
    insertions: list[Insertion]
    pending: int
    busy: bool
    summary: dict

    @property
    def rows(self) -> list[dict]:
        """Each entry with the support of its order over the next one (the file's entries; then robust's
        reserve, kept below the cut and out of the file)."""
        support = {p["position"]: p for p in self.summary["support"]["adjacent"]}
        cap = self.ranklist.max_size
        return [{"entry": e, "support": support.get(e.position), "reserve": e.position >= cap} for e in self.entries]

    @property
    def unplaced(self) -> list[Insertion]:
        return [i for i in self.insertions if i.status == InsertionStatus.FAILED]

    @property
    def active(self) -> bool:
        """Still changing: the page keeps polling."""
        return self.pending > 0 or self.busy or not self.ranklist.run.is_finished


def state_for_ranklist(*, ranklist: Ranklist) -> RanklistState:
    ranklist = Ranklist.objects.select_related("run", "artifact_set", "goal", "judge", "prompt").get(pk=ranklist.pk)
    entries = list(ranklist.entries.select_related("artifact").order_by("position"))
    steps = Comparison.objects.select_related("artifact_a", "artifact_b", "judgment", "judgment_swapped").order_by("id")
    insertions = list(
        ranklist.insertions.select_related("artifact").prefetch_related(Prefetch("steps", queryset=steps)).order_by("-sequence")
    )
    pending = sum(1 for i in insertions if i.status == InsertionStatus.PENDING)
    return RanklistState(ranklist, entries, insertions, pending, ranklist_lease_held(ranklist), ranklist_summary(ranklist))


def direct_comparisons_for_run(*, run: Run) -> QuerySet[Comparison]:
    return (
        Comparison.objects.filter(run=run, stage=ComparisonStage.DIRECT)
        .select_related("artifact_a", "artifact_b", "goal", "judgment", "judgment_swapped")
        .order_by("id")
    )


def page_context_for_run(*, run: Run) -> dict:
    """What a rank or compare run's page shows beside its report (RankHandler.page_reads): its ranklist's state
    (None while it has none, and for a compare) and the direct compares it recorded."""
    ranklist = run.ranklists.first() if run.kind == RunKind.RANK else None
    return {
        "ranklist_state": state_for_ranklist(ranklist=ranklist) if ranklist else None,
        "direct_comparisons": list(direct_comparisons_for_run(run=run)),
    }
