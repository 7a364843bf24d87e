"""Reads for the jury pages: one output with each juror's verdict and reasoning, in panel order."""

from judgeapp.judging.selectors import case_for_run, neighbours_for_case
from judgeapp.jury.runkind import panel_of
from judgeapp.models import Judgment, Output, Purpose, Run


def jury_case_get(*, run: Run, case_id: str) -> dict:
    """One output of a jury run: the reply, each juror's judgment in panel order, the pooled verdict."""
    case = case_for_run(run, case_id)
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
    previous, following = neighbours_for_case(run.report, case_id)
    return {"case": case, "output": output, "jurors": jurors, "entry": entry, "previous": previous, "next": following}
