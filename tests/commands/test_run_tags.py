"""`--tag NAME` on the commands that start an evaluation: the run carries the tags; a bad one is one line
and exit 2, with nothing stored."""

import io

import pytest
from django.core.management import call_command

from judgeapp.judging.errors import InputError
from judgeapp.models import Run, RunTag
from tests import factories
from tests.factories import RUBRIC_ONE

pytestmark = pytest.mark.django_db


@pytest.fixture
def inputs(tmp_path):
    (tmp_path / "support.jsonl").write_bytes(factories.testset_bytes(2))
    (tmp_path / "rubric.toml").write_bytes(RUBRIC_ONE)
    return ["--testset", str(tmp_path / "support.jsonl"), "--rubric", str(tmp_path / "rubric.toml")]


def test_a_pointwise_run_started_from_the_command_line_carries_its_tags(judge, inputs):
    call_command("evaluate", "pointwise", *inputs, "--judge", judge.name, "--concurrency", "1", "--threshold", "1",
                 "--run-id", "r-tagged", "--tag", "nightly", "--tag", "RC-2", stdout=io.StringIO(), stderr=io.StringIO())
    assert sorted(RunTag.objects.filter(run__run_id="r-tagged").values_list("name", flat=True)) == ["nightly", "rc-2"]
    assert RunTag.objects.get(name="nightly").created_by is None  # a command tagged it


def test_a_bad_tag_is_refused_before_anything_is_stored(judge, inputs):
    with pytest.raises(InputError, match="tag 'two words' is not allowed"):
        call_command("evaluate", "pointwise", *inputs, "--judge", judge.name, "--tag", "two words",
                     stdout=io.StringIO(), stderr=io.StringIO())
    assert not Run.objects.exists() and not RunTag.objects.exists()
