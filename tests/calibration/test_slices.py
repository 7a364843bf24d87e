"""Issue 28, item 6: a test set's tags slice the judge–human agreement and the human-corrected mean, each tag
with its interval and n, the worst first; a lead's floor for the worst slice warns or blocks the gate, and a
slice with fewer items than the level's minimum is shown but never decides. Figures recomputed here with
scikit-learn and ppi_py called directly."""

import numpy as np
import ppi_py
import pytest
from sklearn.metrics import cohen_kappa_score

from calibration.models import AgreementResult, SampleItem
from calibration.selectors.agreement import agreement_for_run, latest_agreement_for_judge, result_rows_list, results_for_sample
from calibration.selectors.corrected import corrected_for_run
from calibration.selectors.policy import policy_get
from calibration.selectors.slices import slice_floor_for_run
from calibration.selectors.status import calibration_for_gate
from calibration.services.locks import level_set, policy_set
from judgeapp.judging import content
from judgeapp.judging.errors import InputError
from tests.calibration.conftest import scores_for
from tests.calibration.test_lock import run_gate, with_tasks  # noqa: F401  (the fixture)
from tests.helpers import rendered_without_queries

N = 40
LABELLED = 30  # cases c000..c029 labelled; the rest are the corrected mean's unlabelled items


def tags_of(i: int) -> list[str]:
    tags = ["billing"] if i % 4 == 0 else ["shipping"]
    return tags + (["vip"] if i % 6 == 0 else [])


def human_label(i: int, score: int) -> int:
    """People disagree with the judge on billing (the reverse score), agree elsewhere but one point off on
    every seventh case."""
    if "billing" in tags_of(i):
        return 6 - score
    return min(5, score + 1) if i % 7 == 3 else score


@pytest.fixture
def sliced(planted_run, with_tasks):  # noqa: F811
    scores = scores_for(N)
    run = planted_run(scores, tags=tags_of)
    sample = with_tasks(run, [human_label(i, s) for i, s in enumerate(scores[:LABELLED])])
    return run, sample, scores


def expected_kappa(tag: str, scores) -> tuple[float, int]:
    items = [i for i in range(LABELLED) if tag in tags_of(i)]
    judge = [scores[i] for i in items] * 2  # two annotators labelled each item alike
    human = [human_label(i, scores[i]) for i in items] * 2
    return cohen_kappa_score(judge, human, weights="quadratic", labels=[1, 2, 3, 4, 5]), len(items)


def test_sample_items_keep_their_cases_tags(sliced):
    _run, sample, _scores = sliced
    items = {item.case_key: item.tags for item in SampleItem.objects.filter(sample=sample)}
    assert items["c000"] == ["billing", "vip"] and items["c001"] == ["shipping"] and items["c006"] == ["shipping", "vip"]


def test_agreement_per_tag_equals_scikit_learn_on_the_tags_items_with_intervals_and_n(sliced):
    run, sample, scores = sliced
    result = AgreementResult.objects.get(sample=sample, criterion="")
    stored = {entry["tag"]: entry for entry in result.slices}
    assert set(stored) == {"billing", "shipping", "vip"}
    assert stored["billing"]["kappa"]["ci"] and stored["shipping"]["kappa"]["ci"]
    for tag, entry in stored.items():
        kappa, n = expected_kappa(tag, scores)
        assert entry["n_items"] == n and entry["n_labels"] == 2 * n
        assert entry["kappa"]["value"] == pytest.approx(kappa, abs=1e-12)
        if entry["kappa"]["ci"] is not None:  # None when resamples of a tiny slice leave kappa undefined
            low, high = entry["kappa"]["ci"]
            assert low <= kappa <= high
        agreed = sum(human_label(i, scores[i]) == scores[i] for i in range(LABELLED) if tag in tags_of(i))
        assert entry["agreement"]["value"] == pytest.approx(agreed / n)

    shown = agreement_for_run(run=run)["slices"]  # the report's `agreement.slices`, the worst first
    values = [entry["kappa"]["value"] for entry in shown]
    assert values == sorted(values) and shown[0]["tag"] == "billing" and shown[0]["kappa"]["value"] < 0
    # The level's minimum is 20 items: only shipping (22 labelled items) may decide.
    assert {entry["tag"]: entry["decides"] for entry in shown} == {"billing": False, "shipping": True, "vip": False}


