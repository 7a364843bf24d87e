"""`manage.py outputs add|list`: one version of a system's replies to a test set, stored by name (CONTRACT §6);
a run labelled with that system judges them (`evaluate pointwise --system S [--outputs-version V]`). `manage.py datasets
list|show`: every stored dataset by name, one name's versions."""

from judgeapp.judging.audit import cli_actor
from judgeapp.judging.cli import JudgeCommand
from judgeapp.judging.content import InputFile, testset_named
from judgeapp.judging.errors import InputError
from judgeapp.judging.outputs import output_set_save
from judgeapp.judging.selectors import output_set_list


class OutputsCommand(JudgeCommand):
    help = "Store a system version's outputs for a test set (add), or list the stored ones (list)."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        add = actions.add_parser("add", help="store one version of a system's outputs for a test set")
        add.add_argument("--system", required=True, metavar="S", help="the system under test whose replies these are")
        add.add_argument(
            "--label", "--version-label", dest="label", required=True, metavar="V", help="its version label, e.g. v2.1"
        )
        add.add_argument(
            "--testset", required=True, metavar="NAME|F",
            help="the test set they answer: a file, or a stored test set's name (its newest version; NAME@v2 another)"
        )
        add.add_argument(
            "--file", required=True, metavar="OUT.jsonl", help='the replies, JSONL {"id", "output"}, one for every case'
        )
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
            self.stdout.write(
                f"stored {output_set}: {output_set.row_count} outputs for test set {testset.name} ({testset.case_count} cases)"
            )
        else:
            self.stdout.write(f"already stored as {output_set} on {output_set.created_at:%Y-%m-%d %H:%M}; nothing changed")

    def _list(self, options):
        system = self.system_get(name=options["system"]) if options.get("system") else None
        rows = list(output_set_list(system=system))
        for row in rows:
            self.stdout.write(
                f"{row.system.name}  {row.version_label}  test set {row.testset.name}  {row.row_count} outputs  "
                f"{row.created_at:%Y-%m-%d %H:%M}  {row.created_by_label or '—'}"
            )
        self.stderr.write(f"{len(rows)} stored output version(s)")


