"""Whose replies a one-reply run judges (pointwise, the jury): a run labelled with a system judges that
system's replies — an outputs file, the outputs stored for one of its versions, or replies its endpoint
generates — and never the test set's own outputs, which are nobody's in particular."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from judgeapp.judging.batches import batched
from judgeapp.judging.content import InputFile, source_path_fit
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import ids_shown, parse_outputs, unknown_ids_refuse
from judgeapp.judging.selectors import output_set_for_system
from judgeapp.models import Output, OutputSet, System, TestSet, content_hash, short_version


def no_system_outputs(system: System, version_label: str | None = None) -> str:
    """The refusal of a run labelled with a system that has nothing of its own to judge."""
    which = f"no outputs labelled {version_label.strip()!r}" if version_label else "no outputs"
    return (
        f"{system.name} has {which} for this test set: upload them (--outputs, or manage.py outputs add), "
        "or have the system's endpoint generate them (--generate)"
    )


def outputs_file_check(
    outputs: InputFile, case_ids: list[str], *, judged: list[str] | None = None, where: str = ""
) -> dict[str, str]:
    """One version's replies from an outputs file, in the order judged: one for every case judged (`judged`,
    by default every case of the test set) and none for an id the test set does not have (CONTRACT §2:
    refused, with the ids). `where`: pairwise's " (version A)". Every mode and the Datasets page check an
    outputs file here."""
    by_id = parse_outputs(outputs.data, outputs.name)
    judged = case_ids if judged is None else judged
    missing = [case_id for case_id in judged if case_id not in by_id]
    if missing:
        raise InputError(f"{outputs.name}: no output for case(s) {ids_shown(missing, 5)} of the test set{where}")
    unknown_ids_refuse(by_id, set(case_ids), outputs.name, where)
    return {case_id: by_id[case_id] for case_id in judged}


def output_set_replies(
    output_set: OutputSet, *, testset: TestSet | InputFile, case_ids: list[str], system: System | None,
    judged: list[str] | None = None, where: str = "",
) -> dict[str, str]:
    """The replies stored for a system version, checked against the run's system and test set, for the cases
    judged (by default every case of the test set) that it answers."""
    if system is not None and output_set.system_id != system.pk:
        raise InputError(f"the outputs {output_set} are {output_set.system.name}'s, not {system.name}'s{where}")
    digest = testset.content_hash if isinstance(testset, TestSet) else content_hash(testset.data)
    if output_set.testset.content_hash != digest:
        raise InputError(f"the outputs {output_set} answer test set {output_set.testset}, not this one{where}")
    replies = dict(output_set.rows.values_list("case_id", "text"))
    unknown_ids_refuse(replies, set(case_ids), str(output_set), where)
    return {case_id: replies[case_id] for case_id in (case_ids if judged is None else judged) if case_id in replies}


def outputs_origin(*, output_set: OutputSet) -> dict:
    """What a run records of uploaded outputs: the report's `outputs_source`."""
    return {
        "source": "uploaded",
        "system": output_set.system.name,
        "version": output_set.version_label,
        "uploaded_at": output_set.created_at.isoformat(),
        "uploaded_by": output_set.created_by_label,
        "outputs_id": str(output_set.uuid),
        "content_hash": output_set.content_hash,
    }


@dataclass
class SystemReplies:
    """The replies a run judges when they do not come with the test set: `replies` {case id: text} from a
    file or a stored system version (None: the test set's own, or generated), and what the run records."""

    replies: dict[str, str] | None = None
    output_set: OutputSet | None = None
    option: dict | None = None  # the run's options["outputs"]
    version: str | None = None  # the run's versions["outputs"]


