"""The prompt library: per mode, the built-in prompt (the seed's, read-only, named `default`) and the prompts a
team adds with the same slots (`docs/prompts.md`).

A prompt of the library is a `PromptTemplate` with a mode and a number: saving a text under a name stores
its next version (v1, v2…), checked first (`prompts.prompt_text_problems`); a version is never changed. A run
names one (`summaries`, `summaries@v2`; the latest when no version is given) and records it like the
built-in one: the row, whose short content hash is the run's `versions.prompt` (what calibration scopes its
agreement and locks by) and the report's `prompt` {name, version, hash}.
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max

from judgeapp.judging.audit import audit_log_create
from judgeapp.judging.errors import InputError
from judgeapp.judging.prompts import BUILTIN_NAME, LIBRARY_MODES, PROMPTS_DIR, library_prompt, prompt_text_problems
from judgeapp.models import AuditLog, PromptTemplate, content_hash

NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{0,49}")
# A built-in prompt's row is named by its file (`pointwise`, `juror`…): no prompt of the library takes one.
RESERVED_NAMES = {BUILTIN_NAME} | {path.stem for path in PROMPTS_DIR.glob("*.md")}


class PromptRefused(InputError):
    """A prompt text that cannot be saved: `problems` holds one line per problem (a form shows each)."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


def prompt_name_check(name: str) -> str:
    name = (name or "").strip()
    if not NAME_PATTERN.fullmatch(name):
        raise InputError(f"prompt name {name[:60]!r}: use lowercase letters, digits and hyphens (at most 50), e.g. summaries")
    if name in RESERVED_NAMES:
        raise InputError(f"prompt name {name!r} is taken by a built-in prompt; choose another")
    return name


def mode_check(mode: str) -> str:
    if mode not in LIBRARY_MODES:
        raise InputError(f"mode {str(mode)[:40]!r}: the prompt library has {', '.join(LIBRARY_MODES)}")
    return mode


def prompt_template_save(*, mode: str, name: str, text: str, actor) -> PromptTemplate:
    """Store `text` as the next version of the library's prompt `name` for `mode` (v1 when it is new), after
    the checks of `prompt_text_problems`; the audit log says who saved which version."""
    mode, name = mode_check(mode), prompt_name_check(name)
    text = (text or "").replace("\r\n", "\n")
    problems = prompt_text_problems(mode, text)
    if problems:
        raise PromptRefused(problems)
    digest = content_hash(text)
    same = PromptTemplate.objects.filter(name=name, content_hash=digest).first()
    if same is not None:
        raise InputError(f"this text is {same.name} {same.label} already ({same.mode}); nothing new to save")
    if PromptTemplate.objects.filter(name=name, number__isnull=False).exclude(mode=mode).exists():
        raise InputError(f"prompt name {name!r} is a prompt of another mode; choose another name")
    try:
        with transaction.atomic():
            latest = PromptTemplate.objects.filter(mode=mode, name=name, number__isnull=False).aggregate(n=Max("number"))["n"]
            template = PromptTemplate.objects.create(
                name=name, mode=mode, number=(latest or 0) + 1, text=text, content_hash=digest,
                created_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
            audit_log_create(
                action=AuditLog.Action.PROMPT_SAVED, actor=actor, subject=f"{mode} prompt {name} {template.label}",
                detail={"mode": mode, "name": name, "number": template.number, "version": template.version},
            )
    except IntegrityError:  # another version saved at the same moment took this number
        raise InputError(f"another version of {name} was saved at the same moment; save again") from None
    return template


def library_versions(*, mode: str, name: str):
    return PromptTemplate.objects.filter(mode=mode, name=name, number__isnull=False).order_by("number")


def library_version_get(*, uuid) -> PromptTemplate | None:
    """A version of a prompt of the library by its uuid (never a built-in's or an adopted text's row); None
    for none, or for a uuid that is not one."""
    try:
        return PromptTemplate.objects.select_related("created_by").filter(uuid=uuid, number__isnull=False).first()
    except (ValueError, ValidationError):
        return None


def library_mode_of(*, name: str) -> str | None:
    """The mode of the library's prompt `name` (a name belongs to one mode), or None when there is none."""
    return PromptTemplate.objects.filter(name=name, number__isnull=False).values_list("mode", flat=True).first()


def prompt_choose(*, mode: str, spec: str | None) -> PromptTemplate | None:
    """The stored prompt `spec` names for a run of `mode`: `NAME` (its latest version) or `NAME@vN`. None for
    no spec or `default`: the run takes its mode's built-in prompt (or what calibration adopted)."""
    spec = (spec or "").strip()
    if not spec or spec == BUILTIN_NAME:
        return None
    name, _, version = spec.partition("@")
    versions = library_versions(mode=mode, name=name)
    if not versions.exists():
        known = sorted(set(PromptTemplate.objects.filter(mode=mode, number__isnull=False).values_list("name", flat=True)))
        offered = ", ".join([BUILTIN_NAME, *known])
        raise InputError(f"no {mode} prompt named {name[:60]!r}; the library has {offered}")
    if not version:
        return versions.last()
    match = re.fullmatch(r"v?([0-9]{1,6})", version)
    template = versions.filter(number=int(match.group(1))).first() if match else None
    if template is None:
        raise InputError(f"prompt {name} has no version {version[:20]!r}; it has {', '.join(t.label for t in versions)}")
    return template


def prompt_entry(template: PromptTemplate | None) -> dict:
    """The report's `prompt`: {name, version, hash}. `default` (version `built-in`) is the mode's seed prompt;
    a prompt of the library is its name and v1, v2…; a text a lead adopted in calibration is `adopted`."""
    if template is None:
        return {"name": None, "version": None, "hash": None}
    if template.number:
        return {"name": template.name, "version": template.label, "hash": template.version}
    # Read from the row, never from today's files (a run resumed after a deploy names what it was judged with):
    # a built-in prompt's row names its file as its source; a text without a number or a file is one a lead
    # adopted for the judge on the calibration page.
    if template.source_path:
        return {"name": BUILTIN_NAME, "version": "built-in", "hash": template.version}
    return {"name": "adopted", "version": "calibration candidate", "hash": template.version}


def library(*, mode: str) -> list[dict]:
    """The mode's prompts as the library page lists them: the built-in first, then each name with its
    versions, newest last."""
    rows = list(
        PromptTemplate.objects.filter(mode=mode, number__isnull=False).select_related("created_by").order_by("name", "number")
    )
    prompts: dict[str, list[PromptTemplate]] = {}
    for row in rows:
        prompts.setdefault(row.name, []).append(row)
    builtin = library_prompt(mode)
    return [{"name": BUILTIN_NAME, "builtin": True, "hash": builtin.version, "text": builtin.text, "versions": []}] + [
        {"name": name, "builtin": False, "hash": versions[-1].version, "versions": versions} for name, versions in prompts.items()
    ]

