"""`manage.py import-labels FILE.csv`: bulk human labels (CONTRACT §3)."""

from calibration.services.labels import LABEL_COLUMNS, labels_import
from judgeapp.management.base import JudgeCommand
from judgeapp.judging.content import read_input_file


class Command(JudgeCommand):
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