def system_replies(
    *,
    testset: TestSet | InputFile,
    case_ids: list[str],
    system: System | None,
    generate: bool,
    outputs: InputFile | None = None,
    output_set: OutputSet | None = None,
    outputs_version: str | None = None,
) -> SystemReplies:
    """Whose replies the run judges, or InputError (one line). A run with a system and neither a file nor a
    stored version judges the system's newest stored outputs for this test set, or is refused: it never
    falls back to the test set's own outputs."""
    if generate and (outputs is not None or output_set is not None or outputs_version):
        raise InputError("give outputs or have the system generate the outputs, not both")
    if outputs is not None and (output_set is not None or outputs_version):
        raise InputError("give an outputs file or a stored system version, not both")
    if outputs_version and output_set is None and system is None:
        raise InputError("a version label picks a system's stored outputs: name the system (--system) and give no outputs file")
    if output_set is None and outputs is None and system is not None and not generate:
        output_set = output_set_for_system(system=system, testset=testset, version_label=outputs_version)
        if output_set is None:
            raise InputError(no_system_outputs(system, outputs_version))
    if output_set is not None:
        replies = output_set_replies(output_set, testset=testset, case_ids=case_ids, system=system)
        return SystemReplies(replies, output_set, outputs_origin(output_set=output_set), short_version(output_set.content_hash))
    if outputs is not None:
        digest = content_hash(outputs.data)
        option = {"file": outputs.name, "content_hash": digest}
        return SystemReplies(outputs_file_check(outputs, case_ids), None, option, short_version(digest))
    return SystemReplies()


def run_outputs_store(*, run, testset: TestSet, replies: dict[str, str], system: System | None, slot: str = "") -> None:
    """The replies a run judges, stored as its Outputs before it is planned: the plan takes them over the
    test set's own (judging/replies.py: replies_to_judge). `slot`: the version ("A", "B") of a pairwise run."""
    cases = dict(testset.cases.values_list("case_id", "pk"))
    for batch in batched(replies.items()):
        Output.objects.bulk_create(
            [
                Output(run=run, case_id=cases[case_id], slot=slot, text=text, source=Output.Source.FILE, system=system)
                for case_id, text in batch
            ],
            batch_size=500,
        )


# --- Outputs of a system version, stored ------------------------------------------------------------------

VERSION_LABEL_MAX = 50


def version_label_check(label: str) -> str:
    """A version label as a person types it ("v2.1"): one short line of text."""
    from judgeapp.judging.text import text_refuse

    label = (label or "").strip()
    if not label:
        raise InputError("the version label is empty (e.g. v2.1)")
    text_refuse(label, "the version label")
    if len(label) > VERSION_LABEL_MAX or any(c in label for c in "\r\n\t"):
        raise InputError(f"the version label must be one line of at most {VERSION_LABEL_MAX} characters")
    return label


@transaction.atomic
def output_set_save(*, system, version_label: str, testset: TestSet, outputs: InputFile, created_by=None):
    """Store one version of a system's replies to a test set, in one transaction (as a test set is): the same
    content for the same system and label is stored once (found again, `created` False); nothing is stored
    when a line is refused or the rows cannot all be written.
    `created_by`: a signed-in user, or a label such as "cli:<os user>"."""
    from judgeapp.models import OutputRow, OutputSet

    label = version_label_check(version_label)
    case_ids = list(testset.cases.order_by("position").values_list("case_id", flat=True))
    replies = outputs_file_check(outputs, case_ids)
    digest = content_hash(outputs.data)
    existing = OutputSet.objects.filter(system=system, version_label=label, content_hash=digest).first()
    if existing:
        if existing.testset_id != testset.pk:
            raise InputError(
                f"{system.name} {label}: these outputs are already stored for test set {existing.testset}; "
                "give them another version label"
            )
        return existing, False
    user = None if isinstance(created_by, str) or created_by is None else created_by
    output_set = OutputSet.objects.create(
        system=system, version_label=label, testset=testset, content_hash=digest,
        source_name=source_path_fit(outputs.name, 255), row_count=len(replies), created_by=user,
        created_by_label=created_by if isinstance(created_by, str) else (user.get_username() if user else ""),
    )
    position = 0
    for batch in batched(replies.items()):
        OutputRow.objects.bulk_create(
            OutputRow(output_set=output_set, case_id=case_id, position=position + i, text=text)
            for i, (case_id, text) in enumerate(batch)
        )
        position += len(batch)
    return output_set, True
