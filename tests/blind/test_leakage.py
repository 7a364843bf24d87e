"""Leakage detection on every input before any judging (seed blind-comparator.md, Inputs)."""

from pathlib import Path

import pytest

from judgeapp.blind.core.inputs import version_from_files
from judgeapp.blind.core.leakage import scan_inputs
from judgeapp.judging.leakage.names import KnownName, version_names
from judgeapp.judging.leakage.scan import Kind

EVALS = Path(__file__).resolve().parents[2] / "evals" / "blind" / "runbook"


def version(files: dict[str, str]):
    return version_from_files({p: t.encode() for p, t in files.items()}, name="v", max_run_bytes=100_000)


def scan(files=None, *, prompt="Write a runbook.", expectations=(), known=(), labels=("A",)):
    versions = [("version A (dir)", version(files or {"out.md": "A clean runbook."}))]
    return scan_inputs(versions=versions, eval_prompt=prompt, expectations=list(expectations), known=known, labels=labels)


def kinds(flags):
    return sorted({f.kind for f in flags})


def test_clean_inputs_raise_no_flag():
    text = (EVALS / "versions" / "runbook-stepwise" / "run-1" / "runbook.md").read_text()
    assert scan({"run-1/runbook.md": text}, prompt=(EVALS / "task.md").read_text(),
                expectations=["Says how to roll back"], known=[KnownName("support-bot-v2", "configured system")]) == []


def test_a_configured_system_name_is_flagged_with_where_and_the_snippet():
    flags = scan({"run-2/notes.md": "Intro\nThis answer came from Support_Bot_V2 yesterday.\n"},
                 known=[KnownName("support-bot-v2", "configured system")])
    (flag,) = flags
    assert flag.kind == Kind.KNOWN_NAME
    assert flag.input == "version A (dir)" and flag.location == "run-2/notes.md line 2"
    assert "configured system 'support-bot-v2'" in flag.detail
    assert flag.snippet == "This answer came from Support_Bot_V2 yesterday."


def test_a_name_is_matched_as_a_whole_word_only():
    assert scan({"out.md": "The support-bot-v20 and mysupport-bot-v2 are other things."},
                known=[KnownName("support-bot-v2", "configured system")]) == []


def test_generic_and_short_names_are_not_searched():
    assert scan({"out.md": "The default output of the main system."},
                known=[KnownName("default", "configured judge"), KnownName("main", "x"), KnownName("abc", "x")]) == []


@pytest.mark.parametrize(
    "text, kind",
    [
        ("Following skills/runbooks/SKILL.md closely.", Kind.SKILL_PATH),
        ("Loaded .claude/skills/pdf/ first", Kind.SKILL_PATH),
        ("See SKILL.md", Kind.SKILL_PATH),
        ("Saved to /home/alice/evals/out.md", Kind.FILE_PATH),
        ("Saved to C:\\Users\\bob\\out.md", Kind.FILE_PATH),
        ("from iteration-2/eval-0/with_skill/run-1/outputs", Kind.FILE_PATH),
        ("Produced by the with_skill configuration", Kind.LABEL_KEY),
        ("config_name: fancy", Kind.LABEL_KEY),
        ('"variant": "b"', Kind.LABEL_KEY),
        ("Drafted with gpt-4o-mini", Kind.MODEL_NAME),
        ("llama-3.1-8b wrote this", Kind.MODEL_NAME),
        ("Claude 3.5 Sonnet says", Kind.MODEL_NAME),
        ('{"role": "assistant", "content": "hi"}', Kind.TRANSCRIPT),
        ("<|im_start|>user", Kind.TRANSCRIPT),
        ('{"tool_calls": [{"id": "x"}]}', Kind.TOOL_CALL),
        ('{"type": "tool_use", "name": "read"}', Kind.TOOL_CALL),
        ("⏺ Bash(ls -la)", Kind.TOOL_CALL),
        ("Tool call: search(query)", Kind.TOOL_CALL),
        ('{"finish_reason": "stop"}', Kind.RAW_OUTPUT),
        ("id chatcmpl-abc123XYZ", Kind.RAW_OUTPUT),
    ],
)
def test_structure_based_checks_catch_identities_no_name_list_knows(text, kind):
    assert kind in kinds(scan({"out.md": f"Intro line.\n{text}\n"}))


