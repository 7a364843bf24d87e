"""`manage.py gate RUN_ID`: the release gate of a run, decided now, for CI (CONTRACT §3).

Exit 0 when it passes, 1 when it is blocked, 2 for a run that does not exist or has no gate. The gate is
computed fresh: a lead's block or a calibration lock that came after the run finished closes it.
"""

import json
import sys

from judgeapp.judging.errors import InputError
from judgeapp.management.base import JudgeCommand
from judgeapp.models import Run, RunKind
from judgeapp.releases.selectors import gate_evaluate
from judgeapp.judging.atomic import json_text, write_text_atomic
from judgeapp.pointwise.services import output_path_check, report_current


class Command(JudgeCommand):
    help = "Decide the release gate of a pointwise run now and print it with its reasons. Exit 0 pass, 1 blocked."

    def add_arguments(self, parser):
        parser.add_argument("run_id", metavar="RUN_ID", help="the run's id, as `evaluate` printed it")
        parser.add_argument("--json", action="store_true", help="print the gate as JSON instead of lines")
        parser.add_argument("--report", metavar="OUT.json", help="also write the run's report, with this gate, here")

    def handle(self, *args, **options):
        report_path = output_path_check(options["report"], "--report") if options.get("report") else None
        run = Run.objects.select_related("system").filter(run_id=options["run_id"]).first()
        if run is None:
            raise InputError(f"no run {options['run_id']!r}")
        if run.kind != RunKind.POINTWISE:
            raise InputError(f"run {run.run_id} is a {run.get_kind_display()} run; the release gate reads pointwise runs")
        if report_path:
            report = report_current(run=run)
            gate = report["gate"]
            write_text_atomic(report_path, json_text(report))
        else:
            gate = gate_evaluate(run=run)
        if options["json"]:
            self.stdout.write(json.dumps({"run_id": run.run_id, **gate}, indent=2))
        else:
            mean, baseline = (run.report or {}).get("mean"), gate["baseline_mean"]
            self.stdout.write(f"GATE: {'PASSED' if gate['passed'] else 'BLOCKED'}")
            self.stdout.write(
                f"run {run.run_id} ({run.status}) · mean {_number(mean)} · threshold {gate['threshold']:g}"
                f" · baseline {_number(baseline)}" + (f" ({gate['baseline_source']})" if gate["baseline_source"] else "")
            )
            for reason in gate["reasons"]:
                self.stdout.write(f"  blocked: {reason}")
            for note in gate["notes"]:
                self.stdout.write(f"  note: {note}")
            if gate["lead_decision"]:
                d = gate["lead_decision"]
                self.stdout.write(f"  lead: {d['verdict']} by {d['by']} at {d['at']}: {d['reason']}")
        if not gate["passed"]:
            sys.exit(1)


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"
