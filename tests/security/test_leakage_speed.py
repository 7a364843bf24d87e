"""The leakage scan over hostile text finishes in time linear in the text: no pattern can backtrack (RE2, or
plain string work) and no step compares every match with every other. Generous bounds, not a benchmark
(bench/blind_compare.py measures the speed)."""

import time

import pytest

from judgeapp.judging.leakage.names import KnownName, version_names
from judgeapp.judging.leakage.scan import scan_texts

SECONDS = 5.0
MEGABYTE = 1_000_000
# The most one file of a run may hold (settings.ARTIFACT_MAX_BYTES): texts that are one name repeated are scanned
# at that size, every match being a name to look at.
RUN_BYTES = 200_000

NAMES = version_names(["out/v1", "out/v2", "acme/stepwise", "acme/concise-runbook"]) + [
    KnownName("support-bot-v2", "configured system"), KnownName("gpt-4o-mini", "model of the system 'support-bot-v2'"),
]


def scan_seconds(piece: str, size: int, ending: str = "") -> float:
    text = piece * (size // len(piece)) + ending
    started = time.monotonic()
    scan_texts([("output", text)], names=NAMES)
    return time.monotonic() - started


@pytest.mark.parametrize("piece", [
    "c-l-a-u-d-",  # a name spelt out, never finished
    "C-l-a-u-d",
    "- _ . / \\ * | ",  # separators only
    "-_./\u00b7\u2022\u2014",
    "&#67", "&#x43", "%43",  # entities and percent-encoding without end
    "s-u-p-p-o-r-t-b-o-t-",  # a known name's letters, never finished
    "v 2 v",
    "version version 2.",
    "Then called f(",  # tool calls that never close
    "called `a_",
    '{"type": "huma',
    "HumanMessage(",
    "o3 ", "Sonnet 18 ", "Kimi ",  # names that are not leaks where they stand
    "3.5 ",
])
def test_a_megabyte_of_hostile_text_is_scanned_in_seconds(piece):
    assert scan_seconds(piece, MEGABYTE) < SECONDS


@pytest.mark.parametrize("piece, ending", [
    # One line of a megabyte of spaces before what a line pattern looks for: a backtracking engine shares the
    # spaces between `^[ \t]*` and the next `[ \t]*` every way it can (20 seconds for 10 KB before RE2).
    (" ", "user: hi"), (" ", "config: x"), ("\t", "- role: user"), (" ", "Bash("), ("> ", "**user**:"), ("* ", "user"),
    ("skill/", ""),  # a path that never reaches `skills/`
])
def test_a_megabyte_long_line_before_a_line_pattern_is_scanned_in_seconds(piece, ending):
    assert scan_seconds(piece, MEGABYTE, ending) < SECONDS


@pytest.mark.parametrize("piece", [
    "gpt-4o ", "Claude ", "GPT ", "C l a u d e ", "G P T - ", "I am o3 ", "This is version 2 ", "v2 ", "V_2 ", "stepwise ",
    "Then called get_weather() ", '{"type": "human"} ',
    "Claude Monet ",  # a name to look at every 13 characters, each time not a leak
])
def test_a_run_full_of_one_name_is_scanned_in_seconds(piece):
    assert scan_seconds(piece, RUN_BYTES) < SECONDS
