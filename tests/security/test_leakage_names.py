"""The model and assistant names file (judgeapp/judging/data/model_names.toml): one list, read by the leakage scan,
each name found where it is a leak and not where it is an ordinary word."""

import pytest

from judgeapp.blind.core.inputs import version_from_files
from judgeapp.blind.core.leakage import scan_inputs
from judgeapp.judging.leakage.scan import Kind, scan_texts
from judgeapp.judging.model_names import MODEL_NAME, PROVIDER_NAME, ModelName, ModelNameFinder, _as_entry, default_finder


def kinds(text: str) -> set[str]:
    return {flag.kind for flag in scan_texts([("output", text)])}


def test_the_names_the_issue_lists_are_in_the_file():
    keys = set(default_finder().entries)
    assert {"sonnet", "opus", "haiku", "gemini", "copilot", "llama", "qwen", "mistral", "deepseek", "gpt", "o1", "o3", "o4",
            "grok", "phi", "commandr", "claude", "anthropic", "openai", "chatgpt"} <= keys


@pytest.mark.parametrize("entry", default_finder().entries.values(), ids=lambda e: e.key)
def test_every_name_in_the_file_is_found_where_it_is_a_leak(entry):
    written = entry.name.lower() if entry.case == "lower" else entry.name
    # A bare name where it is one; a name that is an ordinary word where the text names it as a model.
    text = f"Written by {written} overnight." if entry.bare else f"I am {written}, and these are the steps."
    flags = scan_texts([("output", text)])
    assert [f.kind for f in flags] == [Kind.PROVIDER if entry.kind == PROVIDER_NAME else Kind.MODEL_NAME], flags
    assert flags[0].rule.startswith(("provider name", "model name"))


@pytest.mark.parametrize("text, kind, rule", [
    ("Drafted with claude-sonnet-4-5-20250929.", Kind.MODEL_NAME, "model name"),
    ("Opus 4.1 wrote it", Kind.MODEL_NAME, "model name"),
    ("Served by o4-mini", Kind.MODEL_NAME, "model name"),
    ("GPT-5 here", Kind.MODEL_NAME, "model name"),
    ("Llama-3.1-70B-Instruct answered", Kind.MODEL_NAME, "model name"),
    ("Qwen2.5-Coder-32B answered", Kind.MODEL_NAME, "model name"),
    ("Gemini Pro answered", Kind.MODEL_NAME, "model name"),
    ("C\u00b7l\u00b7a\u00b7u\u00b7d\u00b7e wrote it", Kind.PROVIDER, "provider name, letters spaced"),
    ("M-I-S-T-R-A-L wrote it", Kind.PROVIDER, "provider name, letters spaced"),
    ("D e e p S e e k   R 1 wrote it", Kind.MODEL_NAME, "model name, letters spaced"),
    ("The Haiku model wrote it", Kind.MODEL_NAME, "model name, named as a model"),
    ("Anthropic\u2019s Opus wrote it", Kind.MODEL_NAME, "model name, named as a model"),
    ("\u7528Claude\u5199\u7684", Kind.PROVIDER, "provider name"),  # no spaces around a name in Chinese
])
def test_model_names_with_versions_spacing_and_context(text, kind, rule):
    assert [
        (f.kind, f.rule) for f in scan_texts([("output", text)]) if f.kind in (Kind.MODEL_NAME, Kind.PROVIDER)
    ][-1] == (kind, rule)


@pytest.mark.parametrize("text", [
    "The llama and the alpaca share a field.",
    "Opus 131 in C-sharp minor; his magnum opus.",
    "Sonnet 18 compares thee to a summer's day.",
    "phi = (1 + sqrt(5)) / 2",
    "Falcon 9 landed; the falcon flew.",
    "The co-pilot and the copilot swapped seats.",
    "She is a Gemini; Gemini season is here.",
    "O3 is ozone and O2 is oxygen.",
    "Kimi Raikkonen won in 2007.",
    "Explainable AI (XAI) and the cohere library.",
    "GPT partition table on /dev/sdb",
])
def test_ordinary_words_that_share_a_name_are_not_flagged(text):
    assert kinds(text) == set()


def test_a_name_added_to_the_list_is_found_with_every_rule():
    finder = ModelNameFinder(
        [ModelName("Zorblax", kind=PROVIDER_NAME, suffixes=frozenset({"turbo"}), not_before=frozenset({"nebula"}))],
        context_before=["i am"], context_after=["model"],
    )
    found = lambda text: [(text[h.start : h.end], h.kind, h.rule) for h in finder.finditer(text)]  # noqa: E731
    assert found("Zorblax wrote it") == [("Zorblax", PROVIDER_NAME, "provider name")]
    assert found("Z-o-r-b-l-a-x wrote it") == [("Z-o-r-b-l-a-x", PROVIDER_NAME, "provider name, letters spaced")]
    assert found("zorblax-2.1 and Zorblax Turbo") == [
        ("zorblax-2.1", MODEL_NAME, "model name"), ("Zorblax Turbo", MODEL_NAME, "model name"),
    ]
    assert found("the Zorblax nebula") == []


def test_a_bad_entry_in_the_file_is_refused():
    with pytest.raises(ValueError, match="bad entry"):
        _as_entry({"name": "X", "kind": "person"})
    with pytest.raises(ValueError, match="bad entry"):
        _as_entry({"name": "X", "colour": "red"})


def test_file_names_are_scanned_for_model_names_too():
    version = version_from_files({"run-1/sonnet-4.5_answer.md": b"A clean runbook.", "run-1/C-l-a-u-d-e.md": b"A clean runbook."},
                                 name="v", max_run_bytes=100_000)
    flags = scan_inputs(versions=[("version A", version)], eval_prompt="Write a runbook.", expectations=[], labels=["A"])
    assert {(f.location, f.kind, f.rule) for f in flags} == {
        ("file name run-1/sonnet-4.5_answer.md", Kind.MODEL_NAME, "model name"),
        ("file name run-1/C-l-a-u-d-e.md", Kind.PROVIDER, "provider name, letters spaced"),
    }
