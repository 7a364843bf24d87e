from django import template

register = template.Library()


@register.filter
def get_item(mapping, key):
    return mapping.get(key, key) if hasattr(mapping, "get") else key


@register.filter
def index(sequence, position):
    try:
        return sequence[int(position)]
    except (IndexError, TypeError, ValueError):
        return ""


@register.filter
def heat(count, total):
    """A cell's background: the darker, the larger its share of all labels."""
    try:
        share = float(count) / float(total) if total else 0.0
    except (TypeError, ValueError):
        share = 0.0
    alpha = min(0.85, share * 4) if count else 0.0
    return f"rgba(46, 90, 160, {alpha:.2f})"


@register.filter
def split(text):
    return str(text).split()


@register.filter
def alt_test(result):
    """The result's alternative annotator test at the lead's ε (calibration/selectors.py: alt_test_of), or None."""
    from calibration.selectors import alt_test_of

    return alt_test_of(result)


@register.filter
def slices_of(result):
    """A result's per-tag agreement, the worst first by the level's metric, each marked whether it decides."""
    from calibration.selectors import slices_shown

    return slices_shown(result)


@register.filter
def instructions_html(text):
    """A lead's Markdown instructions as safe HTML: no raw HTML, links to http, https and mailto only."""
    from judgeapp.judging.markdown import markdown_html

    return markdown_html(text)


@register.inclusion_tag("calibration/_item_notes.html")
def item_notes(sample, limit=200):
    """The annotators' comments and flags on the sample's items: `{% item_notes sample %}` on its page."""
    from calibration.selectors import sample_flag_count, sample_notes

    rows = sample_notes(sample=sample, limit=limit + 1)
    flags = sample_flag_count(sample=sample)
    return {"notes": {"rows": rows[:limit], "more": len(rows) > limit, "flags": flags}}
