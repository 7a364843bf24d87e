"""Judges and systems from the judges file, the environment and the admin (the slot limiter: tests/judging/test_limiters.py)."""


import pytest

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.judging.endpoints import client_for
from judgeapp.judging.errors import InputError
from judgeapp.judging.judges import judge_get, judges_sync, system_get
from judgeapp.models import EndpointSource, Judge, System

GOOD = b'''
[judges.small-a]
model = "qwen2.5-7b-instruct"
base_url = "http://127.0.0.1:8000/v1"
api_key_env = "LOCAL_KEY"
max_concurrency = 3

[judges.small-b]
model = "llama3.1:8b"
structured_output = "json_object"

[systems.support-bot-v2]
model = "gpt-4o-mini"
family = "openai"
system_prompt = "You are a support assistant."
'''


@pytest.fixture
def judges_file(tmp_path, settings):
    path = tmp_path / "judges.toml"
    path.write_bytes(GOOD)
    settings.JUDGES_FILE = str(path)
    return path


@pytest.mark.django_db
def test_judges_file_loads_judges_and_systems(judges_file):
    assert set(judges_sync()) == {"small-a", "small-b", "support-bot-v2"}
    a = Judge.objects.get(name="small-a")
    assert (a.model, a.effective_family, a.api_key_env, a.max_concurrency) == ("qwen2.5-7b-instruct", "qwen", "LOCAL_KEY", 3)
    assert Judge.objects.get(name="small-b").effective_family == "meta"
    assert System.objects.get(name="support-bot-v2").system_prompt == "You are a support assistant."
    assert system_get(name="support-bot-v2").family == "openai"


@pytest.mark.django_db
def test_editing_the_file_updates_its_judges_but_not_admin_edits(judges_file):
    judges_sync()
    Judge.objects.filter(name="small-b").update(source=EndpointSource.ADMIN, model="edited-in-admin")
    judges_file.write_bytes(GOOD.replace(b"max_concurrency = 3", b"max_concurrency = 5").replace(b"llama3.1:8b", b"llama3.2:3b"))
    judges_sync()
    assert Judge.objects.get(name="small-a").max_concurrency == 5
    assert Judge.objects.get(name="small-b").model == "edited-in-admin"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "text, message",
    [
        (b"[judges.x]\nfamily = 'qwen'\n", "missing 'model'"),
        (b"[judges.x]\nmodel = 'm'\napi_key = 'sk-123'\n", "api_key_env"),
        (b"[judges.x]\nmodel = 'm'\nstructured_output = 'grammar'\n", "structured_output must be"),
        (b"[judges.x]\nmodel = 'm'\nmax_concurrency = 0\n", "max_concurrency"),
        (b"[judges.x]\nmodel = 'm'\ncolour = 'red'\n", "unknown key"),
        (b"[judge.x]\nmodel = 'm'\n", "unknown table"),
        (b"[judges.x\nmodel = 'm'\n", "not valid TOML"),
    ],
)
def test_a_bad_judges_file_is_one_clear_line(tmp_path, settings, text, message):
    path = tmp_path / "judges.toml"
    path.write_bytes(text)
    settings.JUDGES_FILE = str(path)
    with pytest.raises(InputError, match=message) as exc:
        judges_sync()
    assert "\n" not in str(exc.value)
    assert not Judge.objects.exists()


@pytest.mark.django_db
def test_default_judge_comes_from_the_environment(settings):
    settings.JUDGE_MODEL = "gpt-4o"
    settings.OPENAI_BASE_URL = "http://llm.internal/v1"
    judges_sync()
    judge = judge_get()
    assert (judge.name, judge.model, judge.effective_family, judge.base_url) == (
        "default", "gpt-4o", "openai", "http://llm.internal/v1",
    )


@pytest.mark.django_db
def test_unknown_judge_names_the_known_ones(judges_file):
    judges_sync()
    with pytest.raises(InputError, match="unknown judge 'nope' \\(known: small-a, small-b\\)"):
        judge_get(name="nope")


@pytest.mark.django_db
def test_no_judge_at_all_says_how_to_configure_one():
    with pytest.raises(InputError, match="JUDGE_MODEL"):
        judge_get()


def test_the_key_is_read_from_the_named_variable_and_never_stored(transactional_db, monkeypatch):
    monkeypatch.setenv("TEAM_KEY", "sk-secret-123")
    with FakeJudgeServer(DemoBrain()) as server:
        judge = Judge.objects.create(name="keyed", model="fake-judge", base_url=server.url, api_key_env="TEAM_KEY")
        client_for(judge).chat([{"role": "user", "content": "hello"}])
        assert "sk-secret-123" not in str(judge.config_snapshot())
        assert "sk-secret-123" not in str(server.chat_requests[0].headers)  # the log drops Authorization




@pytest.mark.django_db
def test_the_judges_file_names_the_default_judge(judges_file):
    with pytest.raises(
        InputError, match=r"no judge chosen: pass --judge NAME \(known: small-a, small-b\), or name one in .* as default",
    ):
        judges_sync()
        judge_get()
    judges_file.write_bytes(b'default = "small-b"\n' + GOOD)
    judges_sync()
    assert judge_get().name == "small-b"
    assert judge_get(name="small-a").name == "small-a"  # a name still wins
    # The file no longer names one: the default it set is gone.
    judges_file.write_bytes(GOOD)
    judges_sync()
    assert not Judge.objects.filter(is_default=True).exists()


@pytest.mark.django_db
def test_a_default_that_is_not_one_of_the_file_s_judges_is_refused(judges_file):
    judges_file.write_bytes(b'default = "nope"\n' + GOOD)
    with pytest.raises(
        InputError, match=r"default must name one of the file's \[judges\.\*\] \(known: small-a, small-b\), not 'nope'",
    ):
        judges_sync()
    assert not Judge.objects.exists()


@pytest.mark.django_db
def test_the_demo_s_judges_file_names_every_judge_the_docs_use(fake_judge):
    import re
    from pathlib import Path

    from judgeapp.demo import demo_docs_judges

    root = Path(__file__).resolve().parents[2]
    named = set()
    for doc in [root / "README.md", *(root / "docs").glob("*.md")]:
        text = doc.read_text(encoding="utf-8")
        named |= set(re.findall(r"--judge ([a-z][a-z0-9.-]*[a-z0-9])", text))
        for panel in re.findall(r"--judges ([a-z][a-z0-9,.-]+)", text):
            named |= set(panel.split(","))
    named -= {"gpt-3.5-turbo"}  # the PandaLM import's judge (its published verdicts), made by import-pandalm
    demo_docs_judges(fake_judge.url)
    assert named <= set(Judge.objects.values_list("name", flat=True)), named
    assert judge_get().name == "small-a"
    assert all(judge.scripted_demo and judge.base_url == fake_judge.url for judge in Judge.objects.all())


@pytest.mark.django_db
def test_a_team_s_judges_file_takes_over_a_judge_the_demo_made(judges_file, fake_judge):
    from judgeapp.demo import demo_docs_judges

    demo_docs_judges(fake_judge.url)
    assert Judge.objects.get(name="small-a").scripted_demo
    judges_sync()  # the team's file names small-a too
    small_a = Judge.objects.get(name="small-a")
    assert (small_a.model, small_a.source, small_a.scripted_demo) == ("qwen2.5-7b-instruct", EndpointSource.FILE, False)
    demo_docs_judges(fake_judge.url)  # the demo loaded again leaves it as the file made it
    assert Judge.objects.get(name="small-a").model == "qwen2.5-7b-instruct"
