"""`manage.py outputs add|list`: one version of a system's replies to a test set, stored by name (CONTRACT §6);
a run labelled with that system judges them (`evaluate pointwise --system S [--outputs-version V]`)."""

from judgeapp.judging.audit import cli_actor
from judgeapp.judging.cli import JudgeCommand
from judgeapp.judging.content import InputFile, output_set_save, testset_named
from judgeapp.judging.selectors import output_sets_recent


class OutputsCommand(JudgeCommand):
    help = "Store a system version's outputs for a test set (add), or list the stored ones (list)."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        add = actions.add_parser("add", help="store one version of a system's outputs for a test set")
        add.add_argument("--system", required=True, metavar="S", help="the system under test whose replies these are")
        add.add_argument("--label", "--version-label", dest="label", required=True, metavar="V", help="its version label, e.g. v2.1")
        add.add_argument("--testset", required=True, metavar="NAME|F", help="the test set they answer: a file, or a stored test set's name")
        add.add_argument("--file", required=True, metavar="OUT.jsonl", help='the replies, JSONL {"id", "output"}, one for every case')
        listing = actions.add_parser("list", help="list the stored outputs, newest first")
        listing.add_argument("--system", metavar="S", help="only this system's")

    def handle(self, *args, **options):
        getattr(self, f"_{options['action']}")(options)

    def _add(self, options):
        system = self.system_get(name=options["system"])
        outputs = InputFile.from_path(options["file"])
        testset = testset_named(options["testset"])
        output_set, created = output_set_save(
            system=system, version_label=options["label"], testset=testset, outputs=outputs, created_by=cli_actor()
        )
        if created:
            self.stdout.write(f"stored {output_set}: {output_set.row_count} outputs for test set {testset.name} ({testset.case_count} cases)")
        else:
            self.stdout.write(f"already stored as {output_set} on {output_set.created_at:%Y-%m-%d %H:%M}; nothing changed")

    def _list(self, options):
        system = self.system_get(name=options["system"]) if options.get("system") else None
        rows = list(output_sets_recent(system=system))
        for row in rows:
            self.stdout.write(
                f"{row.system.name}  {row.version_label}  test set {row.testset.name}  {row.row_count} outputs  "
                f"{row.created_at:%Y-%m-%d %H:%M}  {row.created_by_label or '—'}"
            )
        self.stderr.write(f"{len(rows)} stored output version(s)")


class DatasetsCommand(JudgeCommand):
    help = "List the stored datasets by name: test sets and rubrics with their versions (v1 the first stored), and system outputs."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        listing = actions.add_parser("list", help="every stored test set, rubric and system version's outputs")
        listing.add_argument("--kind", choices=["testsets", "rubrics", "outputs"], help="only this kind")

    def handle(self, *args, **options):
        from judgeapp.datasets.selectors import datasets_overview

        overview = datasets_overview()
        kind = options.get("kind")
        count = 0
        if kind in (None, "testsets"):
            for name, versions in overview["testsets"].items():
                newest = versions[0]
                self.stdout.write(
                    f"test set  {name}  v{newest.number} ({newest.row.case_count} cases, {newest.row.version})  "
                    f"{len(versions)} version(s)  stored {newest.row.created_at:%Y-%m-%d %H:%M}"
                )
                count += 1
        if kind in (None, "rubrics"):
            for name, versions in overview["rubrics"].items():
                newest = versions[0]
                self.stdout.write(f"rubric  {name}  v{newest.number} ({newest.row.version})  {len(versions)} version(s)")
                count += 1
        if kind in (None, "outputs"):
            for row in overview["output_sets"]:
                self.stdout.write(f"outputs  {row.system.name} {row.version_label}  answers {row.testset.name}  {row.row_count} outputs")
                count += 1
        self.stderr.write(f"{count} dataset(s)")
