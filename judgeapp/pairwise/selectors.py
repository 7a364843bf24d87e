"""Reads for the pairwise and jury pages: one case of a run with its replies and every verdict on it."""

from django.http import Http404

from judgeapp.models import Case, Judgment, Output, Purpose, Run


def _case_get(run: Run, case_id: str) -> Case:
    case = Case.objects.filter(testset_id=run.testset_id, case_id=case_id).first()
    if case is None:
        raise Http404(f"no case {case_id!r} in run {run.run_id}")
    return case


def _neighbours(report: dict | None, case_id: str) -> tuple[str | None, str | None]:
    ids = [c["case_id"] for c in (report or {}).get("cases", [])]
    if case_id not in ids:
        return None, None
    i = ids.index(case_id)
    return (ids[i - 1] if i > 0 else None), (ids[i + 1] if i + 1 < len(ids) else None)


def pairwise_case_get(*, run: Run, case_id: str) -> dict:
    """One input of a pairwise run: both versions' replies, both orders' judgments, the combined verdict."""
    case = _case_get(run, case_id)
    outputs = {o.slot: o for o in Output.objects.filter(run=run, case=case, slot__in=("A", "B")).select_related("system")}
    units = {
        u.order: u
        for u in Judgment.objects.filter(run=run, case=case, purpose=Purpose.JUDGE).select_related("judge")
    }
    entry = next((c for c in (run.report or {}).get("cases", []) if c["case_id"] == case_id), None)
    previous, following = _neighbours(run.report, case_id)
    return {
        "case": case,
        "reply_a": outputs.get("A"),
        "reply_b": outputs.get("B"),
        "ab": units.get("ab"),
        "ba": units.get("ba"),
        "entry": entry,
        "previous": previous,
        "next": following,
    }


def jury_case_get(*, run: Run, case_id: str) -> dict:
    """One output of a jury run: the reply, each juror's judgment in panel order, the pooled verdict."""
    from judgeapp.jury.runkind import panel_of

    case = _case_get(run, case_id)
    output = Output.objects.filter(run=run, case=case, slot="").first()
    by_judge = {
        u.judge_id: u for u in Judgment.objects.filter(run=run, case=case, purpose=Purpose.JUDGE).select_related("judge")
    }
    entry = next((c for c in (run.report or {}).get("cases", []) if c["case_id"] == case_id), None)
    jurors = []
    for judge in panel_of(run):
        unit = by_judge.get(judge.pk)
        jurors.append(
            {
                "judge": judge,
                "unit": unit,
                "vote": (unit.parsed or {}).get("verdict") if unit else None,
                "dissent": bool(entry and judge.name in entry.get("dissent", [])),
            }
        )
    previous, following = _neighbours(run.report, case_id)
    return {"case": case, "output": output, "jurors": jurors, "entry": entry, "previous": previous, "next": following}
