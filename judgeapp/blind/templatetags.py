"""The blind comparison panel on a run's page (run_detail includes templates/judgeapp/blind/run.html)."""

from django import template

from judgeapp.blind.selectors import blind_run_view

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