def test_corrected_mean_per_tag_equals_ppi_py_called_directly(sliced):
    run, _sample, scores = sliced
    corrected = corrected_for_run(run=run)
    by_tag = {entry["tag"]: entry for entry in corrected["slices"]}
    for tag in ("billing", "shipping", "vip"):
        labelled = [i for i in range(LABELLED) if tag in tags_of(i)]
        unlabelled = [i for i in range(LABELLED, N) if tag in tags_of(i)]
        y = np.array([human_label(i, scores[i]) for i in labelled], dtype=float)
        y_hat = np.array([scores[i] for i in labelled], dtype=float)
        y_hat_unlabelled = np.array([scores[i] for i in unlabelled], dtype=float)
        mean = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, y_hat, y_hat_unlabelled))[0])
        low, high = (float(np.ravel(bound)[0]) for bound in ppi_py.ppi_mean_ci(y, y_hat, y_hat_unlabelled, alpha=0.05))
        entry = by_tag[tag]
        assert entry["n_labelled"] == len(labelled) and entry["n_unlabelled"] == len(unlabelled)
        assert entry["mean"]["value"] == pytest.approx(mean, abs=1e-9)
        assert entry["mean"]["ci"] == pytest.approx([low, high], abs=1e-9)
    means = [entry["mean"]["value"] for entry in corrected["slices"]]
    assert means == sorted(means)  # the lowest corrected mean first


def test_a_tag_whose_corrected_mean_is_undefined_is_shown_without_a_figure_never_as_nan():
    from calibration.core.slices import corrected_slices

    keys = ["a", "b", "c", "d"]
    shown = corrected_slices(
        keys, [1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0], {"e": 2.0, "f": 2.0}, {k: ["flat"] for k in "abcdef"},
    )
    assert shown[0]["mean"] == {"value": None, "ci": None} and shown[0]["note"].startswith("undefined")


def test_the_lead_s_floor_for_the_worst_slice_warns_by_default_blocks_when_told_and_names_the_slice(sliced, lead, capsys):
    run, _sample, _scores = sliced
    level_set(metric="kappa", threshold=0.2, min_items=20, actor=lead)
    assert slice_floor_for_run(run=run) is None  # no floor: off by default
    policy = {
        "not_calibrated": "warn", "stale": "warn", "alpha_floor": 0.667, "single_annotator_locks": False, "corrected_gate": False,
    }
    policy_set(actor=lead, slice_floor=0.5, **policy)
    # Billing is the worst slice but has 8 items, under the minimum of 20: it never decides; shipping passes.
    assert slice_floor_for_run(run=run) is None

    level_set(metric="kappa", threshold=0.2, min_items=5, actor=lead)
    gate = calibration_for_gate(run=run)
    line = next(w for w in gate["warnings"] if w.startswith("worst slice below its floor"))
    assert "on tag 'billing': quadratic-weighted kappa -" in line and "on 8 items, below the slice floor 0.50" in line
    assert not any("worst slice" in r for r in gate["reasons"])

    policy_set(actor=lead, slice_floor=0.5, slice_floor_action="block", **policy)
    gate = calibration_for_gate(run=run)
    assert any(r.startswith("worst slice below its floor: planted-judge on tag 'billing'") for r in gate["reasons"])
    code, output = run_gate(run.run_id, capsys)
    assert code == 1 and "tag 'billing'" in output
    assert gate["policy"]["slice_floor"] == 0.5 and gate["policy"]["slice_floor_action"] == "block"

    with pytest.raises(InputError, match="worst slice's floor must be between -1 and 1"):
        policy_set(actor=lead, slice_floor=1.5, **policy)


@pytest.mark.parametrize(
    "row, reason",
    [
        ('{"id": "a", "input": "q", "tags": "billing"}', None),  # a single text is one tag (CSV's form)
        ('{"id": "a", "input": "q", "tags": {"x": 1}}', "'tags' must be a list of texts"),
        ('{"id": "a", "input": "q", "tags": ["ok", 3]}', "tag 2 must be a text, got 3"),
        ('{"id": "a", "input": "q", "tags": ["' + "x" * 51 + '"]}', "tag 1 is 51 characters long, over the limit of 50"),
        ('{"id": "a", "input": "q", "tags": ' + str(["t"] * 21).replace("'", '"') + "}", "21 tags, over the limit of 20"),
    ],
)
def test_a_test_sets_tags_are_checked_with_one_line(db, row, reason):
    data = ('{"id": "z", "input": "first"}\n' + row + "\n").encode()
    if reason is None:
        testset = content.testset_store(data=data, name="tagged.jsonl")
        assert testset.cases.get(case_id="a").extra["tags"] == ["billing"]
        return
    with pytest.raises(InputError) as caught:
        content.testset_store(data=data, name="tagged.jsonl")
    assert str(caught.value) == f"tagged.jsonl line 2: {reason}"


