"""A run's judges: their configurations, the one whose verdicts a run's figures are of, and the scope
(prompt and rubric versions) their evidence and locks are read in."""

from __future__ import annotations

from judgeapp.models import Run, RunKind, content_hash, short_version

POOLED_JURY = "jury"


def judge_configurations_for_run(*, run: Run) -> dict[str, dict]:
    """{judge name: {"version": configuration hash, "scripted_demo": bool}} of every judge a run used.

    A jury's pooled verdict is a judge of its own, "jury", whose configuration is its panel's.
    """
    configs = {}
    for name, snapshot in (run.config.get("judges") or {}).items():
        configs[name] = {
            "version": snapshot.get("version") or short_version(content_hash(snapshot)),
            "scripted_demo": bool(snapshot.get("scripted_demo")),
        }
    if run.kind == RunKind.JURY and configs:
        panel = sorted(f"{name}:{c['version']}" for name, c in configs.items())
        configs[POOLED_JURY] = {
            "version": short_version(content_hash({"jury": panel})),
            "scripted_demo": any(c["scripted_demo"] for c in configs.values()),
        }
    return configs


def primary_judge_for_run(*, run: Run) -> str | None:
    """The judge whose verdict a run's report stands on: the pooled one for a jury, else the run's judge."""
    configs = judge_configurations_for_run(run=run)
    if POOLED_JURY in configs:
        return POOLED_JURY
    if run.judge_id and run.judge.name in configs:
        return run.judge.name
    return next(iter(configs), None)


def scope_for_run(*, run: Run) -> tuple[str, str]:
    """(prompt version, rubric version) a run was judged with: the scope its judges' evidence and locks are read in."""
    return run.versions.get("prompt") or "", run.versions.get("rubric") or ""
