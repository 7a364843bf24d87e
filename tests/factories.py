"""Building blocks for tests: test sets, rubrics and runs stored the way the app stores them."""

import json

from judgeapp.judging.content import prompt_register, rubric_store, testset_store
from judgeapp.judging.runs import run_create
from judgeapp.models import Executor, RunKind

RUBRIC_ONE = b'''
name = "support-quality"
[[criteria]]
name = "helpfulness"
description = "Does the reply solve the customer's problem?"
scale = { 1 = "ignores the problem", 2 = "mostly unhelpful", 3 = "partly solves it", 4 = "solves it with gaps", \
5 = "solves it fully" }
examples = { 1 = "Not my problem.", 2 = "Try again later.", 3 = "Check settings.", 4 = "Reset in Settings > Password.", \
5 = "Reset in Settings > Password; the link lasts 2 hours." }
'''

RUBRIC_TWO = RUBRIC_ONE + b'''
[[criteria]]
name = "tone"
description = "Is the reply polite and calm?"
scale = { 1 = "rude", 2 = "curt", 3 = "neutral", 4 = "polite", 5 = "warm and polite" }
examples = { 1 = "Figure it out.", 2 = "Read the docs.", 3 = "See the help page.", 4 = "Happy to help.", \
5 = "Sorry for the trouble, happy to help." }
'''

GOOD_REPLY = "Sorry for the trouble! Go to Settings > Password and click reset; the link arrives by email within 2 minutes."
BAD_REPLY = "No idea, figure it out."


def testset_bytes(n: int, *, output=lambda i: GOOD_REPLY if i % 2 == 0 else BAD_REPLY) -> bytes:
    rows = [
        {"id": f"c{i:03d}", "input": f"I can't reset my password (ticket {i}).", **({"output": output(i)} if output else {})}
        for i in range(n)
    ]
    return "\n".join(json.dumps(r) for r in rows).encode() + b"\n"


def pointwise_run(
    *, judge, n=4, rubric=RUBRIC_ONE, executor=Executor.INLINE, system=None, generate=False, run_id=None, **options
):
    testset = testset_store(
        data=testset_bytes(n, output=None if generate else (lambda i: GOOD_REPLY if i % 2 == 0 else BAD_REPLY)),
        name="support.jsonl",
    )
    rubric_row = rubric_store(data=rubric, name="rubric.toml")
    return run_create(
        kind=RunKind.POINTWISE,
        run_id=run_id,
        executor=executor,
        judge=judge,
        system=system,
        testset=testset,
        rubric=rubric_row,
        prompt=prompt_register(prompt="pointwise"),
        options={"generate": generate, **options},
    )


def judge_locked(run, *, reason: str = "quadratic-weighted kappa 0.12 with people, level 0.60 on sample 1a2b3c4d (30 items)"):
    """The run's judge locked in the run's scope (judge configuration × prompt × rubric) as calibration's lock
    service leaves it after a sample below the level: the lock row the gate reads and its audit entry."""
    from django.utils import timezone

    from calibration.models import JudgeLock
    from judgeapp.judging.audit import SYSTEM, audit_log_create
    from judgeapp.models import AuditLog

    scope = {"judge_name": run.judge.name, "judge_version": run.judge.version,
             "prompt_version": run.versions.get("prompt") or "", "rubric_version": run.versions.get("rubric") or ""}
    JudgeLock.objects.create(**scope, locked=True, reason=reason, changed_at=timezone.now())
    audit_log_create(action=AuditLog.Action.JUDGE_LOCKED, actor=SYSTEM, subject=f"judge {run.judge.name}", reason=reason,
                     run=run, detail={"judge": scope["judge_name"], **{k: v for k, v in scope.items() if k != "judge_name"}})


def artifact_set_ranked(judge, run_id: str, artifacts: dict[str, str], name="poems"):
    """A ranker run's artifact set as the ranker stores it ({artifact id: text}); the run itself not run."""
    from judgeapp.judging.runs import run_create
    from judgeapp.models import Artifact, ArtifactSet, content_hash

    run = run_create(kind=RunKind.RANK, run_id=run_id, executor="inline", judge=judge, options={})
    artifact_set = ArtifactSet.objects.create(run=run, name=name)
    for artifact_id, text in artifacts.items():
        Artifact.objects.create(artifact_set=artifact_set, artifact_id=artifact_id, relative_path=f"{name}/{artifact_id}",
                                content_hash=content_hash(text.encode()), size=len(text.encode()), content=text)
    return artifact_set
