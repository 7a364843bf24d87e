"""The demo's steps register here: each creates one run (skipped when it exists)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User

from judgeapp.models import Judge, System

EVALS = Path(settings.BASE_DIR) / "evals"


@dataclass
class DemoContext:
    judge_url: str
    judge: Judge
    jurors: list[Judge]
    systems: list[System]
    lead: User


Step = Callable[[DemoContext], str | None]
STEPS: list[tuple[str, Step]] = []


def step(run_id: str):
    """Register a demo step that creates the run `run_id` (skipped when it exists)."""

    def register(function: Step) -> Step:
        STEPS.append((run_id, function))
        return function

    return register


def support_testset():
    """evals/support/testset.jsonl as the dataset the demo loads: named "support" (not its file's stem), so the
    run forms list it as "support (v1, 24 cases)"."""
    from judgeapp.judging.content import InputFile

    given = InputFile.from_path(EVALS / "support" / "testset.jsonl")
    given.name = "support.jsonl"
    return given
