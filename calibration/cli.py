"""Calibration's commands: `agreement`, `import-labels`, `import-pandalm`."""

import json
from pathlib import Path

from calibration.core.agreement import METRIC_LABELS, format_figure
from calibration.core.alt_test import alt_test_line
from calibration.core.status import unreadable_text
from calibration.selectors.agreement import agreement_figures, latest_agreement_for_judge
from calibration.selectors.policy import level_get, policy_get
from calibration.selectors.run_judges import POOLED_JURY
from calibration.services.agreement import agreement_compute, agreements_refresh
from calibration.services.labels import LABEL_COLUMNS, labels_import
from calibration.services.pandalm import DEFAULT_DIR, pandalm_ensure
from judgeapp.judging.cli import JudgeCommand
from judgeapp.judging.content import read_input_file
from judgeapp.judging.errors import InputError
from judgeapp.models import Judge


# agreement: `manage.py agreement [--judge J]`: judge–human agreement figures (CONTRACT §3).
class AgreementCommand(JudgeCommand):
    help = (
        "Show how each judge configuration agrees with people on its latest human-scored sample: exact agreement, "
        "within one point, quadratic-weighted kappa and Spearman's rho for 1-5 scores; percent agreement and Cohen's "
        "kappa for pass/fail and pairwise; 95% bootstrap intervals; Krippendorff's alpha among annotators; a pass/fail "
        "judge's sensitivity and specificity; the alternative annotator test where people overlap; and whether the "
        "judge is locked for that prompt and rubric."
    )

    def add_arguments(self, parser):
        parser.add_argument("--judge", help="only this judge (its name)")
        parser.add_argument("--json", action="store_true", help="print JSON instead of text")
        parser.add_argument(
            "--epsilon", type=float,
            help="ε of the alternative annotator test, from 0 up to 1 (default: the lead's policy, 0.2 unless changed)",
        )

    def handle(self, *args, **options):
        judge = options.get("judge")
        if judge and not Judge.objects.filter(name=judge).exists() and judge != POOLED_JURY:
            known = ", ".join(Judge.objects.order_by("name").values_list("name", flat=True)) or "none"
            raise InputError(f"unknown judge {judge!r} (known: {known})")
        epsilon = options.get("epsilon")
        if epsilon is not None and not 0 <= epsilon < 1:
            raise InputError(f"--epsilon {epsilon:g}: ε is from 0 up to (not including) 1")
        # Labels whose task has not run yet (no worker, say) are computed here, the same way a worker would.
        refreshed = agreements_refresh()
        rows = latest_agreement_for_judge(judge=judge)
        level = level_get()
        self.epsilon = policy_get().alt_test_epsilon if epsilon is None else epsilon
        if options["json"]:
            judges = [{**_row(r), **_judge_beside_people(r.pooled, self.epsilon)} for r in rows]
            self.stdout.write(json.dumps({"level": level.as_dict(), "judges": judges}, indent=2))
            return
        if refreshed:
            self.stdout.write(f"(computed the agreement of {refreshed} sample(s) whose labels were new)")
        if not rows:
            self.stdout.write(f"No human-scored sample{' for judge ' + judge if judge else ''} yet.")
        for row in rows:
            self._print_row(row)
        self.stdout.write(f"Level: {level} ({level.explained}). A locked judge blocks every release gate that relies on it.")

    def _print_row(self, row):
        r = row.pooled
        state = "LOCKED" if row.lock and row.lock.locked else row.status
        demo = "  (scripted demo judge, not a language model)" if r.scripted_demo else ""
        self.stdout.write(
            f"judge {row.judge_name}  configuration {row.judge_version[:12]}  prompt {r.prompt_version or '—'}  "
            f"rubric {r.rubric_version or '—'}  [{state}]{demo}"
        )
        self.stdout.write(
            f"  sample {r.sample.short_id} of run {r.sample.run.run_id} ({r.sample.created_at:%Y-%m-%d %H:%M}), "
            f"{r.get_label_kind_display()}: {r.n_items} items, {r.n_labels} labels"
            + ("  (new labels pending)" if r.sample.agreement_stale else "")
        )
        self.stdout.write(f"  counted: {r.handling_words}")
        if r.n_unreadable:
            self.stdout.write(
                f"  {unreadable_text(r.n_unreadable, r.n_items, (r.handling or {}).get('non_answers', 'disagreement'))}"
            )
        for name, figure in r.metrics.items():
            self.stdout.write(f"  {METRIC_LABELS.get(name, name):<26} {format_figure(figure)}")
        if row.planning:
            self.stdout.write(f"  undecided: {row.planning['text']}")
        self._print_sensitivity(row)
        for person in r.per_annotator:
            kappa = "—" if person["kappa"] is None else f"{person['kappa']:.3f}"
            self.stdout.write(
                f"    with {person['annotator']}: kappa {kappa}, agreement {person['agreement']:.3f} (n {person['n']})"
            )
        inter = r.inter_annotator
        if inter:
            self.stdout.write(
                f"  annotators among themselves: Krippendorff's alpha ({inter['level']}) {format_figure(inter['alpha'])} "
                f"on {inter['n_items']} items labelled by two or more"
            )
            for pair in inter["pairs"]:
                kappa = "—" if pair["kappa"] is None else f"{pair['kappa']:.3f}"
                self.stdout.write(f"    {pair['annotators'][0]} / {pair['annotators'][1]}: Cohen's kappa {kappa} (n {pair['n']})")
        for line in beside_people_lines(r, self.epsilon):
            self.stdout.write(f"  {line}")
        for entry in row.slices:  # worst first, as latest_agreement_for_judge read them
            self.stdout.write(
                f"  tag {entry['tag']} ({entry['n_items']} items{'' if entry['decides'] else ', too few to decide'}): "
                f"kappa {format_figure(entry['kappa'])}, agreement {format_figure(entry['agreement'])}"
            )
        for c in row.per_criterion:
            figures = ", ".join(f"{METRIC_LABELS.get(n, n)} {format_figure(f)}" for n, f in c.metrics.items())
            self.stdout.write(f"  criterion {c.criterion} ({c.n_items} items): {figures}")
        if row.lock and row.lock.locked:
            self.stdout.write(f"  locked: {row.lock.reason}")

    def _print_sensitivity(self, row):
        if not row.sensitivity or not row.sensitivity["alternatives"]:
            return
        self.stdout.write(f"  the {row.sensitivity['metric']} under each other handling:")
        for alt in row.sensitivity["alternatives"]:
            value = "—" if alt["value"] is None else f"{alt['value']:.3f}"
            mark = f"  <- {alt['crossing']}" if alt["crosses"] else ""
            self.stdout.write(f"    {value} on {alt['n_items']} items: {alt['words']}{mark}")


