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
def instructions_html(text):
    """A lead's Markdown instructions as safe HTML: no raw HTML, links to http, https and mailto only."""
    from judgeapp.judging.markdown import markdown_html

    return markdown_html(text)
