"""The blind comparison panel on a run's page (run_detail includes templates/judgeapp/kinds/blind.html)."""

from django import template

from judgeapp.selectors_blind import blind_run_view

register = template.Library()


@register.inclusion_tag("judgeapp/blind/_run_panel.html", takes_context=True)
def blind_panel(context):
    run = context["run"]
    return {
        "run": run,
        "view": blind_run_view(run=run),
        "csrf_token": context.get("csrf_token"),
        "judgments": context.get("judgments"),
    }


@register.filter
def get_item(mapping, key):
    """`{{ scores|get_item:name }}`: a dict entry by a variable key."""
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None
