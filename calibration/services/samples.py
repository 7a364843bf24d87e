"""Drawing a human-scoring sample from a finished run and putting it in annotators' queues."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from calibration.core.labels import PAIRWISE, parse_label
from calibration.core.sampling import assign, queue_order, reply_order_swapped, stratified_sample
from calibration.models import Assignment, Sample, SampleItem
from calibration.selectors.run_judges import POOLED_JURY, judge_configurations_for_run, primary_judge_for_run
from calibration.services.annotation import instructions_check
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.judging.errors import InputError
from judgeapp.judging.leakage.scan import Collector, Scanner
from judgeapp.models import Run, RunStatus
from judgeapp.roles import Role, has_role

User = get_user_model()

MAX_SAMPLE_SIZE = 5000


@dataclass
class RunItems:
    """What of a run people can label: its label kind, and each (case id, criterion) with the case row,
    the judges' verdicts on it, and the criterion's scale."""

    label_kind: str
    cases: dict  # case_id -> Case
    verdicts: dict  # (case_id, criterion, judge) -> canonical label
    scales: dict  # criterion -> (low, high)


def run_items(*, run: Run) -> RunItems:
    label_kind = judgeapp_selectors.label_kind_for_run(run=run)
    if label_kind is None:
        raise InputError(f"run {run.run_id}: a {run.get_kind_display()} run has no verdicts people can label")
    if run.status not in (RunStatus.DONE, RunStatus.INVALID):
        raise InputError(f"run {run.run_id} is {run.status}; draw a sample from a finished run")
    scales = {c.name: c.scale_bounds for c in judgeapp_selectors.criteria_for_run(run=run)}
    cases = {o.case.case_id: o.case for o in judgeapp_selectors.outputs_for_run(run=run)}
    verdicts = {}
    for verdict in judgeapp_selectors.verdicts_for_run(run=run):
        try:
            value = parse_label(verdict.value, label_kind=label_kind, scale=scales.get(verdict.criterion, (1, 5)))
        except ValueError:
            continue  # a verdict outside the scale was never counted by the run either
        verdicts[(verdict.case_id, verdict.criterion, verdict.judge)] = value
    return RunItems(label_kind=label_kind, cases=cases, verdicts=verdicts, scales=scales)


def case_tags(case) -> list[str]:
    """A case's tags (the test set's `tags`, checked when it was read), which its sample item keeps."""
    tags = (case.extra or {}).get("tags")
    return list(tags) if isinstance(tags, list) else []


def items_leakage(*, run: Run, case_ids) -> dict[str, list[dict]]:
    """The leakage flags of each case as an annotator would see it: its input and the reply (or both
    replies) they score, scanned like a blind comparator's inputs (judgeapp/judging/leakage/) against
    every configured system, judge and model name and the run's own versions. {case_id: [flag, …]}."""
    wanted = set(case_ids)
    texts: dict[str, list[tuple[str, str]]] = {}
    for output in judgeapp_selectors.outputs_for_run(run=run):
        case_id = output.case.case_id
        if case_id not in wanted:
            continue
        shown = texts.setdefault(case_id, [("input", output.case.input)])
        shown.append((f"reply {output.slot}" if output.slot else "output", output.text or ""))
    scanner = Scanner(judgeapp_selectors.known_names_for_run(run=run))
    flags = {}
    for case_id, shown in texts.items():
        collector = Collector()
        for place, text in shown:
            if text:
                scanner.scan_text(collector, text, input=f"case {case_id}", place=place)
        found = collector.flags()
        if found:
            flags[case_id] = [flag.as_dict() for flag in found]
    return flags


def annotators_check(usernames_or_users) -> list:
    users = []
    for entry in usernames_or_users:
        user = entry if isinstance(entry, User) else User.objects.filter(username=entry).first()
        if user is None:
            raise InputError(f"no user {entry!r}")
        if not has_role(user, Role.ANNOTATOR):
            raise InputError(f"{user.username} is not in the annotator group")
        users.append(user)
    if len({u.pk for u in users}) != len(users):
        raise InputError("an annotator is named twice")
    return users


def sample_drawn(*, run: Run, size: int, seed: int) -> Sample | None:
    """The sample drawn from `run` with this size (as drawn) and seed, if there is one."""
    return Sample.objects.filter(run=run, method=Sample.Method.DRAWN, size=size, seed=seed, repeat=0).first()