class DatasetsCommand(JudgeCommand):
    help = (
        "The stored datasets by name: list them (test sets, rubrics, system outputs, artifact sets, check-up pair sets), "
        "or show one name's versions (v1 the first stored)."
    )

    KINDS = ("testsets", "rubrics", "outputs", "artifacts", "checkup")

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        listing = actions.add_parser(
            "list", help="every stored test set, rubric, system version's outputs, artifact set and pair set"
        )
        listing.add_argument("--kind", choices=self.KINDS, help="only this kind")
        show = actions.add_parser("show", help="one name's versions: who stored each and when, and what the shown one holds")
        show.add_argument("kind", choices=["testset", "rubric", "outputs", "artifacts"], metavar="KIND",
                          help="testset, rubric (NAME or NAME@v2), outputs (a system's name) or artifacts "
                               "(an artifact set's name)")
        show.add_argument("name", metavar="NAME")
        show.add_argument("--label", metavar="V", help="outputs: only this version label")

    def handle(self, *args, **options):
        getattr(self, f"_{options['action']}")(options)

    def _list(self, options):
        from judgeapp.datasets.selectors import dataset_list

        overview = dataset_list()
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
                self.stdout.write(
                    f"outputs  {row.system.name} {row.version_label}  answers {row.testset.name}  {row.row_count} outputs"
                )
                count += 1
        if kind in (None, "artifacts"):
            for name, versions in overview["artifact_sets"].items():
                newest = versions[0]
                self.stdout.write(
                    f"artifact set  {name}  v{newest.number} ({newest.artifacts} artifacts, {newest.version})  "
                    f"{len({v.number for v in versions})} version(s)"
                )
                count += 1
        if kind in (None, "checkup"):
            for row in overview["checkup_sets"]:
                self.stdout.write(f"check-up pair set  {row.name}  {row.case_count} pairs  {row.version}")
                count += 1
        self.stderr.write(f"{count} dataset(s)")

    def _show(self, options):
        getattr(self, f"_show_{options['kind']}")(options)

    @staticmethod
    def _by(row, source: str = "") -> str:
        who = getattr(row, "created_by", None)
        return f"by {who.get_username()}" if who else (f"from {source}" if source else "")

    def _versions_write(self, what: str, shown, versions, holds) -> None:
        """A test set's or a rubric's versions, a line each (`*` the one shown): hash, what it `holds`, when, by
        whom or from where."""
        self.stdout.write(f"{what} {shown.name}")
        for v in versions:
            mark = "*" if v.row.pk == shown.pk else " "
            self.stdout.write(
                f"{mark} v{v.number}  {v.row.version}  {holds(v.row)}  {v.row.created_at:%Y-%m-%d %H:%M}  "
                f"{self._by(v.row, v.row.source_path)}".rstrip()
            )

    def _show_testset(self, options):
        from judgeapp.datasets.selectors import testset_versions_for_name
        from judgeapp.judging.content import stored_by_name
        from judgeapp.models import TestSet

        shown = stored_by_name(TestSet, options["name"], "test set")
        versions = testset_versions_for_name(testset=shown)
        self._versions_write("test set", shown, versions, lambda row: f"{row.case_count} cases")
        self.stderr.write(f"{len(versions)} version(s); * the one shown")

    def _show_rubric(self, options):
        from judgeapp.datasets.selectors import rubric_versions_for_name
        from judgeapp.judging.content import stored_by_name
        from judgeapp.models import Rubric

        shown = stored_by_name(Rubric, options["name"], "rubric")
        versions = rubric_versions_for_name(rubric=shown)
        self._versions_write("rubric", shown, versions, lambda row: f"{row.criterion_count} criteria")
        for criterion in shown.criteria.order_by("position"):
            low, high = criterion.scale_bounds
            self.stdout.write(f"  criterion {criterion.name}  scale {low}-{high}  {len(criterion.examples or {})} example(s)")
        self.stderr.write(f"{len(versions)} version(s); * the one shown, its criteria below it")

    def _show_outputs(self, options):
        from judgeapp.judging.selectors import output_set_list

        system = self.system_get(name=options["name"])
        label = options.get("label")
        rows = [row for row in output_set_list(system=system) if not label or row.version_label == label]
        if not rows:
            which = f"{system.name} {label}" if label else system.name
            raise InputError(f"{which}: no stored outputs (manage.py outputs add, or the Datasets page)")
        for row in rows:
            self.stdout.write(
                f"{row.system.name} {row.version_label}  answers {row.testset.name} ({row.testset.version})  "
                f"{row.row_count} outputs  {row.created_at:%Y-%m-%d %H:%M}  {row.created_by_label or '—'}  "
                f"{row.content_hash[:12]}"
            )
        self.stderr.write(f"{len(rows)} stored output version(s)")

    def _show_artifacts(self, options):
        from judgeapp.datasets.selectors import artifact_set_for_name, artifact_set_versions_for_name

        shown = artifact_set_for_name(name=options["name"])
        versions = artifact_set_versions_for_name(artifact_set=shown)
        self.stdout.write(f"artifact set {shown.name}")
        for v in versions:
            mark = "*" if v.row.pk == shown.pk else " "
            self.stdout.write(
                f"{mark} v{v.number}  {v.version}  {v.artifacts} artifacts  run {v.row.run.run_id}  "
                f"{v.row.created_at:%Y-%m-%d %H:%M}"
            )
        for artifact_id, size in shown.artifacts.order_by("artifact_id").values_list("artifact_id", "size"):
            self.stdout.write(f"  {artifact_id}  {size} bytes")
        self.stderr.write(f"{len(versions)} run(s); * the newest, its artifacts below it")
