"""Who may see what, for every view: every URL name of the resolver x every role, against an explicit table.

The cases are generated from the URL resolver, so a new view without an entry in EXPECTED fails
(`test_every_url_name_has_an_entry`, and its own cases). POST-only views are checked with GET (405 once
logged in) and with POST (the role check). The objects the URLs name are real (a finished run of every
kind, a ranklist, a calibration sample with the annotator's own assignments…), built once for the module
inside a transaction that is rolled back at its end; each case's own writes are rolled back after it.

The annotators' blindness: a unique marker is planted in the judge's verdict, score, reasoning and reply
(and the sample's stratum, which is that verdict),
in the judge's and the system's names, models and versions, and in the run's title; no page an annotator
can open (each URL name the table gives them, and every item of their queue) may show one.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from html import escape
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.db import transaction
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from fakejudge import DemoBrain, FakeJudgeServer

ROLES = ("anonymous", "no_role", "annotator", "reviewer", "lead")
MARKER = f"mk{uuid.uuid4().hex[:10]}"  # unique to this session: found only where it was planted
HTMX = {"HX-Request": "true"}


def statuses(anonymous, no_role, annotator, reviewer, lead) -> dict[str, int]:
    return dict(zip(ROLES, (anonymous, no_role, annotator, reviewer, lead)))


# Reports, run pages and forms: reviewers and leads (CONTRACT §5); login first (302 to /login/).
READERS = statuses(302, 403, 403, 200, 200)
# The annotator's blind queue: annotators only.
ANNOTATORS = statuses(302, 403, 200, 403, 403)
# A POST-only view asked with GET: 405 once logged in (login comes first).
POST_ONLY = statuses(302, 405, 405, 405, 405)
READERS_POST = statuses(302, 403, 403, 302, 302)
LEADS_POST = statuses(302, 403, 403, 403, 302)
ANNOTATORS_POST = statuses(302, 403, 302, 403, 403)
EVERYONE = statuses(200, 200, 200, 200, 200)


@dataclass(frozen=True)
class Expected:
    get: dict[str, int]
    post: dict[str, int] | None = None  # POST-only views: what a POST answers, by role


EXPECTED: dict[str, Expected] = {
    "login": Expected(EVERYONE),
    # The help page (the words the pages use): anyone logged in.
    "glossary": Expected(statuses(302, 200, 200, 200, 200)),
    # Anyone logged in sees their own API tokens; only a token's owner can revoke it (404 for the others).
    "api:profile": Expected(statuses(302, 200, 200, 200, 200)),
    "api:token_revoke": Expected(POST_ONLY, statuses(302, 404, 404, 302, 404)),
    "api:docs": Expected(READERS),
    "logout": Expected(statuses(302, 405, 405, 405, 405)),
    # The dashboard; an annotator's home is their queue, a user without a role is told so (403).
    "home": Expected(statuses(302, 403, 302, 200, 200)),
    "runs": Expected(READERS),
    "run_detail": Expected(READERS),
    "run_progress": Expected(READERS),
    "run_cancel": Expected(POST_ONLY, READERS_POST),
    # Tags on a run (light: who tagged is kept on the tag): reviewers and leads, as the run's page.
    "run_tag_add": Expected(POST_ONLY, READERS_POST),
    "run_tag_remove": Expected(POST_ONLY, READERS_POST),
    # The judgment page shows the judge's reasoning and score: never an annotator's.
    "judgment_detail": Expected(READERS),
    "judges": Expected(READERS),
    # Loading the judges file writes: a POST, reviewers and leads.
    "judges_reload": Expected(POST_ONLY, READERS_POST),
    # A check-up calls the judge: reviewers and leads start one.
    "checkup:start": Expected(POST_ONLY, READERS_POST),
    "calibration:overview": Expected(READERS),
    "calibration:sample_new": Expected(READERS),
    "calibration:sample_detail": Expected(READERS),
    "calibration:level_set": Expected(POST_ONLY, LEADS_POST),
    # The lead's calibration policy; a candidate judge configuration: reviewers draw and run one, leads adopt.
    "calibration:policy_set": Expected(POST_ONLY, LEADS_POST),
    "calibration:candidates": Expected(READERS),
    "calibration:candidate_new": Expected(READERS),
    "calibration:candidate_adopt": Expected(POST_ONLY, LEADS_POST),
    # Leads invite annotators, fill a sample's queue and write its instructions; an empty form is refused (400)
    # once the role check has let the lead through.
    "calibration:annotator_invite": Expected(POST_ONLY, statuses(302, 403, 403, 403, 400)),
    "calibration:annotator_assign": Expected(POST_ONLY, statuses(302, 403, 403, 403, 400)),
    "calibration:sample_instructions": Expected(statuses(302, 403, 403, 403, 200)),
    # A judge's scorecard (the judge's reasoning, runs and gates): readers; without a version it redirects.
    "judge_scorecard": Expected(statuses(302, 403, 403, 302, 302)),
    "judge_scorecard_version": Expected(READERS),
    "calibration:lock_unlock": Expected(POST_ONLY, LEADS_POST),
    # Resolving the items annotators disagree on, and the margin that picks them: leads only.
    "calibration:adjudication": Expected(statuses(302, 403, 403, 403, 200)),
    "calibration:adjudication_resolve": Expected(POST_ONLY, LEADS_POST),
    "calibration:adjudication_margin": Expected(POST_ONLY, LEADS_POST),
    "calibration:queue": Expected(ANNOTATORS),
    "calibration:queue_item": Expected(ANNOTATORS),
    "calibration:queue_undo": Expected(POST_ONLY, ANNOTATORS_POST),
    # An empty label is refused (400) once the role check has let the annotator through.
    "calibration:queue_label": Expected(POST_ONLY, statuses(302, 403, 400, 403, 403)),
    "calibration:queue_skip": Expected(POST_ONLY, ANNOTATORS_POST),
    # An empty comment is refused (400) once the role check has let the annotator through.
    "calibration:queue_note": Expected(POST_ONLY, statuses(302, 403, 400, 403, 403)),
    "ranker:index": Expected(READERS),
    "ranker:rank_new": Expected(READERS),
    "ranker:compare_new": Expected(READERS),
    "ranker:state": Expected(READERS),
    "ranker:insert": Expected(READERS),
    "ranker:resume": Expected(POST_ONLY, READERS_POST),
    "ranker:artifact": Expected(READERS),
    "pointwise:new": Expected(READERS),
    # The rubric helper drafts a rubric into the form (a GET, it writes nothing).
    "pointwise:rubric_skeleton": Expected(READERS),
    # The form's Estimate button: a POST that stores nothing and asks no judge (an empty one is the form's own
    # errors in the estimate's region, 200).
    "pointwise:estimate": Expected(POST_ONLY, statuses(302, 403, 403, 200, 200)),
    # The prompt library: reviewers and leads read and add prompts; annotators never see one (a prompt tells
    # how the judging is set up).
    "prompts": Expected(READERS),
    "prompt_new": Expected(READERS),
    "prompt_builtin": Expected(READERS),
    "prompt_detail": Expected(READERS),
    # Datasets (test sets, rubrics, a system version's outputs): reviewers and leads; never annotators, since
    # outputs name the systems. An empty POST is a form error (400).
    "datasets:index": Expected(READERS),
    "datasets:testset": Expected(READERS),
    "datasets:testset_download": Expected(READERS),
    "datasets:testset_preview": Expected(POST_ONLY, statuses(302, 403, 403, 400, 400)),
    "datasets:testset_save": Expected(POST_ONLY, statuses(302, 403, 403, 400, 400)),
    "datasets:outputs_add": Expected(POST_ONLY, statuses(302, 403, 403, 400, 400)),
    "datasets:outputs_preview": Expected(POST_ONLY, statuses(302, 403, 403, 400, 400)),
    "datasets:rubric": Expected(READERS),
    "datasets:rubric_download": Expected(READERS),
    "datasets:cases_add": Expected(POST_ONLY, statuses(302, 403, 403, 400, 400)),
    "datasets:rubric_preview": Expected(POST_ONLY, statuses(302, 403, 403, 400, 400)),
    "datasets:rubric_save": Expected(POST_ONLY, statuses(302, 403, 403, 400, 400)),
    "datasets:outputs": Expected(READERS),
    "datasets:outputs_download": Expected(READERS),
    "datasets:artifact_set": Expected(READERS),
    "datasets:artifact_set_download": Expected(READERS),
    "pointwise:judgments": Expected(READERS),
    "pointwise:export": Expected(READERS),
    "releases:releases": Expected(READERS),
    "releases:compare": Expected(READERS),
    # The lead's release policy: an empty form is a form error (400).
    "releases:policy": Expected(POST_ONLY, statuses(302, 403, 403, 403, 400)),
    "releases:gate": Expected(READERS),
    # An empty decision or release form is refused (400) once the role check has let the lead through.
    "releases:decide": Expected(POST_ONLY, statuses(302, 403, 403, 403, 400)),
    "releases:release": Expected(POST_ONLY, statuses(302, 403, 403, 403, 400)),
    "pairwise:new": Expected(READERS),
    # The forms' Estimate buttons, as pointwise's: a POST that stores nothing and asks no judge.
    "pairwise:estimate": Expected(POST_ONLY, statuses(302, 403, 403, 200, 200)),
    "pairwise:case": Expected(READERS),
    "jury:new": Expected(READERS),
    "jury:estimate": Expected(POST_ONLY, statuses(302, 403, 403, 200, 200)),
    "jury:case": Expected(READERS),
    "agent:home": Expected(READERS),
    "agent:requirements": Expected(READERS),
    "agent:transcript": Expected(READERS),
    "agent:report": Expected(READERS),
    "blind:index": Expected(READERS),
    "blind:new": Expected(READERS),
    # Without htmx, the whole form with one more row (a redirect to it).
    "blind:upload_row": Expected(statuses(302, 403, 403, 302, 302)),
    "blind:leakage": Expected(READERS),
    "blind:reveal": Expected(POST_ONLY, READERS_POST),
    "blind:comparison_json": Expected(READERS),
    # Webhooks are a setting: leads only (the page, its test message, switching one off or on, deleting one).
    "webhooks:index": Expected(statuses(302, 403, 403, 403, 200)),
    "webhooks:test": Expected(POST_ONLY, LEADS_POST),
    "webhooks:active": Expected(POST_ONLY, LEADS_POST),
    "webhooks:delete": Expected(POST_ONLY, LEADS_POST),
}
# Django's admin is for staff, and none of these users is: every page sends to its login, and its login to
# the app's own login page (throttled: judgeapp/throttle.py).
ADMIN_EXPECTED: dict = {}
ADMIN_DEFAULT = statuses(302, 302, 302, 302, 302)


def url_names() -> list[tuple[str, object]]:
    """(namespaced name, pattern) of every named URL of the project."""
    found = []

    def walk(patterns, namespace):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = ":".join(p for p in (namespace, pattern.namespace) if p) if pattern.namespace else namespace
                walk(pattern.url_patterns, inner)
            elif isinstance(pattern, URLPattern) and pattern.name:
                found.append((f"{namespace}:{pattern.name}" if namespace else pattern.name, pattern))

    walk(get_resolver().url_patterns, "")
    return found


# The JSON API under /api/v1/ answers tokens, not sessions: its roles are tests/api/test_roles.py's.
APP_NAMES = sorted({name for name, _ in url_names() if not name.startswith(("admin:", "api:v1:"))})
ADMIN_NAMES = sorted({name for name, _ in url_names() if name.startswith("admin:")})


# --- The world the URLs name -----------------------------------------------------------------------------


def _user(username: str, *roles: str) -> User:
    user = User.objects.create_user(username=username, password="pw-for-tests-1")
    for role in roles:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def _build(server, tmp: Path) -> dict:
    from calibration.models import Assignment, JudgeLock, SampleItem
    from calibration.services.samples import sample_draw
    from judgeapp.blind.services import blind_run_create, version_from_directory
    from judgeapp.judging import runs
    from judgeapp.models import Executor, Judge, Judgment, Ranklist, Run, System
    from judgeapp.ranker.services.inputs import candidate_from_bytes
    from judgeapp.ranker.services.ranklists import rank_run_create
    from tests import factories
    from tests.agent.helpers import agent_run, make_workspace
    from tests.blind.helpers import EXPECTATIONS, MIDDLING, STRONG, TASK, write_version
    from tests.pairwise.builders import jury_run, pairwise_run

    # (Their own names appear on their pages: no marker in them.)
    users = {"no_role": _user("sec-norole"), "annotator": _user("sec-ann", "annotator"),
             "reviewer": _user("sec-rev", "reviewer"), "lead": _user("sec-lead", "lead")}
    judge = Judge.objects.create(name=f"judge-{MARKER}", model=f"judge-model-{MARKER}", family="scripted",
                                 base_url=server.url, timeout_seconds=5.0)
    jurors = [Judge.objects.create(name=f"juror{i}-{MARKER}", model=f"juror-model-{i}", family=family, base_url=server.url)
              for i, family in enumerate(("meta", "mistral", "google"))]
    system = System.objects.create(name=f"system-{MARKER}", model=f"system-model-{MARKER}", family="openai", base_url=server.url)

    def finished(run):
        runs.run_execute_inline(run=run)
        run.refresh_from_db()
        assert run.is_finished, (run.run_id, run.status, run.error)
        return run

    pointwise = finished(factories.pointwise_run(judge=judge, n=4, run_id=f"pw-{MARKER}"))
    pairwise = finished(pairwise_run(judge=judge, n=2, run_id=f"ab-{MARKER}"))
    jury = finished(jury_run(judges=jurors, n=2, run_id=f"jury-{MARKER}"))
    agent = finished(agent_run(judge, make_workspace(tmp / "agent-ws"), run_id=f"agent-{MARKER}"))
    ranked = finished(rank_run_create(
        candidates=[candidate_from_bytes(f"# Report {i}\n\nBody {i}.\n".encode(), name=f"r{i}.md") for i in range(3)],
        goal="the clearest report", judge=judge, set_name="reports", executor=Executor.INLINE, run_id=f"rank-{MARKER}",
    ))
    versions = [version_from_directory(label=label, directory=str(write_version(tmp / "blind", name, [text, text])))
                for label, name, text in (("A", "first", STRONG), ("B", "second", MIDDLING))]
    blind = blind_run_create(versions=versions, eval_prompt=TASK, expectations=EXPECTATIONS, judge=judge,
                                 executor=Executor.INLINE, run_id=f"blind-{MARKER}")
    finished(blind.run)
    leaky_dir = write_version(tmp / "blind", "leaky", ["# Runbook\nUser: go\nAssistant: ok\n"])
    leaked = blind_run_create(versions=[version_from_directory(label="A", directory=str(leaky_dir)),
                                            version_from_directory(label="B", directory=str(tmp / "blind" / "second"))],
                                  eval_prompt=TASK, expectations=EXPECTATIONS, judge=judge, executor=Executor.INLINE)
    assert leaked.leaked and leaked.comparison is not None

    # The annotator's sample, from a run whose every identifying field carries the marker.
    calibration_run = finished(factories.pointwise_run(judge=judge, system=system, n=6, run_id=f"cal-{MARKER}"))
    Run.objects.filter(pk=calibration_run.pk).update(title=f"release candidate {MARKER}",
                                                     versions={**calibration_run.versions, "system": f"version-{MARKER}"})
    sample = sample_draw(run=calibration_run, size=4, seed=1, annotators=[users["annotator"]], created_by=users["lead"])
    for judgment in Judgment.objects.filter(run=calibration_run):
        judgment.parsed = {**(judgment.parsed or {}), "score": f"score-{MARKER}", "reasoning": f"reasoning-{MARKER}",
                           "verdict": f"verdict-{MARKER}"}
        judgment.raw_reply = f"raw-reply-{MARKER}"
        judgment.save(update_fields=["parsed", "raw_reply"])
    # The stratum is the judge's verdict the sample was drawn by.
    SampleItem.objects.filter(sample=sample).update(stratum=f"st-{MARKER}")
    lock = JudgeLock.objects.create(judge_name=judge.name, judge_version=judge.version, locked=True, reason="test")

    assignment = Assignment.objects.filter(annotator=users["annotator"]).order_by("pk").first()
    ranklist = Ranklist.objects.get(run=ranked)
    artifact = ranklist.artifact_set.artifacts.order_by("pk").first()
    from judgeapp.judging.content import InputFile
    from judgeapp.judging.outputs import output_set_save

    case_ids = pointwise.testset.cases.values_list("case_id", flat=True)
    replies = "".join(f'{{"id": "{case_id}", "output": "reply"}}\n' for case_id in case_ids)
    output_set, _ = output_set_save(system=system, version_label="v1", testset=pointwise.testset,
                                    outputs=InputFile(data=replies.encode(), name="outputs.jsonl"), created_by=users["lead"])
    from calibration.models import Candidate
    from judgeapp.api.services import api_token_create

    # A candidate configuration of the sample's judge (its run stands in: the page only needs the row).
    candidate = Candidate.objects.create(sample=sample, judge_name=judge.name, base_version=judge.version, run=jury,
                                         model=judge.model, structured_output="none", config_version="v-cand")

    token, _secret = api_token_create(user=users["reviewer"], name="ci", actor=users["reviewer"])
    from judgeapp.webhooks.services import webhook_create

    # The fake judge's server stands in for a receiver (it answers the POST 404: the test message fails at once).
    webhook, _secret = webhook_create(name="release-channel", url=f"{server.url}/hook", events=None, actor=users["lead"])
    from judgeapp.judging.library import prompt_template_save
    from judgeapp.judging.prompts import library_prompt

    custom_prompt = prompt_template_save(mode="pointwise", name="summaries", actor=users["lead"],
                                         text=library_prompt("pointwise").text.replace(
                                             "customer-support assistant", "summariser",
                                         ))
    kwargs = {
        "api:token_revoke": {"uuid": token.uuid},
        "checkup:start": {"judge_name": judge.name},
        "calibration:candidates": {"sample_uuid": sample.uuid},
        "calibration:candidate_new": {"sample_uuid": sample.uuid},
        "calibration:candidate_adopt": {"candidate_uuid": candidate.uuid},
        "judge_scorecard": {"name": judge.name},
        "judge_scorecard_version": {"name": judge.name, "version": judge.version},
        "run_detail": {"run_id": pointwise.run_id},
        "run_progress": {"run_id": pointwise.run_id},
        "run_cancel": {"run_id": pointwise.run_id},
        "run_tag_add": {"run_id": pointwise.run_id},
        "run_tag_remove": {"run_id": pointwise.run_id, "name": "nightly"},
        "judgment_detail": {"run_id": pointwise.run_id, "judgment_uuid": pointwise.judgments.order_by("pk").first().uuid},
        "calibration:sample_detail": {"sample_uuid": sample.uuid},
        "calibration:adjudication": {"sample_uuid": sample.uuid},
        "calibration:adjudication_resolve": {"sample_uuid": sample.uuid, "position": 0},
        "calibration:adjudication_margin": {"sample_uuid": sample.uuid},
        "calibration:lock_unlock": {"judge_name": lock.judge_name, "judge_version": lock.judge_version},
        "calibration:queue_item": {"assignment_uuid": assignment.uuid},
        "calibration:queue_label": {"assignment_uuid": assignment.uuid},
        "calibration:queue_skip": {"assignment_uuid": assignment.uuid},
        "calibration:queue_note": {"assignment_uuid": assignment.uuid},
        "calibration:sample_instructions": {"sample_uuid": sample.uuid},
        "ranker:state": {"ranklist_uuid": ranklist.uuid},
        "ranker:insert": {"ranklist_uuid": ranklist.uuid},
        "ranker:resume": {"ranklist_uuid": ranklist.uuid},
        "ranker:artifact": {"run_id": ranked.run_id, "artifact_pk": artifact.pk},
        "pointwise:judgments": {"run_id": pointwise.run_id},
        "datasets:testset": {"uuid": pointwise.testset.uuid},
        "datasets:cases_add": {"run_id": pointwise.run_id},
        "datasets:testset_download": {"uuid": pointwise.testset.uuid},
        "datasets:rubric": {"uuid": pointwise.rubric.uuid},
        "datasets:rubric_download": {"uuid": pointwise.rubric.uuid},
        "datasets:outputs": {"uuid": output_set.uuid},
        "datasets:outputs_download": {"uuid": output_set.uuid},
        "datasets:artifact_set": {"uuid": artifact.artifact_set.uuid},
        "datasets:artifact_set_download": {"uuid": artifact.artifact_set.uuid},
        "pointwise:export": {"run_id": pointwise.run_id, "fmt": "json"},
        "releases:gate": {"run_id": pointwise.run_id},
        "releases:decide": {"run_id": pointwise.run_id},
        "releases:release": {"run_id": pointwise.run_id},
        "pairwise:case": {"run_id": pairwise.run_id, "case_id": "c000"},
        "jury:case": {"run_id": jury.run_id, "case_id": "c000"},
        "agent:requirements": {"run_id": agent.run_id},
        "agent:transcript": {"run_id": agent.run_id, "judgment_uuid": agent.judgments.order_by("pk").first().uuid},
        "agent:report": {"run_id": agent.run_id},
        "blind:leakage": {"uuid": leaked.comparison.uuid},
        "blind:reveal": {"run_id": blind.run.run_id},
        "blind:comparison_json": {"run_id": blind.run.run_id},
        "webhooks:test": {"uuid": webhook.uuid},
        "webhooks:active": {"uuid": webhook.uuid},
        "webhooks:delete": {"uuid": webhook.uuid},
        "prompt_builtin": {"mode": "pointwise"},
        "prompt_detail": {"prompt_uuid": custom_prompt.uuid},
    }
    return {"users": users, "kwargs": kwargs, "calibration_run": calibration_run, "judge": judge, "system": system}


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker, tmp_path_factory):
    """Built once, inside a transaction rolled back when the module ends (each test nests in it)."""
    tmp = tmp_path_factory.mktemp("roles")
    with django_db_blocker.unblock(), FakeJudgeServer(DemoBrain()) as server, transaction.atomic():
        with override_settings(AGENT_SANDBOX_ENABLED=False):
            built = _build(server, tmp)
        yield built
        transaction.set_rollback(True)


def client_as(world, role: str) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(world["users"][role])
    return client


def url_of(world, name: str) -> str:
    return reverse(name, kwargs=world["kwargs"].get(name, {}))


def test_every_url_name_has_an_entry():
    assert sorted(set(APP_NAMES) - set(EXPECTED)) == [], "a view without an entry in EXPECTED: say who may open it"
    assert sorted(set(EXPECTED) - set(APP_NAMES)) == [], "an entry for a URL name that no longer exists"


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", APP_NAMES)
def test_role_gets_the_expected_status(world, name, role):
    assert name in EXPECTED, f"{name} has no entry in EXPECTED: say who may open it"
    expected = EXPECTED[name]
    client = client_as(world, role)
    url = url_of(world, name)
    response = client.get(url)
    assert response.status_code == expected.get[role], f"GET {url} as {role}: {response.status_code}"
    if expected.get[role] == 302 and role == "anonymous":
        assert response["Location"].startswith("/login/")
    if expected.post is not None:
        response = client.post(url, {})
        assert response.status_code == expected.post[role], f"POST {url} as {role}: {response.status_code}"
        if role == "anonymous":
            assert response["Location"].startswith("/login/")


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_admin_is_for_staff_only(world, role):
    client = client_as(world, role)
    wrong = {}
    for name, pattern in url_names():
        if not name.startswith("admin:"):
            continue
        kwargs = {key: ("auth" if key == "app_label" else "1") for key in pattern.pattern.regex.groupindex}
        response = client.get(reverse(name, kwargs=kwargs))
        expected = ADMIN_EXPECTED.get(name, ADMIN_DEFAULT)[role]
        if response.status_code != expected:
            wrong[name] = response.status_code
    assert wrong == {}


def forbidden(world) -> list[str]:
    """What would tell an annotator which system, version, judge or configuration produced an item."""
    run = world["calibration_run"]
    run.refresh_from_db()
    judge, system = world["judge"], world["system"]
    names = [MARKER, judge.name, judge.model, judge.version, system.name, system.model, run.run_id, run.title]
    names += [v for v in run.versions.values() if v and len(str(v)) >= 8]
    return [str(n) for n in names if n]


def assert_blind(world, html: str, where: str) -> None:
    leaked = [n for n in forbidden(world) if n.lower() in html.lower() or escape(n).lower() in html.lower()]
    assert not leaked, f"{where} shows an annotator {leaked}"


@pytest.mark.django_db
def test_no_page_an_annotator_can_open_shows_the_judge_system_or_version(world):
    from calibration.models import Assignment

    client = client_as(world, "annotator")
    opened = 0
    for name in APP_NAMES:
        if EXPECTED[name].get["annotator"] != 200:
            continue
        for headers in ({}, HTMX):
            response = client.get(url_of(world, name), headers=headers)
            assert response.status_code == 200, name
            assert_blind(world, response.content.decode(), name)
            opened += 1
    assert opened >= 4  # at least the queue and an item, with and without htmx
    # Every item of the queue, as the annotator goes through it (the next item comes back with each label).
    annotator = world["users"]["annotator"]
    page = client.get(reverse("calibration:queue"))
    labelled = 0
    for assignment in Assignment.objects.filter(annotator=annotator).order_by("pk"):
        item = client.get(reverse("calibration:queue_item", args=[assignment.uuid]))
        assert item.status_code == 200
        assert_blind(world, item.content.decode(), f"queue item {assignment.uuid}")
        answer = "1" if assignment.item.sample.label_kind == "score" else "pass"
        page = client.post(reverse("calibration:queue_label", args=[assignment.uuid]), {"answer": answer}, headers=HTMX)
        assert page.status_code == 200
        assert_blind(world, page.content.decode(), f"the page after labelling {assignment.uuid}")
        labelled += 1
    assert labelled == Assignment.objects.filter(annotator=annotator).count() >= 4
    undo = client.post(reverse("calibration:queue_undo"), headers=HTMX)
    assert_blind(world, undo.content.decode(), "undo")


@pytest.mark.django_db
def test_the_marker_is_planted_where_readers_see_it(world):
    """The blindness test above can fail: the same marker is on the pages a reviewer reads."""
    client = client_as(world, "reviewer")
    run = world["calibration_run"]
    judgment = run.judgments.order_by("pk").first()
    html = client.get(reverse("judgment_detail", args=[run.run_id, judgment.uuid])).content.decode()
    assert f"reasoning-{MARKER}" in html and f"system-{MARKER}" in client.get(reverse("judges")).content.decode()
    assert f"release candidate {MARKER}" in client.get(reverse("run_detail", args=[run.run_id])).content.decode()
