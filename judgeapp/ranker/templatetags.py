"""Template tags for the ranker's run pages (run_detail includes kinds/rank.html and kinds/compare.html)."""

from django import template

from judgeapp.ranker import selectors as selectors_ranker

register = template.Library()


@register.simple_tag
def ranklist_state_of(run):
    """The state of a rank run's ranklist, or None while it has none."""
    ranklist = run.ranklists.first()
    return selectors_ranker.ranklist_state(ranklist=ranklist) if ranklist else None


@register.simple_tag
def direct_comparisons_of(run):
    return list(selectors_ranker.direct_comparisons(run=run))
