"""Issue 16, item 3: every page of the demo, as each role, in the words a reviewer uses: none of the
internal words below, no Python dict or JSON repr, no float printed to more digits than anyone reads.

The pages are the ones tests/crawl.py finds: every link from each role's home and the menu, over the demo."""

import html as html_lib
import re

import pytest
from django.test import Client

from tests.crawl import crawl, demo  # noqa: F401 (demo is a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

INTERNAL_WORDS = [
    "the seed's", "seed's worst case", "(Mode 3)", "Mode 2", "BROWSE_ROOTS", "overall_score", "basis overall",
    "blocked by lead lead", "kappa -0.00", "-0.00", "None</", "Traceback", "ranker.md", "Mode 1",
]
# Issue 30, item 6: no specification document ("seed", as in "the seed's rule") nor internals ("Celery") in
# any page or command output; a random draw is a "draw number". And one word per calibration state: a
# locked judge, or one with too few labels, is never called "not calibrated" (no person has scored it).
INTERNAL_PATTERNS = [
    re.compile(r"\bseed", re.I),
    re.compile(r"celery", re.I),
    re.compile(r"not calibrated\W[^.;]{0,60}?(?:kappa|agreement|alpha|level|locked|too few|unreliable)"),
]


def internal_words_in(text: str) -> list[str]:
    """The internal words and wrong state words in a page's visible text or a command's output."""
    found = [word for word in INTERNAL_WORDS if word in text]
    for pattern in INTERNAL_PATTERNS:
        found += [text[max(0, m.start() - 40):m.end() + 40] for m in pattern.finditer(text)]
    return found


DICT_REPR = re.compile(r"""\{\s*['"][A-Za-z_]+['"]\s*:""")
UNROUNDED = re.compile(r"(?<![\w.])\d+\.\d{5,}(?![\w.])")


def visible_text(page: str) -> str:
    # <pre> and <code> hold texts shown as they are (a prompt, a raw reply, a leaked snippet): JSON there is the text.
    page = re.sub(r"<(script|style|pre|code)\b.*?</\1>", " ", page, flags=re.S | re.I)
    page = re.sub(r"<[^>]+>", " ", page)
    return html_lib.unescape(page)


@pytest.mark.parametrize("username", ["lead", "reviewer", "annotator"])
def test_every_demo_page_speaks_a_reviewers_words(demo, django_db_blocker, username):
    from django.contrib.auth.models import User

    with django_db_blocker.unblock():
        client = Client()
        client.force_login(User.objects.get(username=username))
        pages = crawl(client)
    assert len(pages) >= (1 if username == "annotator" else 25), sorted(pages)  # an annotator sees only the queue
    problems = []
    for url, page in pages.items():
        text = visible_text(page)
        problems += [f"{url}: {word!r}" for word in internal_words_in(text)]
        problems += [
            f"{url}: dict {m.group(0)!r} in {text[max(0, m.start() - 60):m.end() + 60]!r}" for m in DICT_REPR.finditer(text)
        ]
        problems += [f"{url}: float {m.group(0)}" for m in UNROUNDED.finditer(text)]
    # One line per kind of page (a run's judgments share one template).
    shown = {re.sub(r"/[0-9a-f-]{36}/", "/<uuid>/", line): None for line in sorted(set(problems))}
    assert not problems, "\n".join(list(shown)[:40])


def test_ups_summary_rounds_its_figures(demo):
    """`up` prints what the demo loaded: "mean 4.57", never "mean 4.569444444444445"."""
    summary = "\n".join(demo)
    assert "mean " in summary and not UNROUNDED.findall(summary), summary


def test_the_markdown_summary_says_the_agreement_in_a_sentence():
    from judgeapp.pointwise.core import _agreement_line

    line = _agreement_line({"kappa": -0.0001, "agreement": 0.8333, "n_items": 12, "sample_run_id": "demo-pointwise",
                            "status": "calibrated", "per_criterion": {"helpfulness": {"kappa": 0.5}}})
    assert line == "Cohen's kappa 0.00, 83% exact agreement on 12 items of a sample of demo-pointwise (calibrated)"
    assert not DICT_REPR.search(line)
