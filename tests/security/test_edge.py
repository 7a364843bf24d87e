"""Hostile input and a full disk at the command line and on the pages (issue 26, item 5; the API's side is
tests/api/test_edge.py, the files' and flags' one-line refusals are in the attack corpus). A disk that fills
while a run's inputs are stored: exit 2 with one line at the command line, a form error on the page (a 507
line when it filled under an upload, before any form could read it), and every stored row and every file
under DATA_DIR as it was. A NUL in a page's query or path: 400, one line."""

import errno
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.files.uploadhandler import TemporaryFileUploadHandler
from django.db import OperationalError
from django.urls import reverse

from judgeapp.agent import services as agent_services
from judgeapp.judging.cli import failure_line
from judgeapp.judging.errors import DiskFull, disk_full
from judgeapp.models import Case, Output
from tests.security.corpus import AGENT, DEFAULT_FILES, JURY, OUTPUTS, RUBRIC, TESTSET, pairwise, pointwise
from tests.security.test_inputs import database_snapshot, files_snapshot, fill, run_command, write_files

pytestmark = pytest.mark.django_db

FULL_LINE = "error: the disk is full (No space left on device): nothing was stored; free some space and try again"


def no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def scene(make_judge, reviewer, monkeypatch, tmp_path):
    from django.db import connections

    from judgeapp.judging.judges import judges_sync

    monkeypatch.setattr(connections, "close_all", lambda: None)  # run_from_argv closes connections
    judges = [
        make_judge(name, family=family) for name, family in (("judge-a", "fam-a"), ("judge-b", "fam-b"), ("judge-c", "fam-c"))
    ]
    judges_sync()
    folder = tmp_path / "case"
    write_files(folder, DEFAULT_FILES)
    return {"judges": judges, "reviewer": reviewer, "folder": folder}


def snapshot(scene) -> tuple:
    return database_snapshot(), files_snapshot(django_settings.DATA_DIR, scene["folder"])


# --- The command line ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "model"),
    [(pointwise(), Case), (pointwise("--outputs", "{d}/a.jsonl"), Output), (pairwise(), Output), (JURY, Case)],
    ids=["pointwise-testset", "pointwise-outputs", "pairwise-outputs", "jury-testset"],
)
def test_a_command_whose_disk_fills_while_it_stores_the_run_exits_2_with_one_line(scene, fake_judge, monkeypatch, argv, model):
    if argv == pointwise("--outputs", "{d}/a.jsonl"):
        write_files(scene["folder"], {"testset.jsonl": TESTSET.replace(b', "output": "Settings > Password."', b"")})
    monkeypatch.setattr(model.objects, "bulk_create", no_space)
    before = snapshot(scene)
    status, text = run_command(fill(argv, {"d": scene["folder"]}))
    assert (status, text.strip()) == (2, FULL_LINE)
    assert snapshot(scene) == before and fake_judge.chat_requests == []


def test_agent_judge_whose_workspace_fills_the_disk_exits_2_and_leaves_no_staging_folder(
    scene, fake_judge, monkeypatch, settings
):
    settings.AGENT_SANDBOX_ENABLED = False
    ingest = agent_services._ingest

    def half_copied(source, name, dest, mentioned):
        ingest(source, name, dest, mentioned)  # the workspace is on the disk, then the task file fills it
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(agent_services, "_ingest", half_copied)
    before = snapshot(scene)
    status, text = run_command(fill(AGENT, {"d": scene["folder"]}))
    assert (status, text.strip()) == (2, FULL_LINE)
    assert snapshot(scene) == before
    assert not list((Path(django_settings.DATA_DIR) / "runs").glob(".incoming-*"))


def test_a_disk_that_fills_after_the_run_is_stored_is_one_line_without_nothing_stored():
    """Where no service could roll it back (a report file, say), the line says the disk is full, not that
    nothing was stored."""
    assert (
        failure_line(OSError(errno.ENOSPC, "No space left on device"))
        == "the disk is full (No space left on device); free some space and try again"
    )
    assert (
        failure_line(OperationalError("database or disk is full"))
        == "the disk is full (database or disk is full); free some space and try again"
    )
    assert (
        disk_full(DiskFull("x")) and not disk_full(OSError(errno.EACCES, "Permission denied"))
        and not disk_full(OperationalError("locked"))
    )


