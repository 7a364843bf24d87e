"""Running annotation in the app: a lead invites annotators, puts them in a sample's queue and writes the
sample's instructions; an annotator leaves a comment or a flag on an item of their queue."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Count

from calibration.core.labels import PAIRWISE
from calibration.core.sampling import queue_order, reply_order_swapped
from calibration.models import MAX_NOTE_LENGTH, Assignment, ItemNote, NoteKind, Sample
from calibration.services.audit import calibration_audit
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.judging.errors import InputError
from judgeapp.judging.leakage.scan import Kind, scan_texts
from judgeapp.judging.markdown import markdown_check
from judgeapp.judging.text import text_refuse
from judgeapp.roles import Role, has_role

User = get_user_model()

USERNAME_MAX_LENGTH = 150


def username_check(username: str) -> str:
    username = text_refuse(username.strip(), "the username")
    if not username:
        raise InputError("enter a username")
    if len(username) > USERNAME_MAX_LENGTH:
        raise InputError(f"a username has at most {USERNAME_MAX_LENGTH} characters")
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError:
        raise InputError("a username has letters, digits and @ . + - _ only") from None
    return username


@dataclass
class Invitation:
    user: User
    # The new account's password, to be shown once to the lead; None for an existing account.
    password: str | None
    sample: Sample | None
    items: int  # items put in the annotator's queue

    def __repr__(self):  # never the password, whatever prints this
        return f"Invitation({self.user.username!r}, new account: {self.password is not None}, items: {self.items})"


def annotator_invite(*, username: str, email: str = "", actor, sample: Sample | None = None) -> Invitation:
    """Make `username` an annotator — a new account with a generated password, or an existing account added to
    the annotator group — and, with `sample`, give them every item of it (`sample_annotator_add`), all in one
    transaction. The new account's password is returned to be shown once to the lead and is never stored in
    clear: the account keeps only its hash, and the audit entry names the account, not it. An existing
    account's password stays its own (None).

    InputError: an invalid name or email, a name already an annotator (or taken in another case), a
    deactivated account.
    """
    username = username_check(username)
    email = text_refuse(email.strip(), "the email")
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise InputError(f"{email[:100]!r} is not an email address") from None
    group, _ = Group.objects.get_or_create(name=Role.ANNOTATOR)
    password = None
    with transaction.atomic():
        user = User.objects.select_for_update().filter(username=username).first()
        if user is None:
            other = User.objects.filter(username__iexact=username).values_list("username", flat=True).first()
            if other is not None:
                raise InputError(f"a user named {other!r} exists already; use that name or another")
            password = secrets.token_urlsafe(12)
            try:
                with transaction.atomic():
                    user = User.objects.create_user(username=username, email=email, password=password)
            except IntegrityError:
                raise InputError(f"{username} was created a moment ago by someone else") from None
        elif not user.is_active:
            raise InputError(f"{username}'s account is deactivated")
        elif has_role(user, Role.ANNOTATOR):
            raise InputError(f"{username} is an annotator already")
        user.groups.add(group)
        user._judgeapp_roles = None  # roles.py caches a user's roles on the object; it has one more now
        calibration_audit(
            action="calibration.annotator_invited",
            actor=actor,
            subject=username,
            reason="new account" if password else "existing account added to the annotators",
            detail={"created": password is not None, "email": email},
        )
        items = sample_annotator_add(sample=sample, annotator=user, actor=actor, every_item=True) if sample is not None else 0
    return Invitation(user=user, password=password, sample=sample, items=items)


@transaction.atomic
def sample_annotator_add(*, sample: Sample, annotator, actor, every_item: bool = False) -> int:
    """Put `annotator` in the sample's queue: the items still short of the sample's annotators per item, or,
    with `every_item`, every item they do not have yet (the sample then has one more annotator per item).
    Items held back on leakage go to nobody. Returns how many items were added; 0 when there were none.

    The items are added after the annotator's own items of the sample, in an order of their own, with a
    pairwise item's replies in an order of their own (as a draw gives them)."""
    if not has_role(annotator, Role.ANNOTATOR):
        raise InputError(f"{annotator.username} is not an annotator")
    # One add at a time per sample: two leads adding people at once must not both fill the same shortfall.
    Sample.objects.select_for_update().filter(pk=sample.pk).first()
    shown = sample.items.filter(leakage_flags=[]).annotate(n_annotators=Count("assignments")).order_by("position")
    mine = set(Assignment.objects.filter(item__sample=sample, annotator=annotator).values_list("item_id", flat=True))
    wanted = [item for item in shown if item.pk not in mine and (every_item or item.n_annotators < sample.overlap)]
    if not wanted:
        return 0
    seed = sample.seed or 0
    by_key = {(item.case_key, item.criterion): item for item in wanted}
    start = len(mine)
    added = [
        Assignment(
            item=by_key[key],
            annotator=annotator,
            position=start + offset,
            swapped=sample.label_kind == PAIRWISE and reply_order_swapped(seed=seed, annotator=annotator.pk, key=key),
        )
        for offset, key in enumerate(queue_order(list(by_key), seed=seed, annotator=annotator.pk))
    ]
    Assignment.objects.bulk_create(added, batch_size=500)
    if every_item:
        added_to = {item.pk for item in wanted}
        fewest = min(item.n_annotators + (item.pk in added_to) for item in shown)
        if fewest > sample.overlap:
            Sample.objects.filter(pk=sample.pk).update(overlap=fewest)
            sample.overlap = fewest
    calibration_audit(
        action="calibration.annotator_assigned",
        actor=actor,
        subject=f"sample {sample.short_id}",
        reason=f"{annotator.username}: {len(added)} item{'s' if len(added) != 1 else ''}",
        run=sample.run,
        detail={"annotator": annotator.username, "items": len(added), "every_item": every_item},
    )
    return len(added)