def _judge_beside_people(result, epsilon: float) -> dict:
    """The `alt_test` (at ε) and `rates` (pass/fail TPR and TNR) keys of a result in `agreement --json`."""
    return {"alt_test": result.alt_test_at(epsilon), "rates": result.rates}


def beside_people_lines(result, epsilon: float) -> list[str]:
    """A pass/fail judge's TPR and TNR, and the alternative annotator test at ε, as the text output says them."""
    lines = []
    rates = result.rates
    if rates:
        for key, name in (("tpr", "sensitivity (TPR)"), ("tnr", "specificity (TNR)")):
            rate = rates[key]
            lines.append(f"{name:<26} {format_figure(rate)} ({rate['successes']} of {rate['total']} labels; Wilson 95%)")
    test = result.alt_test_at(epsilon)
    if test:
        lines.append(f"alternative annotator test at ε = {epsilon:g}: {alt_test_line(test)}")
        if test["annotators"]:
            lines.append(f"  average advantage probability ρ {test['advantage_probability']:.3f}")
        for person in test["annotators"]:
            lines.append(
                f"  without {person['annotator']}: ρ_f {person['rho_f']:.3f}, ρ_h {person['rho_h']:.3f}, "
                f"p {person['p_value']:.3g}, BY-adjusted {person['p_adjusted']:.3g}, "
                f"{'rejected: the judge wins' if person['rejected'] else 'not rejected'} (n {person['n']})"
            )
    return lines


