"""Starting a judge check-up: read the chosen public sets, draw the sample, then store the pairs, the rubric,
the prompt and the run in one transaction, so that bad input leaves nothing behind.

Every pair of every set is stored as one test set ("checkup-pairs", by content hash: stored once, and its
version names the data a check-up judged); a run judges the pairs of the sets it chose, or its sample. A
check-up of a team's own set (a JSONL file of labelled pairs, `--set FILE` or an upload) stores the pairs it
judges as a test set "checkup-own-pairs" of their own, the set named by its file name and content hash.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import transaction

from judgeapp.checkup.core import SETS, Pair, load_pairs, own_pairs, parse_sets, sample_pairs
from judgeapp.judging.content import InputFile, prompt_register, rubric_load, testset_store
from judgeapp.judging.costs import budget_check
from judgeapp.judging.errors import InputError
from judgeapp.judging.noise import trials_check
from judgeapp.judging.runs import run_create, run_enqueue
from judgeapp.models import Executor, Judge, Run, RunKind

DATASETS_DIR = Path(settings.BASE_DIR) / "datasets"
RUBRIC_PATH = Path(__file__).resolve().with_name("rubric.toml")
TESTSET_NAME = "checkup-pairs.jsonl"
OWN_TESTSET_NAME = "checkup-own-pairs.jsonl"


def _sample_check(sample: int | None, seed: int | None) -> None:
    if sample is None:
        if seed is not None:
            raise InputError("--seed without --sample: there is nothing to draw")
        return
    if sample < 1:
        raise InputError(f"--sample {sample}: give a positive number of pairs")


def _pairs_file(datasets_dir: Path, names=None) -> tuple[bytes, dict[str, list], dict[str, dict]]:
    """Every pair of every set (or of the sets `names`) as one JSONL test set, the pairs by set, and each
    set's file and its hash."""
    by_set, files = {}, {}
    for name in SETS if names is None else names:
        spec = SETS[name]
        path = Path(datasets_dir) / spec.path
        by_set[name] = load_pairs(name, datasets_dir)
        files[name] = {"path": spec.path, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    return _pairs_jsonl(by_set), by_set, files


def _pairs_jsonl(by_set: dict[str, list[Pair]]) -> bytes:
    rows = [
        {"id": p.case_id, "input": p.input, "set": name, "output_1": p.output_1, "output_2": p.output_2, "label": p.label,
         **({"tags": list(p.tags)} if p.tags else {})}
        for name, pairs in by_set.items()
        for p in pairs
    ]
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def own_sets_read(files: list[InputFile]) -> tuple[dict[str, list[Pair]], dict[str, dict]]:
    """A team's own sets: the pairs of each file by its name, and each file's name and content hash; one
    line (the file, the line, the reason) for the first bad row, before anything is stored."""
    by_set, described = {}, {}
    for file in files:
        pairs = own_pairs(file.data, file.name, max_pairs=settings.MAX_TESTSET_CASES)
        name = pairs[0].set
        if name in by_set:
            raise InputError(f"{name}: given twice")
        by_set[name] = pairs
        described[name] = {"path": name, "sha256": hashlib.sha256(file.data).hexdigest(), "own": True}
    return by_set, described


@dataclass
class CheckupPlan:
    """A check-up's inputs, read and checked: the pairs to store as a test set, and the run's title and options."""

    data: bytes
    testset_name: str
    title: str
    options: dict
    budget: Decimal | None


def checkup_run_create(
    *,
    judge: Judge,
    sets: str | list[str] | None = None,
    sample: int | None = None,
    seed: int | None = None,
    trials: int | None = None,
    run_id: str | None = None,
    executor: str = Executor.CELERY,
    created_by=None,
    datasets_dir: Path = DATASETS_DIR,
    own: list[InputFile] | None = None,
    budget=None,
) -> Run:
    """A queued check-up of `judge`, or InputError (one line) with nothing stored.

    `sets`: names from core.SETS (a comma-separated text or a list; all of them by default). With
    `sample`, that many pairs are drawn from each set with `seed` (0 when not given; a set smaller than
    the sample is taken whole); the same seed draws the same pairs again. `own`: a team's own sets (JSONL
    files of labelled pairs), judged after the shipped sets named in `sets` (none unless named).
    """
    plan = checkup_check(
        judge=judge, sets=sets, sample=sample, seed=seed, trials=trials, datasets_dir=datasets_dir, own=own, budget=budget
    )
    return _checkup_store(plan=plan, judge=judge, run_id=run_id, executor=executor, created_by=created_by,
                          datasets_dir=datasets_dir)


def checkup_check(
    *,
    judge: Judge,
    sets: str | list[str] | None,
    sample: int | None,
    seed: int | None,
    trials: int | None,
    datasets_dir: Path,
    own: list[InputFile] | None,
    budget,
) -> CheckupPlan:
    """Everything about a check-up's inputs that can be wrong, found before anything is stored: the sets read,
    the sample drawn."""
    trials = trials_check(trials)
    # A spend cap in dollars (judging/costs.py): the check-up stops at it, invalid, with the pairs judged.
    budget = budget_check(budget=budget, judges=[judge])
    _sample_check(sample, seed)
    own_by_set, own_files = own_sets_read(own or [])
    chosen_sets = parse_sets(sets) if sets or not own else []
    if sample is not None and seed is None:
        seed = 0
    # With a team's own set, only the pairs this check-up judges: the shipped sets' pairs are not copied
    # into a new test set for each file.
    data, by_set, files = _pairs_file(datasets_dir, chosen_sets if own_by_set else None)
    testset_name = TESTSET_NAME
    if own_by_set:
        by_set, files = {**by_set, **own_by_set}, {**files, **own_files}
        data, testset_name = _pairs_jsonl(by_set), OWN_TESTSET_NAME
        chosen_sets += list(own_by_set)
    drawn = {name: sample_pairs(by_set[name], sample=sample, seed=seed) for name in chosen_sets}
    options = {
        "sets": chosen_sets,
        "sample": sample,
        "seed": seed,
        "case_ids": [p.case_id for name in chosen_sets for p in drawn[name]],
        "per_set": {name: {"drawn": len(drawn[name]), "of": len(by_set[name])} for name in chosen_sets},
        "datasets": {name: files[name] for name in chosen_sets},
        "datasets_dir": str(datasets_dir),
        "own_sets": list(own_by_set),
        "warnings": _judge_warnings(judge),
        "trials": trials,
    }
    title = f"Check-up of {judge.name} on {', '.join(chosen_sets)}" + (
        f" ({sample} pairs a set, draw {seed})" if sample is not None else ""
    )
    return CheckupPlan(data=data, testset_name=testset_name, title=title, options=options, budget=budget)


def _judge_warnings(judge: Judge) -> list[str]:
    if judge.scripted_demo:
        return [f"{judge.name} is the scripted demo server, not a language model: these figures say nothing about a model"]
    return []


@transaction.atomic
def _checkup_store(*, plan: CheckupPlan, judge: Judge, run_id: str | None, executor: str, created_by, datasets_dir: Path) -> Run:
    """The pairs (a test set, by content hash), the rubric, the prompt and the queued run; a Celery run is sent
    to the workers once this transaction commits."""
    run = run_create(
        kind=RunKind.CHECKUP,
        run_id=run_id,
        executor=executor,
        created_by=created_by,
        title=plan.title,
        judge=judge,
        testset=testset_store(data=plan.data, name=plan.testset_name, source_path=str(datasets_dir)),
        rubric=rubric_load(path=RUBRIC_PATH),
        prompt=prompt_register(prompt="pairwise"),
        budget=plan.budget,
        options=plan.options,
    )
    if executor == Executor.CELERY:
        run_enqueue(run=run)
    return run