def test_csv_tags_are_one_cell_separated_by_semicolons_blank_and_repeated_ones_dropped(db):
    data = b'id,input,tags\na,q,"billing; vip ;;billing"\nb,r,\n'
    testset = content.testset_store(data=data, name="tagged.csv")
    assert testset.cases.get(case_id="a").extra["tags"] == ["billing", "vip"]
    assert "tags" not in testset.cases.get(case_id="b").extra


def tag_order(html: str, start: str) -> list[str]:
    import re

    return re.findall(r'<tr data-tag="([^"]+)"', html[html.index(start):])


def test_the_pages_show_each_tag_worst_first_and_mark_the_ones_too_small_to_decide(sliced, client, lead):
    from django.urls import reverse

    run, sample, _scores = sliced
    client.force_login(lead)
    worst_first = [entry["tag"] for entry in agreement_for_run(run=run)["slices"]]
    assert worst_first[0] == "billing"

    overview = client.get(reverse("calibration:overview")).content.decode()
    assert tag_order(overview, 'class="slices"')[:3] == worst_first and "worst: billing" in overview
    page = client.get(reverse("calibration:sample_detail", args=[sample.uuid])).content.decode()
    assert tag_order(page, 'class="slices"')[:3] == worst_first and "too few items to decide" in page
    # Both pages' views read the slices (the overview's rows, result_rows_list); rendering makes no query.
    assert [s["tag"] for s in latest_agreement_for_judge()[0].slices][:3] == worst_first
    rows = result_rows_list(results=list(results_for_sample(sample=sample)))
    html = rendered_without_queries("calibration/_result_rows.html", {"result_rows": rows, "metric_labels": {}})
    assert tag_order(html, 'class="slices"')[:3] == worst_first

    run_page = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    assert tag_order(run_page, 'id="run-agreement"')[:3] == worst_first
    corrected = [entry["tag"] for entry in corrected_for_run(run=run)["slices"]]
    assert tag_order(run_page, 'id="corrected-slices"')[:3] == corrected


@pytest.mark.django_db
def test_a_lead_sets_the_slice_floor_on_the_calibration_page_audited_and_a_bad_one_is_a_form_error(client, lead):
    from django.urls import reverse

    from calibration.models import CalibrationPolicy
    from judgeapp.models import AuditLog

    client.force_login(lead)
    page = client.get(reverse("calibration:overview")).content.decode()
    assert 'name="slice_floor"' in page and 'name="slice_floor_action"' in page and "No floor for the worst slice." in page
    form = {k: v for k, v in CalibrationPolicy().as_dict().items() if v is not None and v is not False}
    html = client.post(reverse("calibration:policy_set"), {**form, "slice_floor": "1.5"}, follow=True).content.decode()
    assert "Policy not changed: slice_floor:" in html and policy_get().pk is None
    client.post(
        reverse("calibration:policy_set"), {**form, "slice_floor": "0.4", "slice_floor_action": "block", "reason": "tags matter"},
    )
    policy = policy_get()
    assert (policy.slice_floor, policy.slice_floor_action) == (0.4, "block")
    entry = AuditLog.objects.filter(action=AuditLog.Action.POLICY_SET).latest("id")
    assert entry.detail["slice_floor"] == 0.4 and entry.detail["previous"]["slice_floor"] is None
    page = client.get(reverse("calibration:overview")).content.decode()
    assert (
        "The worst slice (a tag with the level's minimum of items) below <strong>0.40</strong>: <strong>block the "
        "release</strong>" in page
    )