def _figures(result):
    return {**agreement_figures(result), "handling": {**(result.handling or {}), "words": result.handling_words}}


def _row(row):
    r = row.pooled
    return {
        "judge": row.judge_name,
        "judge_version": row.judge_version,
        "prompt_version": r.prompt_version or None,
        "rubric_version": r.rubric_version or None,
        "label_kind": r.label_kind,
        "scripted_demo": r.scripted_demo,
        "sample_id": str(r.sample.uuid),
        "run_id": r.sample.run.run_id,
        **_figures(r),
        "per_annotator": r.per_annotator,
        "inter_annotator": r.inter_annotator,
        "per_criterion": {c.criterion: _figures(c) for c in row.per_criterion},
        "slices": row.slices,
        "status": row.status,
        "planning": row.planning,
        "sensitivity": row.sensitivity["alternatives"] if row.sensitivity else [],
        "locked": bool(row.lock and row.lock.locked),
        "lock_reason": row.lock.reason if row.lock and row.lock.locked else None,
    }


# import-labels: `manage.py import-labels FILE.csv`: bulk human labels (CONTRACT §3).
class ImportLabelsCommand(JudgeCommand):
    help = (
        "Import people's labels from a CSV file with the columns " + ", ".join(LABEL_COLUMNS) + ": the label is a "
        "score on the criterion's scale, pass or fail, or 1 / 2 / tie (A / B / tie) for a pairwise run. Every row is "
        "checked before anything is stored; each run in the file gets a new sample, and its judge-human agreement "
        "is computed by a worker (or by `manage.py agreement`)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", metavar="FILE.csv", help="the labels: " + ", ".join(LABEL_COLUMNS))

    def handle(self, *args, **options):
        path = options["file"]
        summary = labels_import(data=read_input_file(path), name=path)
        for sample in summary.samples:
            self.stdout.write(
                f"run {sample.run.run_id}: sample {sample.short_id} with {sample.size} items "
                f"({sample.get_label_kind_display()} labels)"
            )
        if summary.created_users:
            self.stdout.write("new annotator accounts (no password, cannot log in): " + ", ".join(summary.created_users))
        self.stdout.write(
            f"Imported {summary.labels} labels by {len(summary.annotators)} annotator(s) into {len(summary.samples)} sample(s); "
            "agreement is being computed (see `manage.py agreement`)."
        )


# import-pandalm: `manage.py import-pandalm`: PandaLM's human-annotated test set as a finished pairwise run.
class ImportPandalmCommand(JudgeCommand):
    help = (
        "Import PandaLM's 999 pairwise items (datasets/pandalm/), GPT-3.5's verdicts on them and three people's labels, "
        "as a finished pairwise run with a labelled sample, and compute the judge-human agreement. Real data: the "
        "judge is GPT-3.5 as published, not the scripted demo judge. Does nothing if the run is already there."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dir", default=str(DEFAULT_DIR), help="folder with testset-v1.json and gpt-3.5-turbo-testset-v1.json"
        )

    def handle(self, *args, **options):
        run, sample, imported = pandalm_ensure(directory=Path(options["dir"]))
        if not imported:
            self.stdout.write(f"PandaLM is already imported as run {run.run_id}.")
            return
        self.stdout.write(f"Imported run {run.run_id}: {run.total_units} items, {run.failed_units} without a readable verdict.")
        agreement_compute(sample_pk=sample.pk)
        result = sample.results.filter(criterion="").first()
        if result is not None:
            inter = result.inter_annotator or {}
            alpha = (inter.get("alpha") or {}).get("value")
            self.stdout.write(
                f"GPT-3.5 vs the annotators: percent agreement {result.agreement:.3f}, Cohen's kappa {result.kappa:.3f} "
                f"on {result.n_items} items; annotators among themselves: Krippendorff's alpha {alpha:.3f}."
            )
