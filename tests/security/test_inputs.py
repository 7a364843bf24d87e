"""The attack corpus (tests/security/corpus.py) against every entry point it names: each hostile input is
refused with its one line (exit 2) or its form error (never a 500, never a traceback), no judge is called,
and every stored row and every file under DATA_DIR and the case's folder is byte-identical afterwards.

    .venv/bin/python -m pytest tests/security/test_inputs.py -q -p no:cacheprovider -s   # prints the tally
"""

from __future__ import annotations

import hashlib
import os
import traceback
from contextlib import redirect_stderr
from html import unescape
from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import get_commands, load_command_class
from django.core.management.base import OutputWrapper
from django.db import connections
from django.test import override_settings
from django.urls import reverse

from judgeapp.judging.judges import judges_sync
from tests.security.corpus import ATTACKS, DEFAULT_FILES, Attack

pytestmark = pytest.mark.django_db

SKIPPED_TABLES = {"django_session"}  # a logged-in client's session, not stored data


def database_snapshot() -> dict:
    """Every row of every table the app stores (sessions aside), as Python values."""
    snapshot = {}
    for model in apps.get_models():
        if model._meta.db_table in SKIPPED_TABLES:
            continue
        snapshot[model._meta.db_table] = list(model.objects.order_by("pk").values())
    return snapshot


def files_snapshot(*roots: Path) -> dict:
    """Every file under the roots: its bytes' digest and its mode."""
    found = {}
    for root in roots:
        for folder, _dirs, names in os.walk(root):
            for name in names:
                path = Path(folder) / name
                found[str(path)] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode)
    return found


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def run_command(argv: list[str]) -> tuple[int | str, str]:
    """`manage.py <argv>` as a shell runs it (run_from_argv), in this process: (exit status, stderr).
    A traceback is status "traceback" with the traceback as its text."""
    command = load_command_class(get_commands()[argv[0]], argv[0])
    out, err = StringIO(), StringIO()
    command.stdout, command.stderr = OutputWrapper(out), OutputWrapper(err)
    try:
        with redirect_stderr(err):  # argparse writes its own errors to sys.stderr
            command.run_from_argv(["manage.py", *argv])
        return 0, err.getvalue()
    except SystemExit as exc:
        return exc.code, err.getvalue()
    except BaseException:  # noqa: BLE001 - exactly what must never happen
        return "traceback", traceback.format_exc()


@pytest.fixture
def scene(make_judge, reviewer, monkeypatch):
    """Three judges of different families (the jury needs them), the judges file loaded, a reviewer."""
    monkeypatch.setattr(connections, "close_all", lambda: None)  # run_from_argv closes connections
    judges = [
        make_judge(name, family=family) for name, family in (("judge-a", "fam-a"), ("judge-b", "fam-b"), ("judge-c", "fam-c"))
    ]
    judges_sync()
    return {"judges": judges, "reviewer": reviewer}


def fill(value, placeholders: dict):
    if isinstance(value, list):
        return [fill(v, placeholders) for v in value]
    if isinstance(value, str):
        for key, replacement in placeholders.items():
            value = value.replace("{" + key + "}", str(replacement))
    return value


def attack_outcome(attack: Attack, folder: Path, scene, client) -> tuple[object, str]:
    placeholders = {
        "d": folder, "judge": scene["judges"][0].pk, "judge_b": scene["judges"][1].pk, "judge_c": scene["judges"][2].pk,
    }
    with override_settings(**{key: fill(value, placeholders) for key, value in attack.settings.items()}):
        if attack.argv is not None:
            return run_command(fill(attack.argv, placeholders))
        data = {key: fill(value, placeholders) for key, value in attack.data.items()}
        data.update({field: SimpleUploadedFile(name, content) for field, (name, content) in attack.uploads.items()})
        response = client.post(reverse(attack.url), data)
        return response.status_code, unescape(response.content.decode())


