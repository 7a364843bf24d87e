"""A team's own check-up set (`judge-checkup --set FILE`, the upload on the judges page): the same figures as
the same pairs shipped as a set, over real HTTP to the fake judge; bad files refused with their line and
nothing stored; tags give the figures per tag, worst first, recomputed here by hand and with scikit-learn."""

import json
import random
from pathlib import Path

import pytest
from django.conf import settings
from sklearn.metrics import cohen_kappa_score

from judgeapp.checkup import core
from judgeapp.checkup.core import CheckupSet, load_pairs, own_pairs
from judgeapp.judging.content import InputFile
from judgeapp.judging.errors import InputError
from judgeapp.models import Judgment, Run
from judgeapp.models import TestSet as StoredTestSet
from tests.checkup.builders import checkup, run_checkup_command
from tests.checkup.oracles import LabelOracle

DATASETS = Path(settings.BASE_DIR) / "datasets"
COMPARED = ("figures", "position", "counts")


def thirty_pairs() -> list[dict]:
    """30 LLMBar Natural pairs (the oracle knows them), a third tagged "hard", two thirds "short"."""
    pairs = load_pairs("llmbar-natural", DATASETS)[:30]
    return [
        {"input": p.input, "output_1": p.output_1, "output_2": p.output_2, "label": 1 if p.label == "A" else 2,
         "tags": ["hard"] if i % 3 == 0 else ["short"]}
        for i, p in enumerate(pairs)
    ]


def jsonl(rows) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def shipped_as_a_set(tmp_path: Path, monkeypatch, rows: list[dict]) -> Path:
    """The pairs as a shipped set ("team-30", LLMBar's file shape), beside the real sets' files."""
    datasets = tmp_path / "datasets"
    datasets.mkdir()
    for name in ("llmbar", "pandalm"):
        (datasets / name).symlink_to(DATASETS / name)
    (datasets / "team").mkdir()
    (datasets / "team" / "pairs.json").write_text(json.dumps([{k: v for k, v in r.items() if k != "tags"} for r in rows]))
    monkeypatch.setitem(core.SETS, "team-30", CheckupSet("team-30", "team/pairs.json", "30 pairs", "a test", "the label"))
    return datasets


@pytest.mark.django_db
def test_an_uploaded_file_of_30_pairs_gives_the_figures_of_the_same_pairs_shipped_as_a_set(
    judge, fake_judge, tmp_path, monkeypatch
):
    rows = thirty_pairs()
    fake_judge.action = LabelOracle(noise=0.3, seed=5)  # wrong on a seeded 30% of prompts: figures below 1
    datasets = shipped_as_a_set(tmp_path, monkeypatch, rows)
    shipped = checkup(judge, sets="team-30", datasets_dir=datasets).report["sets"]["team-30"]
    (tmp_path / "team-30.jsonl").write_text(jsonl(rows))
    run = checkup(judge, own=[InputFile.from_path(tmp_path / "team-30.jsonl")])
    own = run.report["sets"]["team-30.jsonl"]

    assert run.report["set_order"] == ["team-30.jsonl"]  # only the team's own set: no shipped set unasked
    for key in COMPARED:
        assert own[key] == shipped[key], key
    assert 0 < own["figures"]["accuracy_all"]["value"] < 1 and own["counts"]["pairs"] == 30
    assert [c["verdict"] for c in own["cases"]] == [c["verdict"] for c in shipped["cases"]]
    digest = __import__("hashlib").sha256((tmp_path / "team-30.jsonl").read_bytes()).hexdigest()
    assert own["own"] is True and own["file"] == "team-30.jsonl" and own["sha256"] == digest
    assert digest[:12] in own["title"] and own["references"] == []  # no published figures beside it
    assert run.report["calls"]["cached"] == 60  # the same prompts: the shipped run's answers


