"""Reads for the check-up pages. A judge's latest check-up lives in judgeapp/judging/selectors.py
(`checkup_latest`, `checkups_latest`), because the judges page and the judge's scorecard show it too."""

from judgeapp.judging.selectors import checkup_latest, checkups_in_progress, checkups_latest  # noqa: F401
from judgeapp.models import Judge


def checkup_judge_find(*, name: str) -> Judge | None:
    return Judge.objects.filter(name=name).first()
