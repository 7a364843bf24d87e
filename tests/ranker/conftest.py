"""Ranker fixtures: candidate files whose true quality only an oracle knows, and a fake judge that
compares them by that quality (over real HTTP, through the app's judge client)."""

import random

import pytest

from fakejudge import DemoBrain


class Oracle:
    """True quality of each candidate text; the fake judge reads it, the test checks against it."""

    def __init__(self):
        self.quality: dict[str, float] = {}

    def __call__(self, text: str, goal: str = "") -> float:
        return self.quality.get(text.strip(), 0.0)

    def write(self, directory, n: int, *, seed: int = 0, prefix: str = "cand") -> dict[str, float]:
        """n candidate files with distinct random qualities; {artifact_id: quality}."""
        rng = random.Random(seed)
        directory.mkdir(parents=True, exist_ok=True)
        truth = {}
        for i in range(n):
            name = f"{prefix}-{i:03d}.md"
            text = f"# Report {name}\n\nBody of {name}: {rng.random():.8f}\n"
            quality = rng.random()
            (directory / name).write_text(text)
            self.quality[text.strip()] = quality
            truth[name] = quality
        return truth

    def add(self, path, text: str, quality: float) -> None:
        path.write_text(text)
        self.quality[text.strip()] = quality


@pytest.fixture
def oracle():
    return Oracle()


@pytest.fixture
def oracle_judge(fake_judge, make_judge, oracle):
    """A judge whose verdicts follow the oracle exactly (ties within 1e-9 only)."""
    fake_judge.action = DemoBrain(artifact_quality_fn=oracle, tie_margin=1e-9)
    return make_judge("oracle")


def true_top(truth: dict[str, float], k: int) -> list[str]:
    return sorted(truth, key=truth.get, reverse=True)[:k]