@pytest.mark.django_db
def test_tags_give_each_tags_figures_worst_first_recomputed_by_hand(judge, fake_judge, tmp_path):
    rows = thirty_pairs()
    rows[1]["label"] = "tie"  # a tied human label: only an agreed tie matches it
    fake_judge.action = LabelOracle(noise=0.3, seed=2)
    (tmp_path / "mine.jsonl").write_text(jsonl(rows))
    entry = checkup(judge, own=[InputFile.from_path(tmp_path / "mine.jsonl")]).report["sets"]["mine.jsonl"]

    slices = entry["slices"]
    assert [s["tag"] for s in slices] == sorted(["hard", "short"], key=lambda t: next(
        s["figures"]["accuracy_all"]["value"] for s in slices if s["tag"] == t))
    for entry_slice in slices:
        tagged = [c for c in entry["cases"] if entry_slice["tag"] in c["tags"]]
        assert entry_slice["n"] == len(tagged) == (10 if entry_slice["tag"] == "hard" else 20)
        right = sum(c["ab"] == c["ba"] == c["label"] for c in tagged)
        figures = entry_slice["figures"]
        assert figures["accuracy_all"]["k"] == right and figures["accuracy_all"]["n"] == len(tagged)
        expected = cohen_kappa_score([c["label"] for c in tagged], [c["verdict"] or "none" for c in tagged])
        assert figures["kappa"]["value"] == pytest.approx(expected, abs=1e-12)
        low, high = figures["accuracy_all"]["ci95"]
        assert low <= right / len(tagged) <= high
    assert entry["cases"][1]["label"] == "tie"


@pytest.mark.parametrize(
    "text, line, reason",
    [
        ('{"input": "q", "output_1": "a", "output_2": "b", "label": 1}\nnot json\n', 2, "not valid JSON"),
        ('\n{"input": "q", "output_1": "a", "output_2": "b", "label": 3}\n', 2, "'label' must be 1, 2 or \"tie\", got 3"),
        ('{"input": "q", "output_1": "a", "output_2": "b", "label": true}\n', 1, "'label' must be 1, 2"),
        ('{"input": "", "output_1": "a", "output_2": "b", "label": 1}\n', 1, "'input' must be a non-empty text"),
        ('{"input": "q", "output_2": "b", "label": 2}\n', 1, "'output_1' must be a text"),
        ('{"input": "q", "output_1": "a", "output_2": "b", "label": "tie", "tags": "x"}\n[1]\n', 2, "expected a JSON object"),
        ('{"input": "q", "output_1": "a", "output_2": "b", "label": 1, "tags": [1]}\n', 1, "tag 1 must be a text"),
        (
            '{"input": "q", "output_1": "a", "output_2": "b", "label": 1, "tags": ["' + "t" * 51 + '"]}\n', 1,
            "tag 1 is 51 characters long",
        ),
        (
            '{"input": "q", "output_1": "a", "output_2": "b", "label": 1, "tags": ' + json.dumps(["t"] * 21) + "}\n", 1,
            "21 tags, over the limit of 20",
        ),
        ('{"input": "q\\u0000", "output_1": "a", "output_2": "b", "label": 1}\n', 1, "NUL character"),
    ],
)
def test_a_bad_row_is_one_line_naming_its_line_and_reason(text, line, reason):
    with pytest.raises(InputError) as caught:
        own_pairs(text.encode(), "mine.jsonl", max_pairs=100)
    message = str(caught.value)
    assert message.startswith(f"mine.jsonl line {line}: ") and reason in message and "\n" not in message


def test_a_file_past_the_pair_limit_or_named_like_a_shipped_set_is_refused():
    row = '{"input": "q", "output_1": "a", "output_2": "b", "label": 1}\n'
    with pytest.raises(InputError, match="mine.jsonl: more than 2 pairs"):
        own_pairs((row * 3).encode(), "mine.jsonl", max_pairs=2)
    with pytest.raises(InputError, match="a shipped set has this name"):
        own_pairs(row.encode(), "pandalm", max_pairs=2)
    with pytest.raises(InputError, match="the file is empty"):
        own_pairs(b"\n\n", "mine.jsonl", max_pairs=2)
    assert own_pairs(row.encode(), "mine.jsonl", max_pairs=2)[0].label == "A"


