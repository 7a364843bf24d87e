"""Template filters of the check-up pages (`{% load checkup %}`): a figure with its interval, the
published figures that stand beside one of ours."""

from django import template

register = template.Library()

FIGURES = (
    ("accuracy_consistent", "Accuracy over consistent verdicts"),
    ("accuracy_all", "Accuracy over all pairs (a disagreement is a miss)"),
    ("accuracy_mean_of_orders", "Accuracy per order (mean of the two)"),
    ("position_consistency", "Position consistency (the two orders agree)"),
    ("kappa", "Cohen's kappa with the human label"),
)


def _number(value, key: str) -> str:
    return (f"{value:.2f}".replace("-0.00", "0.00")) if key == "kappa" else f"{value * 100:.1f}%"


@register.filter
def figure_text(figure: dict | None, key: str) -> str:
    """{"value": 0.93, "ci95": [0.86, 0.97]} -> "93.0% [86.0–97.0%]"; kappa as 0.81 [0.70–0.90]."""
    if not figure or figure.get("value") is None:
        return "n/a"
    text = _number(figure["value"], key)
    if figure.get("ci95"):
        low, high = figure["ci95"]
        text += f" [{_number(low, key)}–{_number(high, key)}]"
    return text


@register.filter
def reference_value(reference: dict) -> str:
    value = reference["value"]
    if isinstance(value, list):
        return f"{value[0]:.2f}–{value[1]:.2f}"
    return _number(value, reference["figure"])


@register.filter
def references_for(entry: dict, key: str) -> list[dict]:
    return [r for r in entry.get("references", []) if r["figure"] == key]


@register.filter
def output_name(verdict: str | None) -> str:
    """A mapped-back verdict as the pair's output it names."""
    return {"A": "output 1", "B": "output 2", "tie": "tie"}.get(verdict, "no verdict")


@register.simple_tag
def checkup_figures():
    return FIGURES
