"""Pairwise per side (issue #29, item 2): each version may be a system version's stored outputs; the judge sees
those replies, never generated ones, and the report says where each side came from."""

import json

import pytest

from fakejudge import DemoBrain
from judgeapp.judging.audit import cli_actor
from judgeapp.judging.content import InputFile
from judgeapp.judging.content import testset_load as stored_from_file
from judgeapp.judging.outputs import output_set_save
from judgeapp.models import Judgment, Purpose
from tests.factories import GOOD_REPLY
from tests.pairwise.builders import run_evaluate, write_files

pytestmark = pytest.mark.usefixtures("transactional_db")


def test_both_sides_from_stored_system_versions(judge, make_system, fake_judge, tmp_path, capsys):
    fake_judge.action = DemoBrain(quality=lambda reply, message="": 1.0 if GOOD_REPLY in reply else 0.0)
    system = make_system("support-bot")
    files = write_files(tmp_path, n=4)
    testset = stored_from_file(path=files["testset"])
    for label, side in (("v1", "a"), ("v2", "b")):
        data = open(files[side], "rb").read()
        output_set_save(
            system=system, version_label=label, testset=testset, outputs=InputFile(data, f"{label}.jsonl"),
            created_by=cli_actor(),
        )
    code, out, err = run_evaluate(
        capsys, "pairwise", "--testset", files["testset"], "--system-a", "support-bot", "--outputs-version-a", "v1",
        "--system-b", "support-bot", "--outputs-version-b", "v2", "--rubric", files["rubric"], "--judge", "judge-a", "--json",
    )
    assert code in (0, 1), err
    report = json.loads(out)
    sources = report["version_sources"]
    assert (sources["A"]["source"], sources["A"]["version"], sources["B"]["version"]) == ("uploaded", "v1", "v2")
    assert not Judgment.objects.filter(purpose=Purpose.GENERATE).exists()  # nothing generated
    assert report["wins_a"] == 4  # A's stored replies are the good ones (good_and_bad)

    missing = run_evaluate(
        capsys, "pairwise", "--testset", files["testset"], "--system-a", "support-bot", "--outputs-version-a", "v9",
        "--b", files["b"], "--rubric", files["rubric"], "--judge", "judge-a",
    )
    assert missing[0] == 2 and "support-bot has no outputs labelled 'v9' for this test set (version A)" in missing[2]
