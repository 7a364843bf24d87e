"""Reads for the blind comparator's pages. Real version names leave here only once the mapping has been
revealed (after the verdict); before that a page gets labels, `run-N` names and relative file paths."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404

from judgeapp.models import BlindComparison, BlindVersion, Judgment, Run


def blind_comparison_list(*, limit: int = 50) -> QuerySet[BlindComparison]:
    return (
        BlindComparison.objects.select_related("run", "created_by").prefetch_related("versions").order_by("-created_at")[:limit]
    )



def blind_comparison_get(*, uuid) -> BlindComparison:
    return get_object_or_404(BlindComparison.objects.prefetch_related("versions"), uuid=uuid)


def blind_comparison_for_run(*, run_id: str) -> BlindComparison:
    return get_object_or_404(BlindComparison.objects.select_related("run"), run__run_id=run_id)


@dataclass
class RunCard:
    name: str
    files: list[dict]
    unit: Judgment | None = None
    overall: float | None = None
    completed: bool | None = None
    scores: dict | None = None
    error: str = ""


@dataclass
class VersionColumn:
    label: str
    real_name: str | None  # None until the mapping is revealed
    runs: list[RunCard]
    rubric: dict | None = None
    quality: dict | None = None
    expectations: dict | None = None
    consistency: dict | None = None
    place: int | None = None


@dataclass
class BlindRunView:
    comparison: BlindComparison
    columns: list[VersionColumn]
    doc: dict | None  # comparison.json, once done
    criteria: list[dict] = field(default_factory=list)
    score_rows: list[dict] = field(default_factory=list)
    expectation_rows: list[dict] = field(default_factory=list)
    places: list[dict] = field(default_factory=list)
    pairwise: list[dict] = field(default_factory=list)
    task_analysis: str = ""

    @property
    def can_reveal(self) -> bool:
        run = self.comparison.run
        return run is not None and run.is_finished and not self.comparison.is_revealed


def blind_view_for_run(*, run: Run) -> BlindRunView | None:
    """Everything the run page shows, side by side per version, in label order."""
    # The versions (with their runs) read once: the columns and, once revealed, the mapping table use them.
    versions = Prefetch("versions", queryset=BlindVersion.objects.order_by("label", "real_name").prefetch_related("runs"))
    comparison = BlindComparison.objects.filter(run=run).select_related("revealed_by").prefetch_related(versions).first()
    if comparison is None:
        return None
    comparison.run = run  # the page's run: `can_reveal` reads it without a query
    report = run.report or {}
    doc = report.get("comparison")
    # Only what the run cards link to: the units' messages and replies stay on their own pages.
    units = {j.key: j for j in run.judgments.only("key", "uuid", "status", "run_id")}
    per_run = report.get("runs", {})
    revealed = comparison.is_revealed
    columns = []
    for version in comparison.versions.all():
        results = {r["run"]: r for r in per_run.get(version.label, [])}
        cards = []
        for output in version.runs.all():
            result = results.get(output.blinded_name, {})
            cards.append(
                RunCard(
                    name=output.blinded_name,
                    files=output.files,
                    unit=units.get(f"score/{version.label}/{output.blinded_name}"),
                    overall=result.get("overall"),
                    completed=result.get("completed"),
                    scores=result.get("scores"),
                    error=result.get("error", ""),
                )
            )
        column = VersionColumn(label=version.label, real_name=version.real_name if revealed else None, runs=cards)
        if doc:
            column.rubric = doc["rubric"].get(version.label)
            column.quality = doc["output_quality"].get(version.label)
            column.expectations = doc["expectation_results"].get(version.label)
            column.consistency = report.get("consistency", {}).get(version.label)
        columns.append(column)
    view = BlindRunView(comparison=comparison, columns=columns, doc=doc, task_analysis=report.get("task_analysis", ""))
    view.criteria = report.get("rubric_definition") or []
    if doc:
        tied = {label: group for group in doc["ties"] for label in group}
        place, seen = 0, set()
        for label in doc["ranking"]:
            if label in seen:
                continue
            group = tied.get(label, [label])
            place += 1
            seen.update(group)
            view.places.append({"place": place, "labels": group, "tie": len(group) > 1})
            for column in columns:
                if column.label in group:
                    column.place = place
        by_name = {c["name"]: c for c in view.criteria}
        view.score_rows = [
            {"name": name, "description": by_name.get(name, {}).get("description", ""),
             "cells": [column.rubric["scores"][name] for column in columns]}
            for name in doc["rubric"]["criteria"]
        ]
        for i, text in enumerate(comparison.expectations):
            view.expectation_rows.append(
                {"text": text, "cells": [column.expectations["details"][i] for column in columns]}
            )
        view.pairwise = report.get("pairwise", [])
    return view


def page_context_for_run(*, run: Run) -> dict:
    """What a blind run's page shows (BlindHandler.page_reads): the comparison side by side, or None."""
    return {"blind_view": blind_view_for_run(run=run)}
