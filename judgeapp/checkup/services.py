"""Starting a judge check-up: read the chosen public sets, draw the sample, then store the pairs, the rubric,
the prompt and the run in one transaction, so that bad input leaves nothing behind.

Every pair of every set is stored as one test set ("checkup-pairs", by content hash: stored once, and its
version names the data a check-up judged); a run judges the pairs of the sets it chose, or its sample.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from django.conf import settings
from django.db import transaction

from judgeapp.checkup.core import SETS, load_pairs, parse_sets, sample_pairs
from judgeapp.judging.content import prompt_register, rubric_load, testset_store
from judgeapp.judging.errors import InputError
from judgeapp.judging.noise import trials_check
from judgeapp.judging.runs import run_create, run_enqueue
from judgeapp.models import Executor, Judge, Run, RunKind

DATASETS_DIR = Path(settings.BASE_DIR) / "datasets"
RUBRIC_PATH = Path(__file__).resolve().with_name("rubric.toml")
TESTSET_NAME = "checkup-pairs.jsonl"


def _sample_check(sample: int | None, seed: int | None) -> None:
    if sample is None:
        if seed is not None:
            raise InputError("--seed without --sample: there is nothing to draw")
        return
    if sample < 1:
        raise InputError(f"--sample {sample}: give a positive number of pairs")


def _pairs_file(datasets_dir: Path) -> tuple[bytes, dict[str, list], dict[str, dict]]:
    """Every pair of every set as one JSONL test set, the pairs by set, and each set's file and its hash."""
    by_set, files, rows = {}, {}, []
    for name, spec in SETS.items():
        path = Path(datasets_dir) / spec.path
        by_set[name] = load_pairs(name, datasets_dir)
        files[name] = {"path": spec.path, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
        rows += [
            {"id": p.case_id, "input": p.input, "set": name, "output_1": p.output_1, "output_2": p.output_2, "label": p.label}
            for p in by_set[name]
        ]
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")
    return data, by_set, files


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
) -> Run:
    """A queued check-up of `judge`, or InputError (one line) with nothing stored.

    `sets`: names from core.SETS (a comma-separated text or a list; all of them by default). With
    `sample`, that many pairs are drawn from each set with `seed` (0 when not given; a set smaller than
    the sample is taken whole); the same seed draws the same pairs again.
    """
    trials = trials_check(trials)
    chosen_sets = parse_sets(sets)
    _sample_check(sample, seed)
    if sample is not None and seed is None:
        seed = 0
    data, by_set, files = _pairs_file(datasets_dir)
    drawn = {name: sample_pairs(by_set[name], sample=sample, seed=seed) for name in chosen_sets}
    case_ids = [p.case_id for name in chosen_sets for p in drawn[name]]
    warnings = []
    if judge.scripted_demo:
        warnings.append(f"{judge.name} is the scripted demo server, not a language model: these figures say nothing about a model")

    with transaction.atomic():
        testset = testset_store(data=data, name=TESTSET_NAME, source_path=str(datasets_dir))
        run = run_create(
            kind=RunKind.CHECKUP,
            run_id=run_id,
            executor=executor,
            created_by=created_by,
            title=f"Check-up of {judge.name} on {', '.join(chosen_sets)}"
            + (f" ({sample} pairs a set, seed {seed})" if sample is not None else ""),
            judge=judge,
            testset=testset,
            rubric=rubric_load(path=RUBRIC_PATH),
            prompt=prompt_register(prompt="pairwise"),
            options={
                "sets": chosen_sets,
                "sample": sample,
                "seed": seed,
                "case_ids": case_ids,
                "per_set": {name: {"drawn": len(drawn[name]), "of": len(by_set[name])} for name in chosen_sets},
                "datasets": {name: files[name] for name in chosen_sets},
                "datasets_dir": str(datasets_dir),
                "warnings": warnings,
                "trials": trials,
            },
        )
        if executor == Executor.CELERY:
            run_enqueue(run=run)
    return run
