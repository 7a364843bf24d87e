"""The leakage corpus (tests/security/leakage_corpus.py): every planted variant is flagged with its rule and
place; no clean output is. The figures are printed (`-s`) and asserted:

    .venv/bin/python -m pytest tests/security/test_leakage_corpus.py -q -p no:cacheprovider -s
"""

import pytest

from judgeapp.blind.core.inputs import version_from_files
from judgeapp.blind.core.leakage import scan_inputs
from judgeapp.judging.leakage.names import KnownName, version_names
from judgeapp.judging.leakage.scan import Kind, format_flag
from tests.security.leakage_corpus import CLEAN, JUDGES, LEAKY, SYSTEMS, TASK, VERSIONS


def known() -> list[KnownName]:
    names = version_names(VERSIONS, context=[TASK])
    for name, model in SYSTEMS:
        names += [KnownName(name, "configured system"), KnownName(model, f"model of the system {name!r}")]
    for name, model in JUDGES:
        names += [KnownName(name, "configured judge"), KnownName(model, f"model of the judge {name!r}")]
    return names


CLEAN_RUN = "# Runbook\n1. Notify the on-call engineer.\n2. Rotate the password.\n3. Verify checkout.\n"


def flags_for(text: str):
    """The text as the only output of version B's second run, beside clean versions."""
    versions = [
        ("version A", version_from_files({"run-1/runbook.md": CLEAN_RUN.encode()}, name="a", max_run_bytes=100_000)),
        ("version B", version_from_files(
            {"run-1/runbook.md": CLEAN_RUN.encode(), "run-2/runbook.md": text.encode()}, name="b", max_run_bytes=100_000
        )),
    ]
    return scan_inputs(
        versions=versions, eval_prompt=TASK, expectations=["Says how to roll back"], known=known(), labels=["A", "B"],
    )


def test_the_corpus_is_as_large_as_the_issues_ask():
    # Issue 7 asked for 32 planted variants and 20 clean outputs; round two (issue 26) added 70 and 30.
    assert len(LEAKY) >= 132 and len(CLEAN) >= 55
    assert len({case[0] for case in LEAKY}) == len(LEAKY) and len({case[0] for case in CLEAN}) == len(CLEAN)


@pytest.mark.parametrize("case_id, what, text, kind", LEAKY, ids=[c[0] for c in LEAKY])
def test_every_planted_variant_is_flagged_with_its_rule_and_place(case_id, what, text, kind):
    flags = flags_for(text)
    assert flags, f"{case_id} ({what}) was not flagged"
    matching = [f for f in flags if f.kind == kind]
    assert matching, f"{case_id}: expected a {kind} flag, got {[format_flag(f) for f in flags]}"
    for flag in matching:
        # The place: the input, the file (and its line when the file has several), the original line.
        assert flag.input == "version B" and flag.location.startswith("run-2/runbook.md")
        assert flag.rule and f"(rule: {flag.rule})" in format_flag(flag)
        assert flag.snippet and flag.snippet.strip("…") in text


@pytest.mark.parametrize("case_id, text", CLEAN, ids=[c[0] for c in CLEAN])
def test_clean_outputs_raise_no_flag(case_id, text):
    assert [format_flag(f) for f in flags_for(text)] == []


def test_caught_planted_and_the_false_positive_rate(capsys):
    caught = sum(any(f.kind == kind for f in flags_for(text)) for _, _, text, kind in LEAKY)
    false_positives = sum(bool(flags_for(text)) for _, text in CLEAN)
    rate = false_positives / len(CLEAN)
    with capsys.disabled():
        print(f"\nleakage corpus: {caught}/{len(LEAKY)} planted variants caught; "
              f"{false_positives}/{len(CLEAN)} clean outputs flagged (false-positive rate {rate:.1%})")
    assert caught == len(LEAKY)
    assert rate == 0.0


def test_the_readme_example_is_stopped_from_the_command_line_too(tmp_path, db, judge):
    """README's blind-compare example, versions out/v1 and out/v2, with "This is v2" in an output."""
    from django.core.management import call_command

    for name, text in (("v1", "A clean runbook.\n"), ("v2", "This is v2.\nA clean runbook.\n")):
        (tmp_path / "out" / name).mkdir(parents=True)
        (tmp_path / "out" / name / "runbook.md").write_text(text)
    (tmp_path / "task.md").write_text(TASK)
    import io

    out = io.StringIO()
    with pytest.raises(SystemExit) as exc:
        call_command("blind-compare", "--version", f"A={tmp_path / 'out' / 'v1'}", "--version", f"B={tmp_path / 'out' / 'v2'}",
                     "--prompt", str(tmp_path / "task.md"), "--output", str(tmp_path / "c.json"), "--judge", judge.name,
                     stdout=out)
    assert exc.value.code == 1
    assert "LEAKAGE [configuration or version name] version B" in out.getvalue() and "'v2'" in out.getvalue()
    assert not (tmp_path / "c.json").exists()


def test_kinds_cover_providers_as_their_own_class():
    assert Kind.PROVIDER in {kind for *_, kind in LEAKY}
    (flag,) = [f for f in flags_for("As Claude, I suggest the steps below.") if f.kind == Kind.PROVIDER]
    assert flag.detail == "names the provider or model family 'Claude'" and flag.rule == "provider name"
