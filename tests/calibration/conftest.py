"""Calibration fixtures: pointwise runs whose judge scores are planted (through the fake judge over HTTP),
labels in CSV form, and Celery tasks that run in the calling process."""

import csv
import io
import json
import re

import pytest

from fakejudge import DemoBrain, FakeJudgeServer
from fakejudge.server import Reply, When, prompt_contains
from judgeapp.judging import runs, taskqueue
from judgeapp.judging.content import prompt_register, rubric_store, testset_store
from judgeapp.models import Executor, RunKind
from tests.factories import RUBRIC_ONE, RUBRIC_TWO

SYSTEM_NAME = "acme-support-bot-v7"
SYSTEM_MODEL = "secret-sut-model-4b"


@pytest.fixture(autouse=True)
def fast_bootstrap(settings):
    # The intervals are the same computation with fewer resamples; 1000 in production.
    settings.CALIBRATION_BOOTSTRAP_RESAMPLES = 200


@pytest.fixture
def eager_tasks():
    """Celery tasks run in the caller when sent (after commit, as in production)."""
    from judgeapp.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


def planted_grade(reply: str, message: str = "") -> float:
    """The oracle quality the fake judge reads off a reply that says 'grade N': it scores exactly N."""
    match = re.search(r"grade (\d)", reply)
    return (int(match.group(1)) - 1) / 4 if match else 0.5


@pytest.fixture
def planted_server():
    with FakeJudgeServer(DemoBrain(quality=planted_grade)) as server:
        yield server


# A reply carrying this marker gets no usable verdict from the planted judge (see `unreadable_replies`).
UNREADABLE = "(a reply the judge cannot read)"


@pytest.fixture
def unreadable_replies(planted_server):
    """The planted judge answers a reply marked UNREADABLE with a sentence, never a score: a parse failure,
    twice (the client's retry), so the unit fails."""
    planted_server.action = When(
        prompt_contains(UNREADABLE), Reply("I would rather not score this one."), DemoBrain(quality=planted_grade),
    )
    return planted_server


@pytest.fixture
def planted_run(db, make_judge, make_system, planted_server):
    """A finished pointwise run whose judge gave case i the score scores[i] (one criterion unless two_criteria);
    the cases in `unreadable` are marked UNREADABLE (no usable verdict under `unreadable_replies`); `addendum`
    is appended to every reply."""
    created = {}

    def make(scores, *, run_id="planted", judge=None, rubric=RUBRIC_ONE, title="", prompt_text=None, unreadable=(), status="done",
             addendum="", tags=None):
        rows = [
            {
                "id": f"c{i:03d}",
                "input": f"Customer question number {i} about a refund.",
                "output": f"Reply with grade {s}: refunds take 5 days.{addendum}" + (f" {UNREADABLE}" if i in unreadable else ""),
                **({"tags": tags(i)} if tags else {}),  # tags(i): case i's tags (slices)
            }
            for i, s in enumerate(scores)
        ]
        testset = testset_store(data="\n".join(json.dumps(r) for r in rows).encode(), name="planted.jsonl")
        if judge is None:
            judge = created.get("judge") or make_judge(
                "planted-judge", model="judge-model-xl", family="mistral", server=planted_server,
            )
            created["judge"] = judge
        system = created.get("system") or make_system(SYSTEM_NAME, model=SYSTEM_MODEL)
        created["system"] = system
        prompt = prompt_register(prompt="pointwise")
        run = runs.run_create(
            kind=RunKind.POINTWISE,
            run_id=run_id,
            executor=Executor.INLINE,
            title=title or f"{SYSTEM_NAME} release candidate",
            judge=judge,
            system=system,
            testset=testset,
            rubric=rubric_store(data=rubric, name="rubric.toml"),
            prompt=prompt,
            options={"threshold": 1.0},
            versions={"prompt": prompt_text} if prompt_text else None,
        )
        runs.run_execute_inline(run=run)
        run.refresh_from_db()
        assert run.status == status, run.error
        return run

    return make


def labels_csv(rows) -> bytes:
    """rows: (run_id, case_id, criterion, annotator, label)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["run_id", "case_id", "criterion", "annotator", "label"])
    writer.writerows(rows)
    return out.getvalue().encode()


def scores_for(n: int) -> list[int]:
    """Every score 1..5 in turn."""
    return [1 + i % 5 for i in range(n)]


__all__ = ["RUBRIC_ONE", "RUBRIC_TWO", "SYSTEM_MODEL", "SYSTEM_NAME", "UNREADABLE", "labels_csv", "scores_for"]


@pytest.fixture
def small_pairwise_run(db):
    """A finished pairwise run (judged elsewhere, imported) with n items; the judge preferred A on even items."""
    from calibration.services.imports import ImportedPair, pairwise_run_import
    from judgeapp.models import Judge

    def make(n=8, run_id="pairwise-small"):
        judge = Judge.objects.create(name="pair-judge", model="pair-judge-model-70b", family="anthropic")
        items = [
            ImportedPair(case_id=f"p{i}", input=f"Question {i}: how do I export my data?", a=f"Version-one reply {i}.",
                         b=f"Version-two reply {i}.", verdict="A" if i % 2 == 0 else "B",
                         reasoning=f"Secret judge reasoning {i}.", raw_reply="1" if i % 2 == 0 else "2")
            for i in range(n)
        ]
        return pairwise_run_import(run_id=run_id, title=f"{SYSTEM_NAME} A/B", judge=judge, testset_name="pairs",
                                   items=items, source="tests")

    return make


def two_annotators(rows):
    """Each label given twice, by the annotator and a second one who agrees (Krippendorff's alpha 1): a
    sample whose people are reliable, so that it may lock and unlock (a single-annotator one cannot)."""
    rows = list(rows)
    return rows + [(run_id, case_id, criterion, f"{annotator}-2", label) for run_id, case_id, criterion, annotator, label in rows]


@pytest.fixture
def sent(monkeypatch):
    """The samples whose agreement task was sent (the broker replaced by a list)."""
    calls = []

    def send(name, *args, **options):
        if name == taskqueue.COMPUTE_AGREEMENT:
            calls.append(args[0])

    monkeypatch.setattr(taskqueue, "send", send)
    return calls