@transaction.atomic
def sample_draw(
    *, run: Run, size: int, seed: int, overlap: int = 1, annotators, created_by=None, instructions: str = ""
) -> Sample:
    """Draw `size` items of `run`, stratified by its judge's verdicts, and give each to `overlap`
    annotators. The same run, size and seed always draw the same items, so they make one sample: drawn
    again (a double click, two reviewers at the same moment), the sample drawn first is returned as it is,
    with its annotators and overlap. The size is the size drawn: asking for 100 items of a run with 40
    judged ones draws the 40, the same sample as asking for 40. `instructions` (Markdown) are the new
    sample's; a sample drawn before keeps its own."""
    annotators = annotators_check(annotators)
    instructions = instructions_check(instructions, run=run)
    if not annotators:
        raise InputError("choose at least one annotator")
    if not 1 <= size <= MAX_SAMPLE_SIZE:
        raise InputError(f"the sample size must be between 1 and {MAX_SAMPLE_SIZE}")
    if not 1 <= overlap <= len(annotators):
        raise InputError(f"overlap {overlap}: each item can go to at most the {len(annotators)} annotator(s) chosen")
    items = run_items(run=run)
    stratifier = primary_judge_for_run(run=run)
    if stratifier not in judge_configurations_for_run(run=run) and stratifier != POOLED_JURY:
        raise InputError(f"run {run.run_id} has no judge")
    candidates = sorted(
        ((case_id, criterion), value)
        for (case_id, criterion, judge), value in items.verdicts.items()
        if judge == stratifier and case_id in items.cases
    )
    if not candidates:
        raise InputError(f"run {run.run_id} has no judged item to sample")
    keys = stratified_sample(candidates, size=min(size, len(candidates)), seed=seed)
    existing = sample_drawn(run=run, size=len(keys), seed=seed)
    if existing is not None:
        return existing
    strata = dict(candidates)
    # An item whose input or reply reveals a system, version or judge is held back: no annotator gets it,
    # and the sample's page shows it to the reviewer with its flags.
    leaks = items_leakage(run=run, case_ids={case_id for case_id, _ in keys})
    try:
        with transaction.atomic():
            sample = Sample.objects.create(
                run=run,
                label_kind=items.label_kind,
                size=len(keys),
                seed=seed,
                overlap=overlap,
                stratified_by=stratifier,
                created_by=created_by if getattr(created_by, "is_authenticated", False) else None,
                instructions=instructions,
            )
    except IntegrityError:
        # The same draw, committed by another request since the look above (the unique constraint waited for
        # it): that sample is the one.
        existing = sample_drawn(run=run, size=len(keys), seed=seed)
        if existing is None:
            raise
        return existing
    rows = SampleItem.objects.bulk_create(
        SampleItem(
            sample=sample,
            position=i,
            case=items.cases[case_id],
            case_key=case_id,
            criterion=criterion,
            stratum=strata[(case_id, criterion)],
            leakage_flags=leaks.get(case_id, []),
            tags=case_tags(items.cases[case_id]),
        )
        for i, (case_id, criterion) in enumerate(keys)
    )
    item_of = {(row.case_key, row.criterion): row for row in rows}
    shown = [key for key in keys if key[0] not in leaks]
    assignments = _assignments(item_of, shown, annotators, overlap=overlap, seed=seed, pairwise=items.label_kind == PAIRWISE)
    Assignment.objects.bulk_create(assignments, batch_size=500)
    return sample


def _assignments(item_of: dict, shown: list, annotators, *, overlap: int, seed: int, pairwise: bool) -> list[Assignment]:
    """Each item shown given to `overlap` annotators, each annotator's queue in its own seeded order (and, for
    pairwise items, the replies' order drawn per annotator)."""
    given = assign(shown, [a.pk for a in annotators], overlap=overlap, seed=seed) if shown else {}
    by_annotator: dict[int, list] = {}
    for key, annotator_ids in given.items():
        for annotator_id in annotator_ids:
            by_annotator.setdefault(annotator_id, []).append(key)
    assignments = []
    for annotator_id, annotator_keys in by_annotator.items():
        for position, key in enumerate(queue_order(annotator_keys, seed=seed, annotator=annotator_id)):
            assignments.append(
                Assignment(
                    item=item_of[key],
                    annotator_id=annotator_id,
                    position=position,
                    swapped=pairwise and reply_order_swapped(seed=seed, annotator=annotator_id, key=key),
                )
            )
    return assignments