def test_the_agreement_command_and_the_run_summary_name_the_worst_tag(sliced, capsys):
    import json

    from django.core.management import call_command

    from judgeapp.pointwise.core import _agreement_line

    run, _sample, _scores = sliced
    call_command("agreement")
    out = capsys.readouterr().out
    assert "  tag billing (8 items, too few to decide): kappa -0.987" in out and "  tag shipping (22 items): kappa 0.964" in out
    call_command("agreement", "--json")
    rows = json.loads(capsys.readouterr().out)["judges"]
    assert rows[0]["slices"][0]["tag"] == "billing"
    line = _agreement_line(agreement_for_run(run=run))
    assert line.endswith("; worst tag billing: kappa -0.99 on 8 items")


def test_the_migration_gives_items_drawn_before_it_their_cases_tags_and_recomputes_their_agreement(sliced):
    from importlib import import_module

    from django.apps import apps

    from calibration.models import Sample

    _run, sample, _scores = sliced
    SampleItem.objects.filter(sample=sample).update(tags=[])  # as drawn before tags were kept
    Sample.objects.filter(pk=sample.pk).update(agreement_version=sample.labels_version)
    import_module("calibration.migrations.0010_slices").tags_from_cases(apps, None)
    assert SampleItem.objects.get(sample=sample, case_key="c000").tags == ["billing", "vip"]
    sample.refresh_from_db()
    assert sample.agreement_stale  # the next refresh computes it again, slices included


def test_a_jury_run_s_tagged_cases_give_pass_fail_agreement_per_tag(monkeypatch, make_judge, annotator):
    """Jury (and pairwise) test sets share the reader: a drawn sample's items keep the tags, and each juror's
    Cohen's kappa is computed per tag (here against scikit-learn)."""
    import json

    from calibration.services.agreement import agreement_compute
    from calibration.services.labels import labels_import
    from calibration.services.samples import sample_draw
    from judgeapp.judging import runkind as runkinds_base
    from judgeapp.judging.content import rubric_store
    from judgeapp.judging.runs import run_create
    from judgeapp.models import Output, RunKind, RunStatus
    from tests.calibration.conftest import RUBRIC_ONE, labels_csv, two_annotators
    from tests.calibration.test_jury_runs import N as JURY_N
    from tests.calibration.test_jury_runs import StandInJury, truth

    runkinds_base.handler_for(RunKind.JURY)
    monkeypatch.setitem(runkinds_base._REGISTRY, RunKind.JURY, StandInJury())
    jurors = [
        make_judge(name, family=family) for name, family in (("juror-a", "qwen"), ("juror-b", "mistral"), ("juror-c", "google"))
    ]
    rows = [{"id": f"c{i:03d}", "input": f"Ticket {i}", "output": f"Reply {i}", "tags": ["even" if i % 2 == 0 else "odd"]}
            for i in range(JURY_N)]
    testset = content.testset_store(data="".join(json.dumps(r) + "\n" for r in rows).encode(), name="jury-tagged.jsonl")
    run = run_create(
        kind=RunKind.JURY, run_id="jury-tags", judges=jurors, testset=testset,
        rubric=rubric_store(data=RUBRIC_ONE, name="r.toml"),
    )
    Output.objects.bulk_create(
        Output(run=run, case=c, slot="", text=c.output, source=Output.Source.TESTSET) for c in testset.cases.all()
    )
    run.status = RunStatus.DONE
    run.save()

    drawn = sample_draw(run=run, size=6, seed=2, annotators=[annotator])
    assert all(item.tags == ["even" if int(item.case_key[1:]) % 2 == 0 else "odd"] for item in drawn.items.all())

    labels = [(run.run_id, f"c{i:03d}", "", "ann", truth(i)) for i in range(JURY_N)]
    sample = labels_import(data=labels_csv(two_annotators(labels)), name="jury.csv").samples[0]
    agreement_compute(sample_pk=sample.pk)
    result = AgreementResult.objects.get(sample=sample, judge_name="juror-c")  # juror-c always says pass
    for entry in result.slices:
        items = [i for i in range(JURY_N) if (i % 2 == 0) == (entry["tag"] == "even")]
        expected = cohen_kappa_score(["pass"] * len(items), [truth(i) for i in items], labels=["fail", "pass"])
        assert entry["n_items"] == len(items) and entry["kappa"]["value"] == pytest.approx(expected, abs=1e-12)
        assert entry["agreement"]["value"] == pytest.approx(sum(truth(i) == "pass" for i in items) / len(items))