def test_the_corpus_has_forty_cases_or_more_each_with_an_entry_point_and_its_line():
    assert len(ATTACKS) >= 40
    assert len({a.id for a in ATTACKS}) == len(ATTACKS)
    assert all(a.entry and a.expect and (a.argv is not None) != bool(a.url) for a in ATTACKS)


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.id for a in ATTACKS])
def test_each_attack_is_refused_with_its_line_and_changes_nothing(attack, scene, client, tmp_path, fake_judge):
    folder = tmp_path / "case"
    write_files(folder, DEFAULT_FILES | attack.files)
    client.force_login(scene["reviewer"])
    rows_before = database_snapshot()
    files_before = files_snapshot(django_settings.DATA_DIR, folder)

    status, text = attack_outcome(attack, folder, scene, client)

    assert status != "traceback", f"{attack.id}: a traceback\n{text}"
    if attack.argv is not None:
        assert status == attack.exit, f"{attack.id}: exit {status}, stderr {text!r}"
        lines = text.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), f"{attack.id}: not one line: {text!r}"
        assert attack.expect in lines[0], f"{attack.id}: {lines[0]!r}"
    else:
        assert status == 400, f"{attack.id}: HTTP {status}"
        assert attack.expect in text, f"{attack.id}: the form error is missing"
    assert fake_judge.chat_requests == [], f"{attack.id}: a judge was called"
    assert database_snapshot() == rows_before, f"{attack.id}: stored rows changed"
    assert files_snapshot(django_settings.DATA_DIR, folder) == files_before, f"{attack.id}: files changed"


def test_tally(scene, client, tmp_path, fake_judge, capsys):
    """The corpus as one figure: attacks tried, attacks contained (refused as expected, nothing changed)."""
    contained = []
    for attack in ATTACKS:
        folder = tmp_path / attack.id
        write_files(folder, DEFAULT_FILES | attack.files)
        client.force_login(scene["reviewer"])
        rows_before, files_before = database_snapshot(), files_snapshot(django_settings.DATA_DIR, folder)
        status, text = attack_outcome(attack, folder, scene, client)
        expected = attack.exit if attack.argv is not None else 400
        if (status == expected and attack.expect in text and not fake_judge.chat_requests
                and database_snapshot() == rows_before and files_snapshot(django_settings.DATA_DIR, folder) == files_before):
            contained.append(attack.id)
    with capsys.disabled():
        print(f"\nattack corpus: {len(contained)}/{len(ATTACKS)} attacks contained "
              f"({sum(a.argv is not None for a in ATTACKS)} commands, {sum(bool(a.url) for a in ATTACKS)} forms)")
    assert len(contained) == len(ATTACKS)


def test_the_demo_data_and_evals_still_load_under_the_stricter_readers():
    """Every rubric, test set, expectations file and trace shipped in evals/ passes the checks above."""
    from judgeapp.agent.core.inputs import parse_requirements, parse_trace
    from judgeapp.blind.core.inputs import parse_expectations
    from judgeapp.judging.files import parse_rubric, testset_rows

    evals = Path(__file__).resolve().parents[2] / "evals"
    rubric = parse_rubric((evals / "support" / "rubric.toml").read_bytes(), "rubric.toml")
    assert [c.bounds for c in rubric.criteria] == [(1, 5)] * len(rubric.criteria) and not rubric.warnings
    assert len(list(testset_rows((evals / "support" / "testset.jsonl").read_bytes(), "testset.jsonl"))) == 24
    assert parse_expectations((evals / "blind" / "runbook" / "expectations.txt").read_bytes(), "expectations.txt")
    flowers = evals / "agent" / "flowers"
    assert parse_trace((flowers / "trace.jsonl").read_bytes(), "trace.jsonl").steps
    requirements = next(p for p in flowers.iterdir() if "requirement" in p.name)
    assert parse_requirements(requirements.read_bytes(), requirements.name)
