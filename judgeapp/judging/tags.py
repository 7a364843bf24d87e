"""Tags on runs: short words a team puts on a run ("nightly", "rc-2") to find it again. A tag is light: who
added it is recorded on the row, and no audit entry is written."""

import re

from django.db import IntegrityError, transaction

from judgeapp.judging.errors import InputError
from judgeapp.models import Run, RunTag
from judgeapp.models.runs import TAG_MAX_LENGTH

TAG_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]*")
TAGS_PER_RUN_MAX = 20


def tag_name_clean(raw: str) -> str:
    """The tag as stored (lower case), or InputError in one line saying what a tag may be."""
    name = (raw or "").strip().lower()
    if not name:
        raise InputError("a tag cannot be empty")
    if len(name) > TAG_MAX_LENGTH or not TAG_PATTERN.fullmatch(name):
        shown = name[:TAG_MAX_LENGTH] + ("…" if len(name) > TAG_MAX_LENGTH else "")
        raise InputError(
            f"tag {shown!r} is not allowed: use up to {TAG_MAX_LENGTH} letters a-z, digits, '-' or '_', "
            f"starting with a letter or digit"
        )
    return name


def run_tag_add(*, run: Run, name: str, actor=None) -> RunTag:
    """Put a tag on a run (nothing changes when it is there already); `actor` a user, or None for a command."""
    name = tag_name_clean(name)
    existing = RunTag.objects.filter(run=run, name=name).first()
    if existing:
        return existing
    if RunTag.objects.filter(run=run).count() >= TAGS_PER_RUN_MAX:
        raise InputError(f"run {run.run_id} has {TAGS_PER_RUN_MAX} tags already: remove one first")
    user = actor if getattr(actor, "is_authenticated", False) else None
    try:
        with transaction.atomic():
            return RunTag.objects.create(run=run, name=name, created_by=user)
    except IntegrityError:  # the same tag added at the same moment by someone else
        return RunTag.objects.get(run=run, name=name)


def run_tags_add(*, run: Run, names: list[str], actor=None) -> list[RunTag]:
    """Several tags at once (a command's repeated --tag, the API's `tags`), every name checked first."""
    cleaned = list(dict.fromkeys(tag_name_clean(name) for name in names))
    return [run_tag_add(run=run, name=name, actor=actor) for name in cleaned]


def run_tag_remove(*, run: Run, name: str) -> bool:
    """Take a tag off a run; False when the run did not have it."""
    deleted, _ = RunTag.objects.filter(run=run, name=(name or "").strip().lower()).delete()
    return bool(deleted)


def run_tag_names(*, run: Run) -> list[str]:
    return list(RunTag.objects.filter(run=run).order_by("name").values_list("name", flat=True))
