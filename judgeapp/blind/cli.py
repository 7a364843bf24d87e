"""`blind-compare`: two or more versions compared under random labels, refused on leakage."""

import sys
from pathlib import Path

from calibration.selectors.status import preflight_for_run
from judgeapp.blind.core.inputs import parse_eval_prompt, parse_expectations, split_version_argument
from judgeapp.blind.services import blind_run_create, version_from_directory
from judgeapp.judging.accounting import counts_line
from judgeapp.judging.cli import EXIT_FAILED, JudgeCommand, budget_argument, usage_write
from judgeapp.judging.content import read_input_file
from judgeapp.judging.errors import InputError
from judgeapp.judging.leakage.scan import format_flag
from judgeapp.judging.runs import run_execute_inline, run_id_check
from judgeapp.models import BlindComparison, Executor, RunStatus


# blind-compare: `manage.py blind-compare --version A=DIR --version B=DIR … --prompt F [--expectations F]
#   --output comparison.json`
class BlindCompareCommand(JudgeCommand):
    help = (
        "Compare two or more versions blind: labels A, B, C… to output directories (each possibly with run-* "
        "directories). Stops with exit 1 and the leakage flags if any input reveals an identity; exit 1 when no "
        "valid comparison could be made, 2 on anything else (bad input, a failed run)."
    )

    def add_base_argument(self, parser, *args, **kwargs):
        # CONTRACT §3 gives `--version` to LABEL=DIR; Django's own --version (its release) gives way.
        if "--version" in args:
            return
        super().add_base_argument(parser, *args, **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("--version", action="append", default=[], metavar="LABEL=DIR", dest="versions",
                            help="a blinded label (A, B, C…) and its sanitized output directory; give two or more")
        parser.add_argument("--prompt", required=True, metavar="F", help="file with the original task prompt")
        parser.add_argument("--expectations", metavar="F",
                            help="scenario expectations: a JSON array of texts, or one per line (may be empty)")
        parser.add_argument("--output", required=True, metavar="comparison.json", help="where to write comparison.json")
        parser.add_argument("--judge", metavar="J", help="the judge's name (default: the default judge)")
        parser.add_argument("--run-id", metavar="R", help="the run's id (default: <utc>_<short-uuid>)")
        parser.add_argument("--concurrency", type=int, default=4, metavar="N", help="runs judged at once (default 4)")
        budget_argument(parser)

    def handle(self, *args, **options):
        # Everything is read and checked before anything is stored or judged.
        if len(options["versions"]) < 2:
            raise InputError("give at least two versions: --version A=DIR --version B=DIR")
        if options["concurrency"] < 1:
            raise InputError("--concurrency must be 1 or more")
        pairs = [split_version_argument(v) for v in options["versions"]]
        eval_prompt = parse_eval_prompt(read_input_file(options["prompt"]), options["prompt"])
        expectations = (
            parse_expectations(read_input_file(options["expectations"]), options["expectations"])
            if options["expectations"]
            else []
        )
        output = Path(options["output"]).resolve()
        if output.is_dir():
            raise InputError(f"--output {options['output']}: is a directory; name the file, e.g. comparison.json")
        if not output.parent.is_dir():
            raise InputError(f"--output {options['output']}: the directory {output.parent} does not exist")
        if options["run_id"]:
            run_id_check(options["run_id"])
        judge = self.judge_get(name=options["judge"])
        versions = _versions_read(pairs, output=output, output_given=options["output"])

        outcome = blind_run_create(
            versions=versions,
            eval_prompt=eval_prompt,
            expectations=expectations,
            judge=judge,
            origin=BlindComparison.Origin.CLI,
            executor=Executor.INLINE,
            run_id=options["run_id"],
            output_path=str(output),
            keep_leaks=False,
            budget=options.get("budget"),
        )
        if outcome.leaked:
            for flag in outcome.flags:
                self.stdout.write(format_flag(flag))
            self.stderr.write(
                f"blind comparison stopped: {len(outcome.flags)} leakage flag(s); sanitize those inputs and run "
                "again. No comparison was written."
            )
            sys.exit(1)

        run = outcome.run
        self.warnings_print(preflight_for_run(judges=[judge]))
        self.current_run = run
        bar = self.progress_bar(total=0, desc=f"blind {run.run_id}")
        try:
            run = run_execute_inline(run=run, concurrency=options["concurrency"], progress=self.progress_callback(bar))
        finally:
            bar.close()
            self.current_run = None
        if (run.report or {}).get("stopped"):
            # Stopped at its budget: some runs were never scored, so no comparison is written (exit 1, invalid).
            self.stderr.write(f"error: run {run.run_id} {run.status}: "
                              f"{run.report['budget']['units_not_judged']} runs not scored. "
                              "No comparison was written.")

            usage_write(self, run.report)
            sys.exit(1)
        if run.status != RunStatus.DONE:
            problem = run.error or (run.report or {}).get("problem") or run.status
            self.stderr.write(f"error: run {run.run_id} {run.status}: {problem}. No comparison was written.")
            # Invalid: the judge's replies could not be made a comparison (1). Failed or cancelled: no verdict (2).
            sys.exit(1 if run.status == RunStatus.INVALID else EXIT_FAILED)
        self.stdout.write(f"comparison.json: {output}")
        self.stdout.write("\n".join(_comparison_lines(run.report["comparison"])))
        if run.report.get("counts"):
            self.stdout.write(counts_line(run.report["counts"]))
        self.stdout.write(f"run {run.run_id} done")
        usage_write(self, run.report)


def ranking_line(comparison: dict) -> str:
    """`C > A = B`: `=` between tied versions."""
    group_of = {label: i for i, group in enumerate(comparison["ties"]) for label in group}
    line = ""
    previous = None
    for label in comparison["ranking"]:
        if previous is not None:
            tied = previous in group_of and group_of.get(label) == group_of[previous]
            line += " = " if tied else " > "
        line += label
        previous = label
    return line


def _versions_read(pairs: list[tuple[str, str]], *, output: Path, output_given: str) -> list:
    """Each version's directory read, none of them the same directory, none holding the comparison's file."""
    seen_dirs: dict[Path, str] = {}
    versions = []
    for label, directory in pairs:
        resolved = Path(directory).resolve()
        if resolved in seen_dirs:
            raise InputError(f"versions {seen_dirs[resolved]} and {label} are the same directory {directory}")
        seen_dirs[resolved] = label
        if output.is_relative_to(resolved):
            raise InputError(f"--output {output_given}: inside version {label}'s directory; write it elsewhere")
        versions.append(version_from_directory(label=label, directory=directory))
    return versions


def _comparison_lines(comparison: dict) -> list[str]:
    """The winner (or the ties), the ranking, and each version's score and consistency, as the summary says them."""
    if comparison["winner"]:
        lines = [f"Winner: {comparison['winner']}"]
    else:
        lines = ["Winner: none (" + "; ".join("tie " + ", ".join(t) for t in comparison["ties"]) + ")"]
    lines.append("Ranking: " + ranking_line(comparison))
    for label in comparison["ranking"]:
        entry = comparison["rubric"][label]
        lines.append(f"  {label}: {entry['overall_score']:g}/10, {entry['run_consistency']} consistency")
    return lines
