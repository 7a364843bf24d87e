"""The jury's case x judge grid in the panel's order (a report's dicts may come back from the database with
their keys reordered), and each juror's agreement with the pool."""

from django import template

register = template.Library()


@register.filter
def jury_outputs_words(run) -> str:
    """Where the run's replies come from, in words, before its report says it."""
    from judgeapp.judging.replies import outputs_said

    return outputs_said(run)[0]



@register.filter
def jury_grid(report: dict) -> list[dict]:
    """Rows of the grid: one per case, one cell per juror in panel order, dissent marked."""
    jurors = [p["name"] for p in report.get("panel", [])]
    rows = []
    for case in report.get("cases", []):
        votes = case.get("votes", {})
        cells = [
            {
                "judge": juror,
                "vote": votes.get(juror),
                "dissent": juror in case.get("dissent", []),
                "left_out": juror in case.get("left_out", []),
                "reasoning": case.get("reasoning", {}).get(juror, ""),
            }
            for juror in jurors
        ]
        rows.append({**case, "cells": cells})
    return rows


@register.filter
def panel_agreement(report: dict) -> list[dict]:
    """Each juror with its agreement with the pool, its dissent count and whether it is flagged."""
    flagged = {r["judge"] for r in report.get("review", [])}
    agreement = report.get("per_judge_agreement", {})
    dissent = report.get("dissent_count", {})
    answers = report.get("answers", {})
    return [
        {
            **juror,
            "agreement": agreement.get(juror["name"]),
            "dissent": dissent.get(juror["name"], 0),
            "answers": answers.get(juror["name"], 0),
            "flagged": juror["name"] in flagged,
            "failures": len(report.get("judge_failures", {}).get(juror["name"], [])),
        }
        for juror in report.get("panel", [])
    ]
