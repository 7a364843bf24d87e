"""Every mode on a real model, a few cases each: the inputs, the judges file, and one call per mode of the
command a user runs. Shared by the real-model tests (tests/realmodel/) and bench/real_model.py.

One model answers everything. The jury needs three different judges (identity: base URL and model), so its
jurors name the model three ways; llama.cpp's server answers any model name with the one model it serves.
That is a harness for running the mode, not a jury: the report's agreement says nothing about three models.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path

from django.core.management import load_command_class
from django.core.management.base import OutputWrapper

CASES = [
    ("I can't reset my password.", "Go to Settings > Password, choose Reset, and follow the link we email you (valid 2 hours)."),
    ("My invoice shows the wrong amount.", "Sorry about that. Send us the invoice number and we will correct it within a day."),
    ("How do I delete my account?", "Not my problem."),
]
OTHER_REPLIES = ["Try again later.", "Please check the settings.", "Open Settings > Account > Delete and confirm by email."]

RUBRIC = """name = "support-quality"
[[criteria]]
name = "helpfulness"
description = "Does the reply solve the customer's problem?"
scale = { 1 = "ignores the problem", 2 = "mostly unhelpful", 3 = "partly solves it", 4 = "solves it with gaps", \
5 = "solves it fully" }
examples = { 1 = "Not my problem.", 2 = "Try again later.", 3 = "Check settings.", 4 = "Reset in Settings > Password.", \
5 = "Reset in Settings > Password; the link lasts 2 hours." }
"""

# The judge asked for at most this many tokens in the truncation case: no verdict fits.
CUT_MAX_TOKENS = 8
# The blind comparison's judge: a rubric and per-run scores fit in this; a model that rambles in JSON is cut
# here rather than at the mode's 1,024 (on 2 cores a 1,024-token reply takes minutes).
BLIND_MAX_TOKENS = 384
JURORS = ("juror-a", "juror-b", "juror-c")


def judges_toml(base_url: str, model: str) -> str:
    common = f'base_url = "{base_url}"\nstructured_output = "json_object"\ntimeout_seconds = 300\nmax_concurrency = 1\n'
    text = f'[judges.small]\nmodel = "{model}"\nfamily = "smollm"\n{common}\n'
    text += f'[judges.small-cut]\nmodel = "{model}"\nfamily = "smollm"\nmax_tokens = {CUT_MAX_TOKENS}\n{common}\n'
    text += f'[judges.small-blind]\nmodel = "{model}"\nfamily = "smollm"\nmax_tokens = {BLIND_MAX_TOKENS}\n{common}\n'
    for juror in JURORS:
        text += f'[judges.{juror}]\nmodel = "{model}-{juror}"\nfamily = "smollm-{juror}"\n{common}\n'
    return text


def write_inputs(root: Path) -> dict[str, Path]:
    root.mkdir(parents=True, exist_ok=True)
    paths = {}

    def write(name: str, text: str) -> Path:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        paths[name] = path
        return path

    write("testset.jsonl", "".join(json.dumps({"id": f"c{i}", "input": q, "output": a}) + "\n" for i, (q, a) in enumerate(CASES)))
    write("a.jsonl", "".join(json.dumps({"id": f"c{i}", "output": a}) + "\n" for i, (_, a) in enumerate(CASES)))
    write("b.jsonl", "".join(json.dumps({"id": f"c{i}", "output": b}) + "\n" for i, b in enumerate(OTHER_REPLIES)))
    write("rubric.toml", RUBRIC)
    write("agent/task.md", "Write a Python script hello.py that prints 'hello, world'.\n")
    write("agent/requirements.md", "1. The workspace contains hello.py.\n2. hello.py prints hello, world.\n")
    write("agent/workspace/hello.py", "print('hello, world')\n")
    write("blind/prompt.md", "Write two sentences telling a customer how to reset their password.\n")
    write("blind/A/reply.md", "Open Settings > Password and choose Reset. Follow the emailed link within two hours.\n")
    write("blind/B/reply.md", "Passwords can be reset.\n")
    write("ranker/a.md", "Open Settings > Password and choose Reset; the emailed link lasts two hours.\n")
    write("ranker/b.md", "Passwords can be reset somewhere.\n")
    return paths


def argv_of(mode: str, root: Path, report: Path) -> list[str]:
    common_eval = ["--testset", str(root / "testset.jsonl"), "--rubric", str(root / "rubric.toml"), "--concurrency", "1"]
    if mode == "pointwise":
        return ["evaluate", "pointwise", *common_eval, "--judge", "small", "--threshold", "1", "--report", str(report)]
    if mode == "pointwise-truncated":
        return ["evaluate", "pointwise", *common_eval, "--judge", "small-cut", "--threshold", "1", "--report", str(report)]
    if mode == "pairwise":
        return ["evaluate", "pairwise", *common_eval, "--a", str(root / "a.jsonl"), "--b", str(root / "b.jsonl"),
                "--judge", "small", "--report", str(report)]
    if mode == "jury":
        return ["evaluate", "jury", *common_eval, "--judges", ",".join(JURORS), "--report", str(report)]
    if mode == "agent":
        agent = root / "agent"
        return ["agent-judge", "--task", str(agent / "task.md"), "--requirements", str(agent / "requirements.md"),
                "--workspace", str(agent / "workspace"), "--judge", "small", "--concurrency", "1", "--report", str(report)]
    if mode == "blind":
        blind = root / "blind"
        return ["blind-compare", "--version", f"A={blind / 'A'}", "--version", f"B={blind / 'B'}", "--prompt",
                str(blind / "prompt.md"), "--output", str(report.with_name(report.stem + "-comparison.json")),
                "--judge", "small-blind", "--concurrency", "1"]
    if mode == "ranker-compare":
        ranker = root / "ranker"
        return ["compare", str(ranker / "a.md"), str(ranker / "b.md"), "--goal", "which reply helps the customer more",
                "--judge", "small"]
    raise ValueError(mode)


MODES = ("pointwise", "pointwise-truncated", "pairwise", "jury", "agent", "blind", "ranker-compare")
KINDS = {"pointwise": "pointwise", "pointwise-truncated": "pointwise", "pairwise": "pairwise", "jury": "jury",
         "agent": "agent", "blind": "blind", "ranker-compare": "compare"}


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_command(*argv: str) -> CliResult:
    """`manage.py <argv>` as a shell runs it (run_from_argv: exit status, one-line errors), in this process."""
    command = load_command_class("judgeapp", argv[0])
    out, err = StringIO(), StringIO()
    command.stdout, command.stderr = OutputWrapper(out), OutputWrapper(err)
    try:
        command.run_from_argv(["manage.py", *argv])
        code = 0
    except SystemExit as exc:
        code = exc.code
    return CliResult(code, out.getvalue(), err.getvalue())


@dataclass
class ModeResult:
    mode: str
    seconds: float
    result: CliResult
    run_id: str | None = None
    status: str = ""
    report: dict = field(default_factory=dict)

    @property
    def counts(self) -> dict:
        return (self.report or {}).get("counts") or {}


def mode_run(mode: str, root: Path) -> ModeResult:
    """Run one mode's command in this process (the database and JUDGES_FILE already set) and read its run."""
    from judgeapp.models import Run

    before = set(Run.objects.values_list("pk", flat=True))
    started = time.monotonic()
    result = run_command(*argv_of(mode, root, root / f"{mode}-report.json"))
    seconds = time.monotonic() - started
    run = Run.objects.exclude(pk__in=before).filter(kind=KINDS[mode]).order_by("-pk").first()
    if run is None:
        return ModeResult(mode, seconds, result)
    return ModeResult(mode, seconds, result, run.run_id, run.status, run.report or {})
