"""Reads of the pointwise pages."""

from django.db.models import QuerySet

from judgeapp.models import Judgment, Purpose, Run, UnitStatus


def judgments_for_filters(*, run: Run, criterion: str = "", score: int | str = "", status: str = "") -> QuerySet[Judgment]:
    """A run's judge verdicts in report order (case, then criterion), of one criterion, one score (judged
    units only) or one status when given."""
    units = (
        run.judgments.filter(purpose=Purpose.JUDGE)
        .select_related("case", "criterion")
        .only("run_id", "uuid", "key", "status", "parsed", "parse_error", "error", "attempts", "parse_attempts", "cached",
              "trials", "case__case_id", "case__position", "criterion__name", "criterion__position")
        .order_by("case__position", "criterion__position", "id")
    )
    if criterion:
        units = units.filter(criterion__name=criterion)
    if score != "":
        units = units.filter(status=UnitStatus.DONE, parsed__score=int(score))
    if status:
        units = units.filter(status=status)
    return units
