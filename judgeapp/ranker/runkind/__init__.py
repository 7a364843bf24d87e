"""The ranker's run kinds: a batch rank (Mode 2) and a direct compare (Mode 1), both sequential: one
task holds the run, because each insert depends on the list the previous one left."""

from typing import ClassVar

from django.db.models import F

from judgeapp.judging import shutdown
from judgeapp.judging.content import goal_get_or_create
from judgeapp.judging.costs import run_spent, stopped_reason
from judgeapp.judging.outcomes import outcome
from judgeapp.judging.runkind import RunFailed, RunHandler, register
from judgeapp.judging.runs import run_budget_stop, run_finish
from judgeapp.models import Comparison, Insertion, InsertionSource, InsertionStatus, Run, RunKind, RunStatus, StopReason
from judgeapp.ranker.runkind.comparator import ComparatorFailed, ComparatorSpec
from judgeapp.ranker.runkind.work import compare_report, compare_set_perform, ranklist_summary, ranklist_work


@register
class RankHandler(RunHandler):
    kind = RunKind.RANK
    page_template = "judgeapp/ranker/run_rank.html"
    page_reads: ClassVar[dict[str, str]] = {"run": "judgeapp.ranker.selectors.page_context_for_run"}
    outcomes = ("result",)
    sequential = True

    def outcome(self, run):
        report = run.report or {}
        top = report.get("top") or report.get("ranking") or []
        first = top[0].get("id") if top and isinstance(top[0], dict) else (top[0] if top else None)
        if first:
            return outcome("result", f"top: {first}", "neutral", f"{len(report.get('ranking') or top)} ranked")
        return outcome("result", "nothing ranked", "warn")

    def verdicts(self, run):
        return []  # a ranking is not calibrated against people's labels

    def run_sequential(self, run, progress=None):
        ranklist = run.ranklists.select_related("artifact_set", "goal", "judge", "prompt").get()

        def report_progress():
            if progress:
                counts = Run.objects.filter(pk=run.pk).values("done_units", "failed_units", "total_units").get()
                progress(counts["done_units"] + counts["failed_units"], counts["total_units"])

        def stopped() -> bool:
            # Cancelled or failed meanwhile, or the command running it was asked to stop (it fails the run).
            return shutdown.requested() is not None or not Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).exists()

        def over_budget() -> bool:
            # The spend cap (judging/costs.py): once the calls have cost it, no further candidate is placed (a
            # candidate being placed is finished first, so that the list stays whole; a tournament, its round).
            if run.budget is None or run_spent(run.pk) < run.budget:
                return False
            if not Insertion.objects.filter(ranklist=ranklist, status=InsertionStatus.PENDING).exists():
                return False  # every candidate placed: nothing was left for the cap to stop
            run_budget_stop(run_pk=run.pk)  # the stop every kind's budget makes (judging/runs/lifecycle.py)
            return True

        # No give-up timer: a batch waits for another holder of the ranklist as long as its task may run.
        ranklist_work(
            ranklist_pk=ranklist.pk, until=lambda: stopped() or over_budget(), on_progress=report_progress, wait_seconds=None
        )

        report_progress()
        at_budget = Run.objects.filter(pk=run.pk).values_list("stopped", flat=True).get() == StopReason.BUDGET
        if stopped() or at_budget:
            Insertion.objects.filter(
                ranklist=ranklist, source=InsertionSource.BATCH, status=InsertionStatus.PENDING
            ).update(status=InsertionStatus.CANCELLED)
            if not at_budget:
                return
        summary = ranklist_summary(ranklist)
        report = {
            "run_id": run.run_id,
            "kind": run.kind,
            **summary,
            "versions": {k: run.versions.get(k) for k in ("prompt", "judge", "goal")},
        }
        if at_budget:
            # The ranklist is what the candidates placed before the cap made; the others are `not_placed`.
            run.stopped = StopReason.BUDGET
            report |= {"stopped": StopReason.BUDGET, "invalid": True, "invalid_reasons": [stopped_reason(run)],
                       "budget": {"candidates_not_placed": len(summary["not_placed"])}}
        status = RunStatus.INVALID if summary["failed"] or at_budget else RunStatus.DONE
        run_finish(run_pk=run.pk, status=status, report=report)


@register
class CompareHandler(RunHandler):
    kind = RunKind.COMPARE
    page_template = "judgeapp/ranker/run_compare.html"
    page_reads: ClassVar[dict[str, str]] = {"run": "judgeapp.ranker.selectors.page_context_for_run"}
    sequential = True

    def verdicts(self, run):
        return []

    def run_sequential(self, run, progress=None):
        options = run.options
        spec = ComparatorSpec(
            run=run,
            goal=goal_get_or_create(text=options["goal"]),
            prompt=run.prompt,
            judge=run.judge,
            both_orders=bool(options.get("both_orders")),
        )
        for artifact_set in run.artifact_sets.filter(name__startswith="compare-").order_by("id"):
            if Comparison.objects.filter(run=run, artifact_a__artifact_set=artifact_set).exists():
                continue
            try:
                compare_set_perform(spec, artifact_set=artifact_set, write_files=bool(options.get("files", True)))
            except ComparatorFailed as exc:
                raise RunFailed(str(exc)) from None
        Run.objects.filter(pk=run.pk).update(done_units=F("total_units"))
        if progress:
            progress(1, 1)
        run_finish(run_pk=run.pk, status=RunStatus.DONE, report=compare_report(run))
