"""Every item drawn into a calibration sample is scanned for leakage like a blind comparator's input: a
flagged item is held back from every annotator and shown to the reviewer with its flags."""

import json
from html import escape

import pytest
from django.urls import reverse

from calibration.models import Assignment, SampleItem
from calibration.services.samples import sample_draw
from judgeapp.judging import content, runs
from judgeapp.models import Executor, RunKind
from tests.calibration.conftest import SYSTEM_MODEL, SYSTEM_NAME
from tests.calibration.test_web import current
from tests.factories import RUBRIC_ONE

pytestmark = pytest.mark.django_db

LEAKY = {
    "c001": f"Reply with grade 4: this is {SYSTEM_NAME.replace('-', '_')}, refunds take 5 days.",  # the system's name
    "c003": "Reply with grade 2: As \u0421laude, I think refunds take 5 days.",  # a provider, with a Cyrillic C
    "c005": "Reply with grade 5: [{'role': 'assistant', 'content': 'refunds take 5 days'}]",  # a transcript
}


# Round two (issue 26): shapes the first scanner let through.
LEAKY_ROUND_TWO = {
    "c000": "Reply with grade 4: signed, C-l-a-u-d-e.",  # a provider with a separator between every letter
    "c002": "Reply with grade 3: Sonnet 4.5 says refunds take 5 days.",  # a current model name
    "c004": 'Reply with grade 2: [{"type": "human", "data": {"content": "refund?"}}]',  # a LangChain transcript
    "c006": "Reply with grade 5: called get_refund_status() and it said 5 days.",  # a tool call told in prose
    "c007": "Reply with grade 1: drafted by G P T - 4 o.",  # a model name spelt out
}


def planted_run(make_judge, make_system, planted_server, outputs: dict[str, str]):
    rows = [
        {"id": f"c{i:03d}", "input": f"Customer question number {i} about a refund.",
         "output": outputs.get(f"c{i:03d}", f"Reply with grade {1 + i % 5}: refunds take 5 days.")}
        for i in range(8)
    ]
    testset = content.testset_store(data="\n".join(json.dumps(r) for r in rows).encode(), name="leaky.jsonl")
    run = runs.run_create(
        kind=RunKind.POINTWISE, run_id="leaky", executor=Executor.INLINE, title="rc",
        judge=make_judge("planted-judge", model="judge-model-xl", family="mistral", server=planted_server),
        system=make_system(SYSTEM_NAME, model=SYSTEM_MODEL), testset=testset,
        rubric=content.rubric_store(data=RUBRIC_ONE, name="rubric.toml"), prompt=content.prompt_register(prompt="pointwise"),
        options={"threshold": 1.0},
    )
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == "done", run.error
    return run


@pytest.fixture
def leaky_run(make_judge, make_system, planted_server):
    return planted_run(make_judge, make_system, planted_server, LEAKY)


def test_flagged_items_get_no_assignment_and_clean_ones_do(leaky_run, annotator, make_user):
    bob = make_user("bob", "annotator")
    sample = sample_draw(run=leaky_run, size=8, seed=1, overlap=2, annotators=[annotator, bob])
    held = {item.case_key: item for item in SampleItem.objects.filter(sample=sample) if item.held_back}
    assert set(held) == set(LEAKY)
    kinds = {case: {f["kind"] for f in item.leakage_flags} for case, item in held.items()}
    assert kinds == {"c001": {"known_name"}, "c003": {"provider_name"}, "c005": {"transcript"}}
    assert held["c001"].leakage_flags[0]["location"] == "output" and held["c001"].leakage_flags[0]["rule"]
    assert not Assignment.objects.filter(item__in=held.values()).exists()
    # The clean items are all in the queues, each with two annotators.
    assert Assignment.objects.filter(item__sample=sample).count() == 2 * (8 - len(LEAKY))


def test_an_annotator_never_sees_a_held_item_and_the_reviewer_sees_its_flags(client, leaky_run, annotator, reviewer):
    sample = sample_draw(run=leaky_run, size=8, seed=3, overlap=1, annotators=[annotator])
    client.force_login(annotator)
    seen = []
    page = client.get(reverse("calibration:queue"))
    while current(page):
        html = page.content.decode()
        for leaked in LEAKY.values():
            assert escape(leaked) not in html
        assert "Claude" not in html and SYSTEM_NAME.replace("-", "_") not in html
        assignment = Assignment.objects.get(uuid=current(page))
        seen.append(assignment.item.case_key)
        page = client.post(reverse("calibration:queue_label", args=[assignment.uuid]), {"answer": "3"})
        page = client.get(reverse("calibration:queue"))
    assert sorted(seen) == sorted({f"c{i:03d}" for i in range(8)} - set(LEAKY))

    client.force_login(reviewer)
    html = client.get(reverse("calibration:sample_detail", args=[sample.uuid])).content.decode()
    assert "Held back on leakage (3)" in html and "(3 held back on leakage)" in html
    assert "provider or model family" in html and "raw transcript" in html and "configuration or version name" in html
    assert "rule: provider name" in html and escape(LEAKY["c003"]) in html


def test_round_two_shapes_are_held_back_with_their_rules(make_judge, make_system, planted_server, annotator):
    run = planted_run(make_judge, make_system, planted_server, LEAKY_ROUND_TWO)
    sample = sample_draw(run=run, size=8, seed=1, overlap=1, annotators=[annotator])
    held = {item.case_key: item for item in SampleItem.objects.filter(sample=sample) if item.held_back}
    assert set(held) == set(LEAKY_ROUND_TWO)
    rules = {case: {(f["kind"], f["rule"]) for f in item.leakage_flags} for case, item in held.items()}
    assert rules == {
        "c000": {("provider_name", "provider name, letters spaced")},
        "c002": {("model_name", "model name")},
        "c004": {("transcript", "transcript: message type field")},
        "c006": {("tool_call", "tool call: in prose")},
        "c007": {("model_name", "model name, letters spaced")},
    }
    assert Assignment.objects.filter(item__sample=sample).count() == 8 - len(LEAKY_ROUND_TWO)
