"""PandaLM's human-annotated test set (datasets/pandalm/, Apache-2.0) as a finished pairwise run.

testset-v1.json: 999 items {idx, instruction, input, response1, response2, annotator1..3}, each labelled
by three people: 0 = tie, 1 = response 1 is better, 2 = response 2 is better.
gpt-3.5-turbo-testset-v1.json: a GPT-3.5 judge's verdict on each {idx, gpt_result: "1" | "2" | "Tie" | …,
gpt_reason}; a few replies are neither, and count as unjudged.

Imported, response 1 is version A and response 2 is version B; the three annotators become the accounts
pandalm-annotator1..3 (no password: they cannot log in).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import transaction

from calibration.models import Sample
from calibration.services.imports import ImportedPair, judge_of_import, pairwise_run_import
from calibration.services.labels import labels_store
from calibration.services.samples import run_items
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import json_load
from judgeapp.models import Run

DEFAULT_DIR = Path(settings.BASE_DIR) / "datasets" / "pandalm"
RUN_ID = "pandalm-gpt-3.5-turbo"
JUDGE_NAME = "gpt-3.5-turbo"
ANNOTATORS = ("annotator1", "annotator2", "annotator3")
HUMAN_LABELS = {0: "tie", 1: "A", 2: "B"}
JUDGE_VERDICTS = {"1": "A", "2": "B", "tie": "tie"}
INSTRUCTION = (
    "Which response follows the instruction better? The order of the responses means nothing, and a "
    "longer response is not a better one."
)


def _read_json(path: Path) -> list:
    if not path.is_file():
        raise InputError(f"{path}: no such file (PandaLM's data lives in datasets/pandalm/)")
    try:
        data = json_load(path.read_text(encoding="utf-8"), str(path))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc})") from None
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON array")
    return data


def pandalm_read(directory: Path = DEFAULT_DIR) -> tuple[list[ImportedPair], list[tuple[str, str, str]]]:
    """The items with the judge's verdicts, and the human labels as (case_id, annotator, label)."""
    directory = Path(directory)
    items = _read_json(directory / "testset-v1.json")
    verdicts = {}
    for row in _read_json(directory / "gpt-3.5-turbo-testset-v1.json"):
        verdicts[row["idx"]] = row
    pairs, labels = [], []
    for row in items:
        try:
            idx = row["idx"]
            case_id = str(idx)
            prompt = row["instruction"] + (f"\n\nInput: {row['input']}" if row.get("input") else "")
            judged = verdicts.get(idx, {})
            raw = str(judged.get("gpt_result", ""))
            pairs.append(
                ImportedPair(
                    case_id=case_id,
                    input=prompt,
                    a=row["response1"],
                    b=row["response2"],
                    verdict=JUDGE_VERDICTS.get(raw.strip().lower()),
                    reasoning=judged.get("gpt_reason", ""),
                    raw_reply=raw,
                )
            )
            for i, annotator in enumerate(ANNOTATORS, start=1):
                labels.append((case_id, f"pandalm-{annotator}", HUMAN_LABELS[row[f"annotator{i}"]]))
        except (KeyError, TypeError) as exc:
            raise InputError(
                f"{directory / 'testset-v1.json'}: item {row.get('idx', '?') if isinstance(row, dict) else '?'} lacks {exc}"
            ) from None
    return pairs, labels


def pandalm_import(*, directory: Path = DEFAULT_DIR, run_id: str = RUN_ID) -> tuple[Run, Sample]:
    """Import PandaLM as a finished pairwise run and its three annotators' labels as a sample.

    Raises InputError if the run id is taken (the import is done once; see `pandalm_ensure`).
    """
    pairs, labels = pandalm_read(directory)
    with transaction.atomic():
        judge = judge_of_import(name=JUDGE_NAME, model="gpt-3.5-turbo", family="openai")
        run = pairwise_run_import(
            run_id=run_id,
            title="PandaLM test set v1: GPT-3.5 judge vs three human annotators (imported, real data)",
            judge=judge,
            testset_name="pandalm-testset-v1",
            items=pairs,
            source="PandaLM testset-v1 (WeOpenML/PandaLM @ 3871806e, Apache-2.0)",
            instruction=INSTRUCTION,
        )
        items = run_items(run=run)
        summary = labels_store(
            rows=[(run.run_id, case_id, "", annotator, value) for case_id, annotator, value in labels],
            runs={run.run_id: run},
            items_of_run={run.run_id: items},
            source="PandaLM testset-v1.json (annotator1..3)",
        )
    return run, summary.samples[0]


def pandalm_ensure(*, directory: Path = DEFAULT_DIR) -> tuple[Run, Sample | None, bool]:
    """The PandaLM run, imported if it is not there yet: (run, its labels' sample, imported now)."""
    run = Run.objects.filter(run_id=RUN_ID).first()
    if run is not None:
        return run, run.calibration_samples.order_by("created_at").first(), False
    run, sample = pandalm_import(directory=directory)
    return run, sample, True
