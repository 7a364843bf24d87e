"""`manage.py prompts list|show|add`: the prompt library from the command line (docs/prompts.md); and
`manage.py rubric-skeleton "CRITERION"`: a rubric drafted from one sentence, to fill in."""

from judgeapp.judging.audit import cli_actor
from judgeapp.judging.cli import JudgeCommand
from judgeapp.judging.content import read_input_file
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import decode_text, rubric_skeleton
from judgeapp.judging.library import library, library_mode_of, mode_check, prompt_choose, prompt_template_save
from judgeapp.judging.prompts import BUILTIN_NAME, LIBRARY_MODES, library_prompt


class PromptsCommand(JudgeCommand):
    help = "List, show or add the judge prompts of the library: the built-in one of each mode and a team's own."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        listing = actions.add_parser("list", help="every prompt of every mode, with its versions")
        listing.add_argument("--mode", choices=list(LIBRARY_MODES), help="only this mode's prompts")
        show = actions.add_parser("show", help="print a prompt's text (NAME, NAME@vN, or default)")
        show.add_argument("prompt", metavar="NAME", help="a prompt of the library, NAME@vN for one version, or default")
        show.add_argument("--mode", choices=list(LIBRARY_MODES), help="the mode (needed for default; else the prompt's own)")
        add = actions.add_parser("add", help="save a prompt text as NAME's next version (v1 when NAME is new)")
        add.add_argument("--mode", required=True, choices=list(LIBRARY_MODES), help="the mode the prompt judges in")
        add.add_argument("--name", required=True, metavar="NAME", help="the prompt's name: lowercase letters, digits and hyphens")
        add.add_argument("--file", required=True, metavar="PROMPT.md", help="the prompt text, with the mode's slots")

    def handle(self, *args, **options):
        getattr(self, f"_{options['action']}")(options)

    def _list(self, options):
        for mode in [options["mode"]] if options.get("mode") else LIBRARY_MODES:
            for entry in library(mode=mode):
                if entry["builtin"]:
                    self.stdout.write(f"{mode}  {BUILTIN_NAME}  built-in, read-only  {entry['hash']}")
                else:
                    labels = ", ".join(v.label for v in entry["versions"])
                    self.stdout.write(f"{mode}  {entry['name']}  {labels}  {entry['hash']} (latest)")

    def _show(self, options):
        spec = options["prompt"]
        if spec == BUILTIN_NAME:
            if not options.get("mode"):
                raise InputError("each mode has its own built-in prompt: give --mode pointwise, pairwise or jury")
            self.stdout.write(library_prompt(options["mode"]).text, ending="")
            return
        name = spec.partition("@")[0]
        mode = options.get("mode") or library_mode_of(name=name)
        if mode is None:
            raise InputError(f"no prompt named {name[:60]!r} in the library (see `manage.py prompts list`)")
        self.stdout.write(prompt_choose(mode=mode, spec=spec).text, ending="")

    def _add(self, options):
        mode = mode_check(options["mode"])
        text = decode_text(read_input_file(options["file"]), options["file"])
        template = prompt_template_save(mode=mode, name=options["name"], text=text, actor=cli_actor())
        self.stdout.write(
            f"saved {mode} prompt {template.name} {template.label} ({template.version}); run with --prompt {template.name}"
        )


class RubricSkeletonCommand(JudgeCommand):
    help = "Print a rubric drafted from one criterion: its 1-5 scale and an example per score, each to fill in."

    def add_arguments(self, parser):
        parser.add_argument(
            "criterion", metavar="CRITERION", help='the criterion in one sentence, e.g. "Is the summary faithful to the source?"'
        )

    def handle(self, *args, **options):
        self.stdout.write(rubric_skeleton(options["criterion"]), ending="")
        self.stderr.write("replace every FILL IN with your own words; the rubric is refused while one is left")
