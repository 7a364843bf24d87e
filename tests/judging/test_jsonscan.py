"""Every JSON object in a hostile text, in linear time (judgeapp/judging/jsonscan.py)."""

import json
import random
import time

import pytest

from judgeapp.judging.jsonscan import MAX_DEPTH, json_objects, scan_json_objects
from judgeapp.judging.parsing import score_spec


def decoded_from_every_brace(text: str) -> set[tuple[int, int, str]]:
    """What trying json's own decoder at every `{` finds (quadratic: the reference, for small texts)."""
    decoder = json.JSONDecoder()
    found = set()
    for start, char in enumerate(text):
        if char != "{":
            continue
        try:
            value, end = decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            found.add((start, end, json.dumps(value)))
    return found


def scanned(text: str) -> set[tuple[int, int, str]]:
    return {(o.start, o.end, json.dumps(o.value)) for o in json_objects(text)}


@pytest.mark.parametrize("text", [
    'The reply says {"reasoning":"ok","score":5}. {"reasoning": "bad", "score": 1}',
    '{"note": "see {"reasoning": "x", "score": 1}',  # an object opened inside another's string
    '{"a": {"b": {"c": [1, 2, {"d": null}]}}, "e": "}{"}',
    'He wrote 5" screens {"reasoning": "r", "score": 2} and "quotes',
    '{"a": 1,} {"a": "\\u00e9\\n", "b": -1.5e3, "c": [true, false]}',
    '{ } {"x": "unterminated',
    '```json\n{"reasoning": "fenced", "score": 3}\n```',
])
def test_every_object_json_itself_would_decode_is_found(text):
    assert scanned(text) == decoded_from_every_brace(text)


def test_random_texts_of_json_fragments_give_what_json_gives_from_every_brace():
    pieces = [
        '{', '}', '[', ']', '"', ':', ',', ' ', 'a', '1', '\\', 'true', 'null', '\n', '{"a":', '"b"', '0.5', '-', 'e', '\\"',
    ]
    draw = random.Random(26)
    for _ in range(3000):
        text = "".join(draw.choice(pieces) for _ in range(draw.randint(1, 30)))
        assert scanned(text) == decoded_from_every_brace(text), text


def test_objects_come_in_the_order_they_end_so_the_outer_one_is_last():
    outer = json_objects('{"reasoning": "r", "score": 1, "quoted": {"score": 5}}')
    assert [o.value for o in outer] == [{"score": 5}, {"reasoning": "r", "score": 1, "quoted": {"score": 5}}]


def test_nesting_beyond_the_limit_is_not_read_but_what_follows_it_is():
    deep = '{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)
    objects = json_objects(deep + ' {"reasoning": "r", "score": 4}')
    assert objects[-1].value == {"reasoning": "r", "score": 4}
    assert all(o.value != json.loads(deep) for o in objects)  # the outermost one nests too deep


ADVERSARIAL = {
    "braces": lambda n: "{" * n,
    "brace-quote": lambda n: '{"' * (n // 2),
    "unclosed nesting": lambda n: '{"a":' * (n // 5),
    "unclosed array": lambda n: '{"a":[' + "1," * (n // 2),
    "many small objects": lambda n: '{"a":1}' * (n // 7),
    "unterminated string": lambda n: '{"' + "x" * n,
    "strings of braces": lambda n: '{"a":"{' * (n // 6),
    "prose and objects": lambda n: 'x "y" {"a": "b {"c": 1} ' * (n // 25),
}


@pytest.mark.parametrize("name", ADVERSARIAL)
def test_no_text_is_read_more_than_three_times_over(name):
    """The linear bound, counted: a scan that tried each `{` against the rest of the text would read these
    texts thousands of times over."""
    text = ADVERSARIAL[name](200_000)
    assert scan_json_objects(text).chars_read <= 3 * len(text)


def test_a_2_mb_adversarial_reply_is_read_in_seconds_and_its_verdict_found():
    reply = '{"a":' * 200_000 + ' {"x": "{' * 50_000 + '\nMy verdict: {"reasoning": "It misses the refund.", "score": 2}'
    assert len(reply) > 1_400_000
    reply += "." * (2_000_000 - len(reply))
    started = time.monotonic()
    assert score_spec().parse(reply)["score"] == 2
    assert time.monotonic() - started < 60  # a shared machine under load takes seconds; quadratic would take hours
