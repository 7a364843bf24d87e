"""`manage.py import-pandalm`: PandaLM's human-annotated test set as a finished pairwise run."""

from pathlib import Path

from calibration.services.pandalm import DEFAULT_DIR, pandalm_ensure
from calibration.services.agreement import agreement_compute
from judgeapp.management.base import JudgeCommand


class Command(JudgeCommand):
    help = (
        "Import PandaLM's 999 pairwise items (datasets/pandalm/), GPT-3.5's verdicts on them and three people's labels, "
        "as a finished pairwise run with a labelled sample, and compute the judge-human agreement. Real data: the "
        "judge is GPT-3.5 as published, not the scripted demo judge. Does nothing if the run is already there."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dir", default=str(DEFAULT_DIR), help="folder with testset-v1.json and gpt-3.5-turbo-testset-v1.json")

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
