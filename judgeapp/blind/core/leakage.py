"""Leakage detection for the blind comparator, run on every input before any judging.

The seed: "Do not accept configuration names, skill paths, label keys, raw outputs, or raw transcripts.
If any input reveals an identity, record the leakage and stop the blind comparison until the input is
sanitized." Every input is scanned: each version's files (their contents and their paths), the eval
prompt, the expectations, and the labels themselves.

The scanner is shared with calibration (judgeapp/judging/leakage/: normalisation, names, providers,
models, paths, label keys, transcripts in every common shape, tool calls, raw API responses); this
module applies it to the comparator's inputs. Plain Python.
"""

from __future__ import annotations

from collections.abc import Iterable

from judgeapp.blind.core.inputs import LABEL, VersionContent
from judgeapp.judging.leakage.names import KnownName
from judgeapp.judging.leakage.scan import Collector, Kind, LeakageFlag, Scanner


def scan_labels(labels: Iterable[str]) -> list[LeakageFlag]:
    """Labels must be blinded letters; `with_skill` or a directory name is a label key."""
    return [
        LeakageFlag("version labels", f"label {label!r}", Kind.LABEL_KEY,
                    f"{label!r} is not a blinded label (use A, B, C…)", label, "label not a blinded letter")
        for label in labels
        if not LABEL.match(label)
    ]


def scan_inputs(
    *,
    versions: list[tuple[str, VersionContent]],
    eval_prompt: str,
    expectations: list[str],
    known: Iterable[KnownName] = (),
    labels: Iterable[str] = (),
) -> list[LeakageFlag]:
    """Every leakage flag in every input. `versions` pairs each version's input name (how a flag names it)
    with its content. An empty list means the inputs are blind."""
    scanner = Scanner(known)
    collector = Collector()
    for input_name, content in versions:
        for run in content.runs:
            prefix = f"{run.real_name}/" if run.real_name else ""
            for f in run.files:
                place = f"{prefix}{f.path}"
                scanner.scan_path(collector, f.path, input=input_name, place=place)
                if f.text is not None:
                    scanner.scan_text(collector, f.text, input=input_name, place=place)
    scanner.scan_text(collector, eval_prompt, input="eval prompt", place="")
    for i, expectation in enumerate(expectations, start=1):
        scanner.scan_text(collector, expectation, input="expectations", place=f"expectation {i}")
    return scan_labels(labels) + collector.flags()
