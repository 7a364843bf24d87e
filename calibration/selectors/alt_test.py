"""The alternative annotator test: whether a judge can stand in for one of the people."""

from __future__ import annotations

from calibration.core import alt_test as alt_test_rules
from calibration.models import AgreementResult, AltTestRequirement, CalibrationPolicy
from calibration.selectors.evidence import pooled_counting
from calibration.selectors.policy import policy_get
from calibration.selectors.run_judges import judge_configurations_for_run, primary_judge_for_run, scope_for_run
from judgeapp.models import Run


def alt_test_for_result(result: AgreementResult | None, *, policy: CalibrationPolicy | None = None) -> dict | None:
    """A result's alternative annotator test at the lead's ε, with its `line`; None without a result or
    without an item two people labelled."""
    if result is None:
        return None
    policy = policy or policy_get()
    figures = result.alt_test_at(policy.alt_test_epsilon)
    if figures is None:
        return None
    return {**figures, "line": alt_test_rules.alt_test_line(figures), "sample_id": str(result.sample.uuid)}


def alt_test_result_for_scope(
    *, judge_name: str, judge_version: str, prompt_version: str = "", rubric_version: str = ""
) -> AgreementResult | None:
    """The newest pooled result of a judge configuration in one scope (prompt and rubric versions) that holds
    the test's counts: people's labels of verdicts given under another prompt or rubric never speak for it."""
    results = pooled_counting(
        judge_name=judge_name, judge_version=judge_version, prompt_version=prompt_version or "",
        rubric_version=rubric_version or ""
    )
    return next((r for r in results[:50] if (r.details or {}).get("alt_test")), None)


def alt_test_for_run(*, run: Run) -> list[dict]:
    """Each judge's alternative annotator test as the run's gate reads it: [{judge, judge_version, test (the
    figures, or None), passed, blocks, warns, line}]. Under the lead's policy (`alt_test` warn or block) a
    judge that did not pass — failed, not decided for want of annotators or items, or never tested — warns or
    blocks; with the policy off the entries only inform."""
    policy = policy_get()
    configs = judge_configurations_for_run(run=run)
    primary = primary_judge_for_run(run=run)
    prompt, rubric = scope_for_run(run=run)
    entries = []
    for name in sorted(configs, key=lambda name: (name != primary, name)):
        version = configs[name]["version"]
        result = alt_test_result_for_scope(judge_name=name, judge_version=version, prompt_version=prompt, rubric_version=rubric)
        test = alt_test_for_result(result, policy=policy)
        passed = bool(test and test["passed"])
        required = policy.alt_test != AltTestRequirement.OFF
        entries.append(
            {
                "judge": name,
                "judge_version": version,
                "test": test,
                "passed": test["passed"] if test else None,
                "blocks": required and not passed and policy.alt_test == AltTestRequirement.BLOCK,
                "warns": required and not passed and policy.alt_test == AltTestRequirement.WARN,
                "line": f"judge {name}: alternative annotator test {alt_test_rules.alt_test_line(test)}",
            }
        )
    return entries