def test_chat_log_structure_is_a_transcript():
    flags = scan({"log.md": "Notes\nUser: rotate the password\n**Assistant:** sure, reading the docs\nUser: thanks\n"})
    (flag,) = flags
    assert flag.kind == Kind.TRANSCRIPT and "3 speaker turns" in flag.detail and flag.location == "log.md line 2"


@pytest.mark.parametrize(
    "text",
    [
        "System: Linux\nModel: ThinkPad X1\n",  # no user and assistant turns
        "Q: how?\nA: like this.\n",
        "The user should call the assistant manager.\n",
        "## Steps\n1. Notify the on-call engineer.\n",
        "Use the skills you have; the model answers.\n",
        "/api/v1/users returns 200\n",
    ],
)
def test_ordinary_text_is_not_flagged(text):
    assert scan({"out.md": text}) == []


def test_file_names_are_scanned_too():
    flags = scan({"run-1/transcript.json": "[]", "run-1/skills/foo/SKILL.md": "text", "run-1/with_skill.md": "x"})
    assert {(f.kind, f.location) for f in flags} == {
        (Kind.TRANSCRIPT, "file name run-1/transcript.json"),
        (Kind.SKILL_PATH, "file name run-1/skills/foo/SKILL.md"),
        (Kind.LABEL_KEY, "file name run-1/with_skill.md"),
    }


def test_the_eval_prompt_and_each_expectation_are_scanned():
    flags = scan(prompt="Compare the outputs.\nThe support-bot-v2 answer should win.",
                 expectations=["mentions the refund", "matches skills/refunds/SKILL.md"],
                 known=[KnownName("support-bot-v2", "configured system")])
    assert {(f.input, f.location, f.kind) for f in flags} == {
        ("eval prompt", "line 2", Kind.KNOWN_NAME),
        ("expectations", "expectation 2", Kind.SKILL_PATH),
    }


def test_labels_that_are_not_blinded_letters_are_label_keys():
    flags = scan(labels=["A", "with_skill", "2"])
    assert [(f.input, f.kind, f.snippet) for f in flags] == [
        ("version labels", Kind.LABEL_KEY, "with_skill"),
        ("version labels", Kind.LABEL_KEY, "2"),
    ]


def mapping_names(real_name: str) -> list[str]:
    """The names one version's real name contributes to the scan (version_names), each once."""
    return list(dict.fromkeys(name.text for name in version_names([real_name])))


def test_the_mapping_contributes_its_own_names():
    # The name as given, its trailing paths, its parents and its distinctive words; generic ones left out.
    assert mapping_names("iteration-1/with-skill-v2/outputs") == [
        "iteration-1/with-skill-v2/outputs", "with-skill-v2/outputs", "iteration-1", "with-skill-v2", "iteration", "skill", "v2",
    ]
    assert mapping_names("support-bot-v1") == ["support-bot-v1", "support", "v1"]
    assert mapping_names("out/v2") == ["out/v2", "v2"]
    assert mapping_names("blinded/A") == []
    flags = scan({"out.md": "As with-skill-v2 did before."},
                 known=[KnownName(n, "version name (the mapping)") for n in mapping_names("runs/with-skill-v2")])
    assert kinds(flags) == [Kind.KNOWN_NAME]


def test_repeated_leaks_in_one_file_are_one_flag_that_counts_the_lines():
    flags = scan({"out.md": "gpt-4o here\nand gpt-4o there\nand gpt-4o again\n"})
    (flag,) = flags
    assert flag.location == "out.md line 1" and "(and 2 more lines)" in flag.detail


def test_the_example_leaky_version_is_flagged_for_each_identity():
    from judgeapp.blind.core.inputs import read_version_dir

    content = read_version_dir(EVALS / "leaky" / "with-skill", max_run_bytes=100_000)
    flags = scan_inputs(versions=[("version A", content)], eval_prompt="Write a runbook.", expectations=[],
                        known=[KnownName("support-bot-v2", "configured system")])
    assert {Kind.KNOWN_NAME, Kind.SKILL_PATH, Kind.TRANSCRIPT, Kind.TOOL_CALL} <= set(kinds(flags))