def test_the_command_checks_up_a_judge_on_a_teams_file_and_refuses_a_bad_one_with_its_line(
    transactional_db, judge, fake_judge, tmp_path, capsys
):
    rows = thirty_pairs()[:6]
    fake_judge.action = LabelOracle()
    good = tmp_path / "ours.jsonl"
    good.write_text(jsonl(rows))
    code, out, err = run_checkup_command(capsys, "--judge", "judge-a", "--set", str(good), "--report", str(tmp_path / "r.json"))
    assert code == 0, err
    assert "  ours.jsonl: 6 of 6 pairs, 6 judged in both orders" in out
    assert "    the team's own set ours.jsonl, sha256 " in out and "published:" not in out
    assert "    per tag, worst first:" in out and "      hard (2 pairs): accuracy over all 100.0% [" in out
    assert json.loads((tmp_path / "r.json").read_text())["sets"]["ours.jsonl"]["counts"]["pairs"] == 6

    before = (Run.objects.count(), StoredTestSet.objects.count(), Judgment.objects.count())
    bad = tmp_path / "bad.jsonl"
    bad.write_text(jsonl(rows[:2]) + '{"input": "q", "output_1": "a", "output_2": "b", "label": "A"}\n')
    code, out, err = run_checkup_command(capsys, "--judge", "judge-a", "--set", f"llmbar-natural,{bad}")
    assert code == 2 and out == ""
    assert err.strip() == 'error: bad.jsonl line 3: \'label\' must be 1, 2 or "tie", got "A"'
    assert (Run.objects.count(), StoredTestSet.objects.count(), Judgment.objects.count()) == before
    code, _, err = run_checkup_command(capsys, "--judge", "judge-a", "--set", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "missing.jsonl: no such file" in err and Run.objects.count() == before[0]


@pytest.mark.django_db
def test_a_shipped_set_and_an_own_set_in_one_check_up_are_judged_side_by_side(judge, fake_judge, tmp_path):
    rows = thirty_pairs()[:4]
    random.Random(0).shuffle(rows)
    fake_judge.action = LabelOracle()
    (tmp_path / "ours.jsonl").write_text(jsonl(rows))
    run = checkup(judge, sets="pandalm", sample=3, own=[InputFile.from_path(tmp_path / "ours.jsonl")])
    assert run.report["set_order"] == ["pandalm", "ours.jsonl"]
    assert run.report["sets"]["pandalm"]["references"] and not run.report["sets"]["ours.jsonl"]["references"]
    assert run.report["sets"]["ours.jsonl"]["counts"]["pairs"] == 3  # the sample draws from every set
    assert run.testset.name == "checkup-own-pairs" and run.testset.case_count == 4 + len(load_pairs("pandalm", DATASETS))


@pytest.mark.django_db
def test_an_upload_on_the_judges_page_starts_a_check_up_of_the_teams_pairs_and_a_bad_one_is_a_form_error(
    client, reviewer, judge, monkeypatch
):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    from judgeapp.judging import taskqueue

    monkeypatch.setattr(taskqueue, "send", lambda *a: None)
    client.force_login(reviewer)
    assert 'enctype="multipart/form-data"' in client.get(reverse("judges")).content.decode()
    url = reverse("checkup:start", args=["judge-a"])
    bad = SimpleUploadedFile("ours.jsonl", (jsonl(thirty_pairs()[:2]) + '{"input": "q", "label": 2}\n').encode())
    html = client.post(url, {"own_set": bad}, follow=True).content.decode()
    assert "Check-up of judge-a not started: ours.jsonl line 3: &#x27;output_1&#x27; must be a text" in html
    assert not Run.objects.exists() and not StoredTestSet.objects.exists()

    good = SimpleUploadedFile("ours.jsonl", jsonl(thirty_pairs()[:5]).encode())
    response = client.post(url, {"own_set": good, "sample": "4"})
    run = Run.objects.get()
    assert response.status_code == 302 and run.config["options"]["sets"] == ["ours.jsonl"]
    assert run.config["options"]["datasets"]["ours.jsonl"]["own"] is True and len(run.config["options"]["case_ids"]) == 4


@pytest.mark.django_db
def test_the_run_page_names_the_own_set_by_file_and_hash_and_shows_its_tags_worst_first(
    client, lead, judge, fake_judge, tmp_path
):
    from django.urls import reverse

    fake_judge.action = LabelOracle(noise=0.3, seed=1)
    (tmp_path / "ours.jsonl").write_text(jsonl(thirty_pairs()))
    run = checkup(judge, own=[InputFile.from_path(tmp_path / "ours.jsonl")])
    client.force_login(lead)
    html = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    entry = run.report["sets"]["ours.jsonl"]
    assert 'id="set-ours.jsonl"' in html and entry["sha256"] in html and "the team&#x27;s own labelled pairs" in html
    table = html[html.index('id="slices-ours.jsonl"'):]
    assert [table.index(f'data-tag="{s["tag"]}"') for s in entry["slices"]] == sorted(
        table.index(f'data-tag="{s["tag"]}"') for s in entry["slices"])
    assert "<span class=\"badge\">published</span>" not in html
    judges = client.get(reverse("judges")).content.decode()
    cell = judges[judges.index('id="checkup-judge-a"'):]
    assert f'ours.jsonl <span class="mono" title="sha256 {entry["sha256"]}">{entry["sha256"][:12]}</span>: accuracy' in cell
