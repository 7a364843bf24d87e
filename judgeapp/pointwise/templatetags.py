"""Template filters for the pointwise report: histogram bars and per-criterion rows, from the report JSON."""

from django import template

from judgeapp.pointwise.runkind import SCRIPTED_DEMO_WARNING

register = template.Library()


@register.filter
def outputs_words(run) -> str:
    """Where the run's replies come from, in words, before its report says it."""
    from judgeapp.judging.replies import outputs_said

    return outputs_said(run)[0]


@register.filter
def histogram_bars(histogram: dict | None) -> list[dict]:
    """[{point, count, height}] with height in percent of the tallest bar (drawn with CSS)."""
    histogram = histogram or {}
    top = max(histogram.values(), default=0)
    total = sum(histogram.values())
    return [
        {
            "point": point,
            "count": count,
            "height": round(100 * count / top) if top else 0,
            "share": round(100 * count / total) if total else 0,
        }
        for point, count in histogram.items()
    ]


@register.filter
def criterion_rows(report: dict | None) -> list[dict]:
    """One row per criterion: mean, 95% CI, n and its own histogram."""
    report = report or {}
    cis = report.get("per_criterion_ci95") or {}
    counts = report.get("per_criterion_n") or {}
    histograms = report.get("histogram_per_criterion") or {}
    return [
        {"name": name, "mean": mean, "ci": cis.get(name), "n": counts.get(name), "histogram": histograms.get(name, {})}
        for name, mean in (report.get("per_criterion") or {}).items()
    ]


@register.filter
def percent(value) -> str:
    try:
        return f"{100 * float(value):.1f}%"
    except (TypeError, ValueError):
        return "—"


@register.filter
def page_warnings(report: dict | None, run) -> list[str]:
    """The report's warnings, less the scripted-demo one when the page's own demo banner already says it."""
    warnings = (report or {}).get("warnings") or []
    if run.uses_scripted_judge:
        return [w for w in warnings if w != SCRIPTED_DEMO_WARNING]
    return warnings