# --- The pages --------------------------------------------------------------------------------------------


def pointwise_form(scene, **uploads) -> dict:
    return {"judge": scene["judges"][0].pk, "threshold": "3.5",
            "testset_file": SimpleUploadedFile("t.jsonl", TESTSET), "rubric_file": SimpleUploadedFile("r.toml", RUBRIC),
            **uploads}


def test_a_page_whose_disk_fills_while_it_stores_the_run_shows_a_form_error_and_stores_nothing(scene, client, monkeypatch):
    client.force_login(scene["reviewer"])
    monkeypatch.setattr(Case.objects, "bulk_create", no_space)
    before = snapshot(scene)
    response = client.post(reverse("pointwise:new"), pointwise_form(scene))
    assert response.status_code == 400
    assert FULL_LINE.removeprefix("error: ") in response.content.decode()
    assert snapshot(scene) == before


def test_the_pairwise_page_too(scene, client, monkeypatch):
    client.force_login(scene["reviewer"])
    monkeypatch.setattr(Output.objects, "bulk_create", no_space)
    before = snapshot(scene)
    response = client.post(reverse("pairwise:new"), {
        "judge": scene["judges"][0].pk, "testset_file": SimpleUploadedFile("t.jsonl", TESTSET),
        "rubric_file": SimpleUploadedFile("r.toml", RUBRIC), "a_file": SimpleUploadedFile("a.jsonl", OUTPUTS),
        "b_file": SimpleUploadedFile("b.jsonl", OUTPUTS.replace(b"Billing.", b"Invoices.")),
    })
    assert response.status_code == 400 and FULL_LINE.removeprefix("error: ") in response.content.decode()
    assert snapshot(scene) == before


def test_the_agent_page_whose_upload_fills_the_disk_shows_a_form_error_and_leaves_no_staging_folder(
    scene, client, monkeypatch, settings
):
    settings.AGENT_SANDBOX_ENABLED = False
    client.force_login(scene["reviewer"])
    monkeypatch.setattr(agent_services, "_ingest", no_space)
    before = snapshot(scene)
    response = client.post(reverse("agent:home"), {
        "task": "Plot it.", "requirements": "1. saves the plot", "judge": scene["judges"][0].pk,
        "workspace": SimpleUploadedFile("ws.zip", b"PK\x05\x06" + b"\x00" * 18),
    })
    assert response.status_code == 400 and FULL_LINE.removeprefix("error: ") in response.content.decode()
    assert snapshot(scene) == before
    assert not list((Path(django_settings.DATA_DIR) / "runs").glob(".incoming-*"))


def test_a_page_whose_disk_fills_under_an_upload_answers_507_in_one_line(scene, client, monkeypatch, settings, tmp_path):
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 100  # the test set goes to a temp file
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "uploads")
    (tmp_path / "uploads").mkdir()
    monkeypatch.setattr(TemporaryFileUploadHandler, "receive_data_chunk", no_space)
    client.force_login(scene["reviewer"])
    before = snapshot(scene)
    response = client.post(reverse("pointwise:new"), pointwise_form(scene))
    assert response.status_code == 507 and response["Content-Type"].startswith("text/plain")
    assert response.content.decode() == "The disk is full (No space left on device); free some space and try again.\n"
    assert snapshot(scene) == before and list((tmp_path / "uploads").iterdir()) == []


@pytest.mark.parametrize(
    ("url", "piece"),
    [
        ("/runs/?system=%00", "the query parameter 'system' holds a NUL character (\\u0000) at character 1"),
        ("/?kind=pointwise&system=bot%00", "the query parameter 'system' holds a NUL character (\\u0000) at character 4"),
        ("/runs/r%00/", "the path holds a NUL character (\\u0000) at character 8"),
        ("/pointwise/?preflight=%00", "the query parameter 'preflight'"),
    ],
)
def test_a_nul_in_a_pages_query_or_path_is_400_in_one_line(scene, client, url, piece):
    client.force_login(scene["reviewer"])
    response = client.get(url)
    assert response.status_code == 400 and response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert text.count("\n") == 1 and text.startswith("Bad request: ") and piece in text, text
