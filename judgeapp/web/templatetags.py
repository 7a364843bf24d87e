"""Filters every page may use: percentages, p-values, a dict entry by a variable key."""

from datetime import datetime

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from judgeapp.web.glossary import BY_SLUG

register = template.Library()


@register.simple_tag
def term(slug: str, label: str = "") -> str:
    """`{% term "kappa" %}`: a statistic's or state's name, linked to its glossary entry, its one-line
    meaning as the tooltip. A link, so the keyboard reaches it."""
    entry = BY_SLUG[slug]
    return format_html(
        '<a class="term" href="{}#{}" title="{}">{}</a>', reverse("glossary"), slug, entry.short, label or entry.term
    )


@register.filter
def glossary_slug(status: str) -> str:
    """A calibration status word's glossary entry: "below level — locked" -> "locked"."""
    return {"below level — locked": "locked"}.get(status, str(status).replace(" ", "-"))


@register.filter
def pct(value, digits: int = 0) -> str:
    """0.734 -> "73%"; None -> "n/a"."""
    if value is None or value == "":
        return "n/a"
    return f"{float(value) * 100:.{int(digits)}f}%"


@register.filter
def pvalue(value) -> str:
    """A p-value as people read it: "0.0313", "< 0.0001"."""
    if value is None or value == "":
        return "n/a"
    value = float(value)
    return "< 0.0001" if value < 0.0001 else f"{value:.4f}"



@register.filter
def get_item(mapping, key):
    """`{{ scores|get_item:name }}`: a dict entry by a variable key."""
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None



@register.filter
def readable(value) -> str:
    """A value from a report or a parsed reply as a person reads it: no Python or JSON repr, floats rounded."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, dict):
        return "; ".join(f"{key}: {readable(item)}" for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(readable(item) for item in value)
    return "—" if value is None else str(value)


@register.filter
def kappa(value) -> str:
    """Cohen's kappa to two places, never "-0.00"."""
    if value is None or value == "":
        return "n/a"
    return f"{float(value):.2f}".replace("-0.00", "0.00")


@register.filter
def signed(value, digits: int = 2) -> str:
    """A difference with its sign: 1.125 -> "+1.13", -0.75 -> "-0.75", never "-0.00"; None -> "—"."""
    if value is None or value == "":
        return "—"
    text = f"{float(value):+.{int(digits)}f}"
    return text.replace("-", "+", 1) if float(text) == 0 else text


@register.filter
def snapshot_words(snapshot: dict | None) -> str:
    """Which labels the agreement figures beside it stand on: "agreement as of labels v12, computed 14:03"."""
    if not snapshot:
        return ""
    words = f"agreement as of labels v{snapshot.get('labels_version') or 0}"
    when = snapshot.get("computed_at")
    if when:
        try:
            words += f", computed {timezone.localtime(datetime.fromisoformat(when)):%Y-%m-%d %H:%M}"
        except (TypeError, ValueError):
            pass
    if snapshot.get("pending"):
        words += "; newer labels are being counted"
    return words
