"""No template tag or filter reads the database (#31): a page's reads are made by its view (or its run kind's
`page_reads` selector) and passed in the context; the tags only format the values they are given. Checked on
the source of every tag library the templates can load, so it cannot flake."""

import ast
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
# The QuerySet and manager calls that run a query (a dict's .get, .items or .update is no query).
QUERY_CALLS = {
    "objects", "filter", "exclude", "first", "last", "count", "exists", "values_list", "aggregate", "annotate",
    "select_related", "prefetch_related", "order_by", "iterator", "in_bulk", "raw", "get_or_create", "update_or_create",
}


def tag_modules() -> list[Path]:
    libraries = settings.TEMPLATES[0]["OPTIONS"]["libraries"].values()
    registered = {ROOT / (name.replace(".", "/") + ".py") for name in libraries}
    patterns = ("judgeapp/*/templatetags.py", "judgeapp/**/templatetags/*.py", "calibration/templatetags/*.py")
    found = {path for pattern in patterns for path in ROOT.glob(pattern)}
    return sorted(registered | found)


def database_reads(source: str) -> list[str]:
    """Each import of models or selectors, each `.objects` and each QuerySet call in `source`, with its line."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            modules = [node.module or "", *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            modules = []
        reading = [m for m in modules if "models" in m.split(".") or "selectors" in m or m.startswith("django.db")]
        if reading:
            found.append(f"line {node.lineno}: imports {reading[0]}")
        registering = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "register"
        if isinstance(node, ast.Attribute) and node.attr in QUERY_CALLS and not registering:  # not @register.filter
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


def test_every_tag_library_is_checked():
    names = {path.relative_to(ROOT).as_posix() for path in tag_modules()}
    expected = {"judgeapp/web/templatetags.py", "judgeapp/jury/templatetags.py", "calibration/templatetags/calibration_tags.py"}
    assert expected <= names
    assert all(path.exists() for path in tag_modules())


def test_no_template_tag_queries_the_database():
    reads = {path.relative_to(ROOT).as_posix(): database_reads(path.read_text()) for path in tag_modules()}
    assert {path: found for path, found in reads.items() if found} == {}


def test_the_check_catches_a_tag_that_reads():
    # The shapes the tags had before their reads moved into the views (ranker, blind, calibration).
    old_tags = '''
from judgeapp.ranker import selectors as selectors_ranker
from judgeapp.blind.selectors import blind_view_for_run
from judgeapp.models import Run

def ranklist_state_of(run):
    ranklist = run.ranklists.first()
    return Run.objects.filter(pk=run.pk)

def alt_test(result):
    from calibration.selectors.alt_test import alt_test_for_result
    return alt_test_for_result(result)
'''
    found = database_reads(old_tags)
    assert len(found) == 7, found
    assert database_reads("@register.filter\ndef pct(value):\n    return {'a': 1}.get(value)\n") == []
