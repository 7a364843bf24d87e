"""`import-labels FILE.csv` and `agreement [--judge J]` (CONTRACT §3): output, exit codes, bad input."""

import json
import subprocess
import sys

import pytest
from django.core.management import call_command

from calibration.models import Assignment, Sample
from tests.calibration.conftest import RUBRIC_TWO, labels_csv, scores_for
from tests.helpers import ROOT

pytestmark = pytest.mark.django_db


def run_command(*args) -> tuple[int, str, str]:
    """The command as a user runs it: exit status, stdout, stderr (InputError -> one line, exit 2)."""
    from io import StringIO

    from judgeapp.judging.errors import InputError

    out, err = StringIO(), StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
    except InputError as exc:
        return 2, out.getvalue(), f"error: {exc}"
    except SystemExit as exc:
        return exc.code, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


@pytest.fixture
def two_criteria_run(planted_run):
    return planted_run(scores_for(25), rubric=RUBRIC_TWO)


def write(tmp_path, rows, name="labels.csv"):
    path = tmp_path / name
    path.write_bytes(labels_csv(rows))
    return path


def test_import_labels_stores_every_row_as_a_new_sample_and_agreement_shows_it(
    tmp_path, two_criteria_run, eager_tasks, django_capture_on_commit_callbacks
):
    run = two_criteria_run
    rows = [
        (run.run_id, f"c{i:03d}", crit, who, s) for i,
        s in enumerate(scores_for(25)) for crit in ("helpfulness", "tone") for who in ("ann", "bob")
    ]
    with django_capture_on_commit_callbacks(execute=True):
        code, out, _ = run_command("import-labels", str(write(tmp_path, rows)))
    assert code == 0 and "Imported 100 labels by 2 annotator(s) into 1 sample(s)" in out
    assert "new annotator accounts (no password, cannot log in): ann, bob" in out
    sample = Sample.objects.get()
    assert sample.method == "imported" and sample.size == 50 and sample.overlap == 2
    assert Assignment.objects.filter(item__sample=sample, state="labelled").count() == 100
    assert sample.agreement_version == sample.labels_version  # the task ran on commit

    code, out, _ = run_command("agreement", "--judge", "planted-judge")
    assert code == 0
    assert "judge planted-judge" in out and "quadratic-weighted kappa   1.000" in out and "Spearman's rho" in out
    assert "within one point" in out and "criterion helpfulness (25 items)" in out and "criterion tone (25 items)" in out
    assert "Krippendorff's alpha (ordinal) 1.000" in out
    code, out, _ = run_command("agreement", "--json")
    data = json.loads(out)
    assert data["level"] == {"metric": "kappa", "threshold": 0.6, "min_items": 20}
    (row,) = data["judges"]
    assert row["n_items"] == 50 and row["n_labels"] == 100 and row["locked"] is False
    assert set(row["per_criterion"]) == {"helpfulness", "tone"}


def test_agreement_computes_labels_no_worker_has_picked_up_yet(tmp_path, two_criteria_run):
    rows = [(two_criteria_run.run_id, f"c{i:03d}", "tone", "ann", s) for i, s in enumerate(scores_for(25))]
    run_command("import-labels", str(write(tmp_path, rows)))  # no worker, no eager tasks: nothing computed
    assert Sample.objects.get().agreement_stale
    code, out, _ = run_command("agreement")
    assert code == 0 and "computed the agreement of 1 sample(s)" in out and "25 items, 25 labels" in out
    assert not Sample.objects.get().agreement_stale


def test_agreement_with_no_sample_says_so_and_an_unknown_judge_is_bad_input(two_criteria_run):
    assert run_command("agreement") == (
        0,
        "No human-scored sample yet.\nLevel: kappa ≥ 0.60 on at least 20 items (quadratic-weighted kappa for 1–5 scores, "
        "Cohen's kappa for pass/fail and pairwise labels). A locked judge blocks every release gate that relies on it.\n",
        "",
    )
    code, _, err = run_command("agreement", "--judge", "nobody")
    assert code == 2 and "unknown judge 'nobody' (known: planted-judge)" in err


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "the file is empty"),
        (b"\x00\x01\x02binary", "looks like a binary file"),
        (b"run_id,case_id,annotator,label\nplanted,c000,ann,3\n", "missing column(s) criterion"),
        (b"run_id,case_id,criterion,annotator,label\n", "no labels (only a header)"),
        (b"run_id,case_id,criterion,annotator,label\nnope,c000,tone,ann,3\n", "line 2: no run 'nope'"),
        (b"run_id,case_id,criterion,annotator,label\nplanted,c999,tone,ann,3\n", "line 2: run planted has no case 'c999'"),
        (
            b"run_id,case_id,criterion,annotator,label\nplanted,c000,speed,ann,3\n",
            "line 2: run planted has no criterion 'speed' (criteria: helpfulness, tone)",
        ),
        (
            b"run_id,case_id,criterion,annotator,label\nplanted,c000,tone,ann,7\n",
            "line 2: label '7' is not an integer score from 1 to 5",
        ),
        (
            b"run_id,case_id,criterion,annotator,label\nplanted,c000,tone,ann,3\nplanted,c001,tone,a b,3\n",
            "line 3: annotator 'a b' is not a valid username",
        ),
        (
            b"run_id,case_id,criterion,annotator,label\nplanted,c000,tone,ann,3\nplanted,c000,tone,ann,4\n",
            "line 3: ann labels c000/tone of planted again (first on line 2)",
        ),
        (
            b"run_id,case_id,criterion,annotator,label\nplanted,c000,tone,ann,3,extra\n",
            "line 2: 6 fields, more than the header's 5",
        ),
    ],
)
def test_bad_label_files_get_one_line_exit_2_and_store_nothing(tmp_path, planted_run, content, message):
    planted_run([3, 4], rubric=RUBRIC_TWO)
    path = tmp_path / "labels.csv"
    path.write_bytes(content)
    code, out, err = run_command("import-labels", str(path))
    assert code == 2 and message in err and "\n" not in err.strip()
    assert not Sample.objects.exists() and not Assignment.objects.exists()


def test_a_pairwise_run_takes_1_2_tie_with_an_empty_criterion(tmp_path, small_pairwise_run):
    run = small_pairwise_run(n=4)
    rows = [
        (run.run_id, "p0", "", "ann", "1"), (run.run_id, "p1", "", "ann", "2"), (run.run_id, "p2", "", "ann", "tie"),
        (run.run_id, "p3", "", "ann", "B"),
    ]
    assert run_command("import-labels", str(write(tmp_path, rows)))[0] == 0
    assert list(Assignment.objects.order_by("position").values_list("value", flat=True)) == ["A", "B", "tie", "B"]
    code, _, err = run_command("import-labels", str(write(tmp_path, [(run.run_id, "p0", "tone", "bob", "1")], "bad.csv")))
    assert code == 2 and "leave criterion empty for a pairwise run" in err


def test_a_missing_file_is_one_line_and_exit_2_from_the_shell(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "import-labels", str(tmp_path / "missing.csv")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={
            **__import__("os").environ, "DJANGO_SETTINGS_MODULE": "tests.settings",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        },
    )
    assert result.returncode == 2 and result.stderr.strip() == f"error: {tmp_path / 'missing.csv'}: no such file"
