"""A jury labelled with a system judges that system's outputs (issue #29, item 2), as pointwise does: a version
uploaded for it, an outputs file, or replies it generates; never the test set's own outputs, and a one-line
refusal when it has none. The report's `outputs_source` and the summary's `Outputs:` line say which."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from fakejudge import DemoBrain, Reply, When
from judgeapp.judging import content, runs
from judgeapp.judging.content import InputFile
from judgeapp.judging.outputs import output_set_save
from judgeapp.models import Output, Run
from tests import factories
from tests.factories import RUBRIC_ONE
from tests.pairwise.builders import run_evaluate

pytestmark = pytest.mark.usefixtures("transactional_db")

STORED_REPLY = "STORED-IN-THE-TEST-SET reply"
UPLOADED_REPLY = "UPLOADED-FOR-V2.1 reply: Settings > Password, then reset."
GENERATED_REPLY = "GENERATED-BY-THE-ENDPOINT reply"
JURORS = [("llama", "llama-3.1-8b-instruct", "meta"), ("mistral", "mistral-7b-instruct", "mistral"),
          ("gemma", "gemma-2-9b-it", "google")]


@pytest.fixture
def jurors(make_judge):
    return [make_judge(name, model=model, family=family) for name, model, family in JURORS]


@pytest.fixture
def inputs(tmp_path, make_system):
    """support-bot (an openai model: no juror shares it) and a test set whose own outputs say STORED-IN-THE-TEST-SET."""
    system = make_system("support-bot", model="gpt-4o-mini", family="openai")
    testset = tmp_path / "support.jsonl"
    testset.write_bytes(factories.testset_bytes(3, output=lambda i: STORED_REPLY))
    rubric = tmp_path / "rubric.toml"
    rubric.write_bytes(RUBRIC_ONE)
    return system, str(testset), str(rubric)


def outputs_bytes(text: str, n: int = 3) -> bytes:
    return "".join(json.dumps({"id": f"c{i:03d}", "output": f"{text} ({i})"}) + "\n" for i in range(n)).encode()


def upload_v21(system, testset_path: str):
    stored = content.testset_load(path=testset_path)
    given = InputFile(data=outputs_bytes(UPLOADED_REPLY), name="v21.jsonl")
    output_set, _ = output_set_save(system=system, version_label="v2.1", testset=stored, outputs=given, created_by="cli:tester")
    return output_set


def jury(capsys, testset, rubric, *extra):
    return run_evaluate(capsys, "jury", "--testset", testset, "--rubric", rubric, "--judges", "llama,mistral,gemma", *extra)


def judged_texts(fake_judge) -> str:
    return "\n".join(request.prompt for request in fake_judge.chat_requests)


def test_a_jury_labelled_with_a_system_without_outputs_of_its_own_refuses_in_one_line(jurors, inputs, fake_judge, capsys):
    _system, testset, rubric = inputs
    code, _out, err = jury(capsys, testset, rubric, "--system", "support-bot")
    assert code == 2
    assert err.strip() == (
        "error: support-bot has no outputs for this test set: upload them (--outputs, or manage.py outputs add), "
        "or have the system's endpoint generate them (--generate)"
    )
    assert not Run.objects.exists() and fake_judge.chat_requests == []
    code, _out, err = jury(capsys, testset, rubric, "--system", "support-bot", "--outputs-version", "v9")
    assert code == 2 and "support-bot has no outputs labelled 'v9' for this test set" in err and err.count("\n") == 1


def test_a_jury_of_a_system_version_judges_its_uploaded_outputs_never_the_test_sets(jurors, inputs, fake_judge, capsys):
    system, testset, rubric = inputs
    upload_v21(system, testset)
    argv = ["--system", "support-bot", "--outputs-version", "v2.1", "--report", f"{testset}.json"]
    code, out, err = jury(capsys, testset, rubric, *argv)
    assert code in (0, 1), err
    assert "Outputs: uploaded as support-bot v2.1 on " in out and "by cli:tester" in out
    sent = judged_texts(fake_judge)
    assert UPLOADED_REPLY in sent and STORED_REPLY not in sent
    assert len(fake_judge.chat_requests) == 9  # 3 cases x 3 jurors
    report = json.loads(open(f"{testset}.json", encoding="utf-8").read())
    source = report["outputs_source"]
    said = (source["source"], source["system"], source["version"], source["uploaded_by"])
    assert said == ("uploaded", "support-bot", "v2.1", "cli:tester")
    assert report["outputs"].startswith("uploaded as support-bot v2.1 on ")
    run = Run.objects.get()
    assert set(Output.objects.filter(run=run).values_list("source", flat=True)) == {Output.Source.FILE}
    assert not Output.objects.filter(run=run, text=STORED_REPLY).exists()


def test_without_a_label_the_systems_newest_upload_is_judged(jurors, inputs, fake_judge, capsys):
    system, testset, rubric = inputs
    upload_v21(system, testset)
    code, out, err = jury(capsys, testset, rubric, "--system", "support-bot", "--json")
    assert code in (0, 1), err
    assert json.loads(out)["outputs_source"]["version"] == "v2.1"
    assert STORED_REPLY not in judged_texts(fake_judge)


def test_an_outputs_file_or_generated_replies_are_judged_and_said(jurors, inputs, fake_judge, tmp_path, capsys):
    _system, testset, rubric = inputs
    given = tmp_path / "mine.jsonl"
    given.write_bytes(outputs_bytes("FROM-A-FILE reply"))
    code, out, err = jury(capsys, testset, rubric, "--system", "support-bot", "--outputs", str(given), "--json")
    assert code in (0, 1), err
    report = json.loads(out)
    assert report["outputs_source"] == {"source": "file", "file": "mine.jsonl", "system": "support-bot"}
    assert report["outputs"] == "from mine.jsonl" and report["versions"]["outputs"]
    assert STORED_REPLY not in judged_texts(fake_judge)

    fake_judge.chat_requests.clear()
    fake_judge.action = When(lambda r: r.model == "gpt-4o-mini", Reply(GENERATED_REPLY), DemoBrain())
    code, out, err = jury(capsys, testset, rubric, "--system", "support-bot", "--generate", "--json")
    assert code in (0, 1), err
    report = json.loads(out)
    assert report["outputs_source"]["source"] == "generated" and report["outputs"] == "generated by the system under test"
    judged = "\n".join(r.prompt for r in fake_judge.chat_requests if r.model != "gpt-4o-mini")
    assert GENERATED_REPLY in judged and STORED_REPLY not in judged


def test_a_jury_without_a_system_judges_the_test_sets_outputs_and_says_so(jurors, inputs, fake_judge, capsys):
    _system, testset, rubric = inputs
    code, out, err = jury(capsys, testset, rubric, "--json")
    assert code in (0, 1), err
    report = json.loads(out)
    assert report["outputs_source"] == {"source": "testset", "testset": "support"}
    assert report["outputs"] == "from the test set" and STORED_REPLY in judged_texts(fake_judge)


def test_the_form_judges_the_picked_system_version_and_refuses_a_system_without_outputs(
    client, reviewer, jurors, inputs, fake_judge
):
    system, testset, rubric = inputs
    client.force_login(reviewer)

    def post(**extra):
        files = {"testset_file": SimpleUploadedFile("support.jsonl", open(testset, "rb").read()),
                 "rubric_file": SimpleUploadedFile("rubric.toml", RUBRIC_ONE)}
        return client.post(reverse("jury:new"), {**files, "judges": [j.pk for j in jurors], "system": system.pk, **extra})

    refused = post()
    assert refused.status_code == 400 and "support-bot has no outputs for this test set" in refused.content.decode()
    assert not Run.objects.exists()
    output_set = upload_v21(system, testset)
    started = post(output_set=output_set.pk, run_id="jury-v21")
    assert started.status_code == 302, started.content.decode()[:2000]
    queued = client.get(reverse("run_detail", args=["jury-v21"])).content.decode()
    assert "Outputs: uploaded as support-bot v2.1 on " in queued  # said before the run is judged
    run = runs.run_execute_inline(run=Run.objects.get(run_id="jury-v21"))
    assert run.report["outputs_source"]["version"] == "v2.1"
    assert STORED_REPLY not in judged_texts(fake_judge)
    page = client.get(reverse("run_detail", args=["jury-v21"])).content.decode()
    assert "uploaded as support-bot v2.1" in page