# What in the instructions would tell an annotator which system, judge, model or version made a reply.
REVEALING = frozenset({Kind.KNOWN_NAME, Kind.PROVIDER, Kind.MODEL_NAME})


def instructions_check(instructions: str, *, run) -> str:
    """The instructions (Markdown) as they can be stored, or InputError: too long, not text, or naming a
    configured system, judge, model or the run's versions (annotators score blind: the leakage scan of
    judgeapp/judging/leakage/, as their items get)."""
    instructions = markdown_check(instructions).strip()
    if instructions:
        names = judgeapp_selectors.known_names_for_run(run=run)
        for flag in scan_texts([("the instructions", instructions)], names=names):
            if flag.kind in REVEALING:
                raise InputError(
                    f"the instructions name {flag.snippet.strip()[:80]!r} ({Kind.LABELS.get(flag.kind, flag.kind)}): "
                    "annotators must not learn which system, judge or version made a reply"
                )
    return instructions


def sample_instructions_set(*, sample: Sample, instructions: str, actor) -> Sample:
    """Replace the sample's instructions to its annotators (Markdown, at most 20,000 characters, naming no
    system, judge, model or version)."""
    instructions = instructions_check(instructions, run=sample.run)
    with transaction.atomic():
        Sample.objects.filter(pk=sample.pk).update(instructions=instructions)
        calibration_audit(
            action="calibration.instructions_set",
            actor=actor,
            subject=f"sample {sample.short_id}",
            reason=f"{len(instructions):,} characters" if instructions else "removed",
            run=sample.run,
        )
    sample.instructions = instructions
    return sample


def item_note_create(*, assignment: Assignment, kind: str, text: str) -> ItemNote:
    """The annotator's comment on the item of their assignment, or their flag with its reason."""
    if kind not in NoteKind.values:
        raise InputError("a note is a comment or a flag")
    text = text_refuse(text.replace("\r\n", "\n"), f"the {kind}").strip()
    if not text:
        raise InputError("write the comment first" if kind == NoteKind.COMMENT else "say why the item is flagged")
    if len(text) > MAX_NOTE_LENGTH:
        raise InputError(f"the {kind} is {len(text):,} characters long; at most {MAX_NOTE_LENGTH:,}")
    return ItemNote.objects.create(
        item_id=assignment.item_id, assignment=assignment, annotator_id=assignment.annotator_id, kind=kind, text=text
    )
