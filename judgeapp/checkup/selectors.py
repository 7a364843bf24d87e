"""Reads for the check-up pages. A judge's latest check-up lives in judgeapp/judging/selectors.py
(`latest_checkup_for_judge`, `latest_checkups_for_judges`), because the judges page and the judge's scorecard show it too."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from judgeapp.checkup.core import DEFAULT_SETS, SETS, load_pairs
from judgeapp.checkup.services import DATASETS_DIR
from judgeapp.judging.accounting import money_text
from judgeapp.judging.pairs import ORDERS
from judgeapp.models import Judge

if TYPE_CHECKING:
    from judgeapp.judging.costs import TokenProfile


def checkup_judge_get(*, name: str) -> Judge | None:
    return Judge.objects.filter(name=name).first()


@cache  # the shipped sets are files of the repo: counted once per process (about 12 ms for all three)
def _pairs_in_set(name: str, datasets_dir: Path) -> int:
    return len(load_pairs(name, datasets_dir))


@cache  # the shipped sets and the check-up's rubric are files of the repo: measured once per process
def _prompt_chars_default(datasets_dir: Path) -> float:
    """The mean length in characters of a default check-up's prompts (every pair, as the run renders it)."""
    from judgeapp.checkup.services import RUBRIC_PATH
    from judgeapp.judging.files import parse_rubric, render_rubric
    from judgeapp.judging.pairs import render_pairwise_prompt

    rubric = render_rubric(parse_rubric(RUBRIC_PATH.read_bytes(), RUBRIC_PATH.name).criteria)
    pairs = [pair for name in DEFAULT_SETS for pair in load_pairs(name, datasets_dir)]
    chars = sum(len(render_pairwise_prompt(rubric=rubric, input=p.input, first=p.output_1, second=p.output_2)) for p in pairs)
    return chars / len(pairs) if pairs else 0.0


def checkup_cost_for_judge(*, judge: Judge, datasets_dir: Path = DATASETS_DIR, profile: TokenProfile | None = None):
    """What a check-up with the button's defaults would cost at the judge's prices (None: unpriced); `profile`:
    the judge's token profile when it is read already (judging/costs.py: judge_token_profiles)."""
    from judgeapp.judging.costs import estimate_from_chars, prices_of

    if prices_of(judge) is None:
        return None
    calls, _sets = checkup_calls_for_defaults(datasets_dir=datasets_dir)
    chars = _prompt_chars_default(Path(datasets_dir))
    return estimate_from_chars(judge=judge, mode="checkup", chars_per_call=chars, calls=calls, profile=profile).cost


def checkup_calls_for_defaults(*, datasets_dir: Path = DATASETS_DIR) -> tuple[int, list[str]]:
    """The judge calls a check-up asks for with the button's defaults (every pair of every shipped set, both
    orders, one trial), and the sets' short titles: what the "Check up" confirmation names."""
    pairs = sum(_pairs_in_set(name, Path(datasets_dir)) for name in DEFAULT_SETS)
    return pairs * len(ORDERS), [SETS[name].title.split(":")[0] for name in DEFAULT_SETS]


def checkup_confirms_for_judges(*, judges: list[Judge]) -> dict:
    """The question each judge's "Check up" button asks first on the judges page (CheckupHandler.page_reads):
    what a check-up at the form's defaults costs, {"checkup_confirms": {judge name: question}}; the priced
    judges' histories read in two queries for all of them."""
    from judgeapp.judging.costs import judge_token_profiles, prices_of

    calls, sets = checkup_calls_for_defaults()
    profiles = judge_token_profiles(judges=[judge for judge in judges if prices_of(judge)], mode="checkup")
    confirms = {}
    for judge in judges:
        cost = checkup_cost_for_judge(judge=judge, profile=profiles.get(judge.pk))
        priced = f", about {money_text(cost)} at its prices" if cost is not None else ""
        confirms[judge.name] = (
            f"Check up {judge.name}? About {calls:,} calls to its endpoint{priced} ({', '.join(sets)}; both orders, one trial "
            "each). A sample of pairs asks fewer, more trials more."
        )
    return {"checkup_confirms": confirms}
