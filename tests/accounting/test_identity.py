"""Issue 14: a judge is its (base URL, model), whatever family it declares. A jury of one model under
three names is refused, so is a judge that is the system under test; the family the model name says is
shown beside the declared one, and a mismatch is a warning."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from judgeapp.models import Judge, Run, System
from tests import factories
from tests.factories import RUBRIC_ONE
from tests.pairwise.builders import run_evaluate, write_files

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def one_model_three_families(make_judge):
    # The case: one server, one model, three declared families.
    return [make_judge(name, model="same-model-7b", family=family) for name, family in
            (("as-meta", "meta"), ("as-mistral", "mistral"), ("as-google", "google"))]


def test_a_jury_of_one_model_under_three_families_is_refused_in_one_line(one_model_three_families, tmp_path, capsys):
    files = write_files(tmp_path, n=2, a={}, b={}, testset_outputs=lambda i: factories.GOOD_REPLY)
    code, out, err = run_evaluate(capsys, "jury", "--testset", files["testset"], "--rubric", files["rubric"],
                                  "--judges", "as-meta,as-mistral,as-google")
    assert code == 2 and err.count("\n") == 1, err
    assert "as-meta and as-mistral and as-google are one model (model same-model-7b at" in err
    assert "whatever families they declare" in err
    assert Run.objects.count() == 0


def test_the_same_model_at_another_server_is_another_judge(make_judge, fake_judge, tmp_path, capsys):
    from fakejudge import FakeJudgeServer

    with FakeJudgeServer() as other, FakeJudgeServer() as third:
        for name, family, server in (("here", "meta", fake_judge), ("there", "mistral", other), ("yonder", "google", third)):
            make_judge(name, model="same-model-7b", family=family, server=server)
        files = write_files(tmp_path, n=2, a={}, b={}, testset_outputs=lambda i: factories.GOOD_REPLY)
        code, out, err = run_evaluate(capsys, "jury", "--testset", files["testset"], "--rubric", files["rubric"],
                                      "--judges", "here,there,yonder", "--concurrency", "1")
    assert code == 0, err


def test_a_jury_of_one_model_is_a_form_error_in_the_browser(client, reviewer, one_model_three_families):
    client.force_login(reviewer)
    response = client.post(reverse("jury:new"), {
        "testset_file": SimpleUploadedFile("support.jsonl", factories.testset_bytes(3)),
        "rubric_file": SimpleUploadedFile("rubric.toml", RUBRIC_ONE),
        "judges": [j.pk for j in one_model_three_families],
    }, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200 and "are one model (model same-model-7b at" in html
    assert Run.objects.count() == 0


def test_a_juror_that_is_the_system_under_test_is_refused(make_judge, make_system, tmp_path, capsys):
    make_judge("j-llama", model="llama-3.1-8b", family="meta")
    make_judge("j-mistral", model="mistral-7b", family="mistral")
    make_judge("j-gpt", model="gpt-4o-mini", family="not-openai")
    make_system("support-bot", model="gpt-4o-mini", family="openai")
    files = write_files(tmp_path, n=2, a={}, b={}, testset_outputs=lambda i: factories.GOOD_REPLY)
    code, out, err = run_evaluate(capsys, "jury", "--testset", files["testset"], "--rubric", files["rubric"],
                                  "--judges", "j-llama,j-mistral,j-gpt", "--system", "support-bot")
    assert code == 2 and err.count("\n") == 1 and "j-gpt is the system under test itself (model gpt-4o-mini at" in err, err


def test_a_pointwise_judge_that_is_the_system_under_test_is_refused(make_judge, make_system, tmp_path, capsys):
    make_judge("self-judge", model="gpt-4o-mini", family="other")
    make_system("support-bot", model="gpt-4o-mini", family="openai")
    files = write_files(tmp_path, n=2, a={}, b={}, testset_outputs=lambda i: factories.GOOD_REPLY)
    code, out, err = run_evaluate(capsys, "pointwise", "--testset", files["testset"], "--rubric", files["rubric"],
                                  "--judge", "self-judge", "--system", "support-bot")
    assert code == 2 and err.count("\n") == 1 and "judge self-judge is the system under test support-bot itself" in err, err


def test_the_judges_page_shows_the_family_from_the_model_name_and_warns_on_a_mismatch(client, reviewer, make_judge):
    make_judge("honest", model="qwen2.5-7b-instruct", family="qwen")
    make_judge("claims-meta", model="qwen2.5-7b-instruct-q4", family="meta")
    client.force_login(reviewer)
    html = client.get(reverse("judges")).content.decode()
    honest = html.split('data-family="honest"', 1)[1].split("</td>", 1)[0]
    claims = html.split('data-family="claims-meta"', 1)[1].split("</td>", 1)[0]
    assert "model name says qwen" in honest and "family mismatch" not in honest
    assert "meta" in claims and "model name says qwen" in claims and "family mismatch" in claims


def test_a_family_mismatch_is_a_warning_in_the_report(make_judge, tmp_path, capsys):
    import json

    make_judge("claims-meta", model="qwen2.5-7b-instruct", family="meta")
    files = write_files(tmp_path, n=2, a={}, b={}, testset_outputs=lambda i: factories.GOOD_REPLY)
    report = tmp_path / "r.json"
    code, out, err = run_evaluate(capsys, "pointwise", "--testset", files["testset"], "--rubric", files["rubric"],
                                  "--judge", "claims-meta", "--report", str(report), "--concurrency", "1")
    warnings = json.loads(report.read_text())["warnings"]
    assert any(
        "claims-meta: declared family 'meta', but its model name 'qwen2.5-7b-instruct' looks like 'qwen'" in w for w in warnings
    )


# --- Issue 28: one model under two spellings of its server and its name is still one model -------------------


@pytest.fixture
def one_model_two_spellings(make_judge, fake_judge):
    """SmolLM2 at 127.0.0.1 and smollm2 at localhost (with a trailing slash): the same server, the same model."""
    local = fake_judge.url.replace("127.0.0.1", "localhost") + "/"
    assert "localhost" in local
    jurors = [make_judge("smol-ip", model="SmolLM2", family="huggingface"),
              make_judge("smol-name", model="smollm2", family="smol-family"),
              make_judge("other-juror", model="llama-3.1-8b", family="meta")]
    Judge.objects.filter(name="smol-name").update(base_url=local)
    return [Judge.objects.get(pk=j.pk) for j in jurors]


def test_a_jury_of_one_model_under_two_spellings_is_refused_on_the_cli(one_model_two_spellings, tmp_path, capsys):
    files = write_files(tmp_path, n=2, a={}, b={}, testset_outputs=lambda i: factories.GOOD_REPLY)
    code, _, err = run_evaluate(capsys, "jury", "--testset", files["testset"], "--rubric", files["rubric"],
                                  "--judges", "smol-ip,smol-name,other-juror")
    assert code == 2 and err.count("\n") == 1, err
    assert "smol-ip and smol-name are one model (model smollm2 at http://localhost:" in err and "Traceback" not in err
    assert Run.objects.count() == 0


def test_a_jury_of_one_model_under_two_spellings_is_a_form_error(client, reviewer, one_model_two_spellings):
    client.force_login(reviewer)
    response = client.post(reverse("jury:new"), {
        "testset_file": SimpleUploadedFile("support.jsonl", factories.testset_bytes(3)),
        "rubric_file": SimpleUploadedFile("rubric.toml", RUBRIC_ONE),
        "judges": [j.pk for j in one_model_two_spellings],
    }, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200 and "smol-ip and smol-name are one model (model smollm2 at" in html
    assert Run.objects.count() == 0


def test_a_jury_of_one_model_under_two_spellings_is_a_400_from_the_api(api_as, reviewer, one_model_two_spellings):
    api = api_as(reviewer)
    response = api.post("/api/v1/runs/jury", {
        "testset": SimpleUploadedFile("support.jsonl", factories.testset_bytes(3)),
        "rubric": SimpleUploadedFile("rubric.toml", RUBRIC_ONE),
        "judges": "smol-ip,smol-name,other-juror",
    })
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert "smol-ip and smol-name are one model (model smollm2 at" in detail and "\n" not in detail
    assert Run.objects.count() == 0


def test_a_judge_that_is_the_system_under_another_spelling_is_refused(make_judge, make_system, fake_judge, tmp_path, capsys):
    make_judge("self-judge", model="GPT-4o-Mini ", family="other")
    make_system("support-bot", model="gpt-4o-mini", family="openai")
    System.objects.filter(name="support-bot").update(base_url=fake_judge.url.replace("127.0.0.1", "[::1]") + "//")
    files = write_files(tmp_path, n=2, a={}, b={}, testset_outputs=lambda i: factories.GOOD_REPLY)
    code, _, err = run_evaluate(capsys, "pointwise", "--testset", files["testset"], "--rubric", files["rubric"],
                                  "--judge", "self-judge", "--system", "support-bot")
    assert code == 2 and err.count("\n") == 1 and "judge self-judge is the system under test support-bot itself" in err, err


def test_family_warnings_name_one_model_declared_as_two_families():
    from judgeapp.judging.judges import family_warnings

    a = System(name="bot-a", model="Mistral-7B", family="mistral", base_url="http://127.0.0.1:9000/v1")
    b = System(name="bot-b", model="mistral-7b", family="acme", base_url="http://localhost:9000/v1/")
    c = System(name="bot-c", model="mistral-7b", family="acme", base_url="http://localhost:9001/v1")
    warnings = family_warnings([a, b, c])
    assert (
        "bot-a and bot-b are one model (model mistral-7b at http://localhost:9000/v1) declared as families 'acme' and "
        "'mistral'" in warnings
    )
    assert not any("bot-c and" in w or "and bot-c" in w for w in warnings)
