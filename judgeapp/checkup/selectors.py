"""Reads for the check-up pages. A judge's latest check-up lives in judgeapp/judging/selectors.py
(`checkup_latest`, `checkups_latest`), because the judges page and the judge's scorecard show it too."""

from functools import cache
from pathlib import Path

from judgeapp.checkup.core import DEFAULT_SETS, SETS, load_pairs
from judgeapp.checkup.services import DATASETS_DIR
from judgeapp.judging.pairs import ORDERS
from judgeapp.judging.selectors import checkup_latest, checkups_in_progress, checkups_latest  # noqa: F401
from judgeapp.models import Judge


def checkup_judge_find(*, name: str) -> Judge | None:
    return Judge.objects.filter(name=name).first()


@cache  # the shipped sets are files of the repo: counted once per process (about 12 ms for all three)
def _pairs_in_set(name: str, datasets_dir: Path) -> int:
    return len(load_pairs(name, datasets_dir))


def checkup_calls_default(*, datasets_dir: Path = DATASETS_DIR) -> tuple[int, list[str]]:
    """The judge calls a check-up asks for with the button's defaults (every pair of every shipped set, both
    orders, one trial), and the sets' short titles: what the "Check up" confirmation names."""
    pairs = sum(_pairs_in_set(name, Path(datasets_dir)) for name in DEFAULT_SETS)
    return pairs * len(ORDERS), [SETS[name].title.split(":")[0] for name in DEFAULT_SETS]
