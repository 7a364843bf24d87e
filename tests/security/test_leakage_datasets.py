"""False positives of the leakage scan on real text: every input and output of the shipped datasets (datasets/:
PandaLM, LLMBar's Natural and MT-Bench sets) and of the examples in evals/ (but the deliberately leaky blind
example), scanned as a blind comparator or a calibration sample would, with versions `out/v1` and `out/v2`, a
configured system and a judge as the known names. The figure is printed (`-s`) and asserted:

    .venv/bin/python -m pytest tests/security/test_leakage_datasets.py -q -p no:cacheprovider -s
"""

import json
from pathlib import Path

from judgeapp.judging.leakage.names import KnownName, version_names
from judgeapp.judging.leakage.scan import format_flag, scan_texts

ROOT = Path(__file__).resolve().parents[2]
LEAKY_EXAMPLE = ROOT / "evals" / "blind" / "runbook" / "leaky"

# Texts in the datasets that really do name a provider: two MT-Bench answers that say "I am an AI assistant
# created by Anthropic". Flagging them is right.
TRUE_LEAKS = {"llmbar/mt-bench-human.json item 77 output_1", "llmbar/mt-bench-human.json item 109 output_2"}


def known_names() -> list[KnownName]:
    return version_names(["out/v1", "out/v2"]) + [
        KnownName("support-bot-v2", "configured system"), KnownName("gpt-4o-mini", "model of the system 'support-bot-v2'"),
        KnownName("judge-a", "configured judge"), KnownName("fake-judge", "model of the judge 'judge-a'"),
    ]


def shipped_texts() -> list[tuple[str, str]]:
    """(where, text) for every input and output in datasets/ and evals/."""
    texts = []
    for item in json.loads((ROOT / "datasets" / "pandalm" / "testset-v1.json").read_text()):
        for field in ("instruction", "input", "response1", "response2"):
            if isinstance(item[field], str) and item[field]:
                texts.append((f"pandalm/testset-v1.json item {item['idx']} {field}", item[field]))
    for name in ("natural", "mt-bench-human"):
        for index, item in enumerate(json.loads((ROOT / "datasets" / "llmbar" / f"{name}.json").read_text())):
            for field in ("input", "output_1", "output_2"):
                texts.append((f"llmbar/{name}.json item {index} {field}", item[field]))
    for path in sorted((ROOT / "evals").rglob("*")):
        if path.is_file() and LEAKY_EXAMPLE not in path.parents:
            texts.append((str(path.relative_to(ROOT)), path.read_text()))
    return texts


def test_the_shipped_datasets_raise_no_false_positive(capsys):
    texts = shipped_texts()
    names = known_names()
    flagged = {}
    for where, text in texts:
        flags = scan_texts([(where, text)], names=names)
        if flags:
            flagged[where] = flags
    false_positives = sorted(set(flagged) - TRUE_LEAKS)
    with capsys.disabled():
        print(f"\nleakage on the shipped datasets: {len(texts)} texts scanned, {len(flagged)} flagged, "
              f"{len(set(flagged) & TRUE_LEAKS)} of them real leaks ('created by Anthropic'); "
              f"{len(false_positives)} false positives ({len(false_positives) / len(texts):.2%})")
    assert len(texts) > 4000
    assert false_positives == [], [format_flag(f) for where in false_positives for f in flagged[where]]
    assert set(flagged) == TRUE_LEAKS
