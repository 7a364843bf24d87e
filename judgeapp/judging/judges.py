"""The judges file (CONTRACT §1) and the default judge from the environment, loaded into the Judge and
System rows that runs use; and finding a judge or a system by name.

Loading writes, so it happens at a few known moments only: when a command starts (judgeapp/judging/cli.py),
when `up` or a worker starts, and when a reviewer or lead presses "Reload the judges file" on the judges
page. Every load whose content differs from the last one is in the audit log, with its content hash, so a
page can tell — reading only — that the file changed since and offer the reload (`judges_file_status`).
Finding a judge (`judge_get`, `system_get`) only reads.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction

from judgeapp.judging.audit import SYSTEM, audit_log_create
from judgeapp.judging.errors import InputError
from judgeapp.judging.files import text_check, toml_load
from judgeapp.models import AuditLog, EndpointSource, Judge, StructuredOutput, System, content_hash

_KEYS = {"model", "family", "base_url", "api_key_env", "max_concurrency", "structured_output", "timeout_seconds", "max_tokens"}
MAX_TOKENS_LIMIT = 1_000_000
_SYSTEM_KEYS = _KEYS | {"system_prompt"}
# A judge's prices per million tokens, in dollars (judging/costs.py): a system under test is not priced.
PRICE_KEYS = ("input_price_per_million", "output_price_per_million")
PRICE_LIMIT = 100_000
_JUDGE_KEYS = _KEYS | set(PRICE_KEYS)
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


def judges_file_parse(data: bytes, name: str) -> tuple[dict[str, dict], dict[str, dict]]:
    """The judges file's `[judges.<name>]` and `[systems.<name>]` tables, checked."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    doc = toml_load(text, name)
    unknown_tables = set(doc) - {"judges", "systems", "default"}
    if unknown_tables:
        raise InputError(
            f"{name}: unknown table(s) {', '.join(sorted(unknown_tables))}; expected default = \"NAME\", [judges.*], [systems.*]"
        )
    default = doc.get("default")
    if default is not None and (not isinstance(default, str) or default not in (doc.get("judges") or {})):
        known = ", ".join(sorted(doc.get("judges") or {})) or "none"
        raise InputError(f"{name}: default must name one of the file's [judges.*] (known: {known}), not {default!r}")
    parsed: list[dict[str, dict]] = []
    for table, allowed in (("judges", _JUDGE_KEYS), ("systems", _SYSTEM_KEYS)):
        entries = {}
        for entry_name, entry in (doc.get(table) or {}).items():
            where = f"{name} [{table}.{entry_name}]"
            if not _NAME.match(entry_name):
                raise InputError(f"{where}: names may use letters, digits, '-' and '_' only")
            if not isinstance(entry, dict):
                raise InputError(f"{where}: expected a table")
            if "api_key" in entry:
                raise InputError(f"{where}: never put a key in this file; name its environment variable in api_key_env")
            extra = set(entry) - allowed
            if extra:
                raise InputError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
            if not isinstance(entry.get("model"), str) or not entry["model"].strip():
                raise InputError(f"{where}: missing 'model'")
            so = entry.get("structured_output", StructuredOutput.NONE)
            if so not in StructuredOutput.values:
                raise InputError(f"{where}: structured_output must be one of {', '.join(StructuredOutput.values)}")
            mc = entry.get("max_concurrency", settings.JUDGE_MAX_CONCURRENCY)
            if not isinstance(mc, int) or isinstance(mc, bool) or not 1 <= mc <= 10_000:
                raise InputError(f"{where}: max_concurrency must be a positive integer (at most 10,000)")
            timeout = entry.get("timeout_seconds", settings.JUDGE_TIMEOUT_SECONDS)
            if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= 3600:
                raise InputError(f"{where}: timeout_seconds must be a number of seconds between 0 and 3600")
            max_tokens = entry.get("max_tokens")
            if max_tokens is not None and (
                not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or not 1 <= max_tokens <= MAX_TOKENS_LIMIT
            ):
                raise InputError(f"{where}: max_tokens must be a positive integer (at most {MAX_TOKENS_LIMIT:,})")
            for key in PRICE_KEYS:
                if key in entry:
                    entry[key] = price_check(entry[key], where, key)
            # Each text goes into a column of this many characters (judgeapp/models/endpoints.py).
            for key, limit in (
                ("model", 200), ("family", 50), ("base_url", 500), ("api_key_env", 100), ("system_prompt", 100_000)
            ):
                if key in entry:
                    if not isinstance(entry[key], str):
                        raise InputError(f"{where}: {key} must be a text")
                    text_check(entry[key].strip(), where, key, max_length=limit)
            entries[entry_name] = entry
        parsed.append(entries)
    return parsed[0], parsed[1]


def judges_file_default(data: bytes, name: str) -> str | None:
    """The judge the file names as `default = "NAME"` (judges_file_parse checks it), or None."""
    return toml_load(data.decode("utf-8"), name).get("default")


def price_check(value, where: str, key: str) -> Decimal:
    """A price per million tokens from the judges file: dollars, 0 or more, at most PRICE_LIMIT."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or not 0 <= value <= PRICE_LIMIT:
        raise InputError(
            f"{where}: {key} must be a number of dollars per million tokens, from 0 to {PRICE_LIMIT:,} (got {value!r})"
        )
    price = Decimal(str(value))
    if price != price.quantize(Decimal("0.0001")):
        raise InputError(f"{where}: {key} has more than 4 decimal places ({value!r})")
    return price


def _endpoint_fields(entry: dict) -> dict:
    fields = {
        "model": entry["model"].strip(),
        "family": (entry.get("family") or "").strip().lower(),
        "base_url": entry.get("base_url") or "",
        "api_key_env": entry.get("api_key_env") or "OPENAI_API_KEY",
        "max_concurrency": entry.get("max_concurrency", settings.JUDGE_MAX_CONCURRENCY),
        "structured_output": entry.get("structured_output", StructuredOutput.NONE),
        "timeout_seconds": float(entry.get("timeout_seconds", settings.JUDGE_TIMEOUT_SECONDS)),
        "max_tokens": entry.get("max_tokens"),
        "source": EndpointSource.FILE,
    }
    if "system_prompt" in entry:
        fields["system_prompt"] = entry["system_prompt"]
    return fields


def _upsert(model, name: str, fields: dict) -> None:
    # A row edited in the admin is the admin's; the file only owns the rows it created.
    existing = model.objects.filter(name=name).first()
    if existing is None:
        try:
            with transaction.atomic():  # a savepoint: the load's own transaction goes on after a lost race
                model.objects.create(name=name, **fields)
        except IntegrityError:  # another process created it a moment ago
            pass
        return
    if existing.source == EndpointSource.DEMO and fields["source"] != EndpointSource.DEMO:
        # The demo made a judge of this name (the docs' small-a, say); a team's own file takes it over, so
        # that their runs go to their endpoint and not to the scripted demo judge.
        fields = {**fields, "scripted_demo": False}
    if existing.source in (fields["source"], EndpointSource.DEMO):
        changed = [k for k, v in fields.items() if getattr(existing, k) != v]
        if changed:
            for k in changed:
                setattr(existing, k, fields[k])
            existing.save(update_fields=changed + ["updated_at"])


def _default_judge_fields() -> dict | None:
    """The default judge from the environment (JUDGE_MODEL, OPENAI_BASE_URL), or None when unset."""
    if not settings.JUDGE_MODEL:
        return None
    return {
        "model": settings.JUDGE_MODEL,
        "family": settings.JUDGE_FAMILY.lower(),
        "base_url": settings.OPENAI_BASE_URL,
        "api_key_env": "OPENAI_API_KEY",
        "max_concurrency": settings.JUDGE_MAX_CONCURRENCY,
        "structured_output": StructuredOutput.NONE,
        "timeout_seconds": settings.JUDGE_TIMEOUT_SECONDS,
        "source": EndpointSource.ENV,
    }


@dataclass(frozen=True)
class JudgesSource:
    """What a load reads: the judges file's bytes (None when there is no file) and the default judge."""

    path: Path
    data: bytes | None
    default_judge: dict | None

    @property
    def file_hash(self) -> str | None:
        return content_hash(self.data) if self.data is not None else None

    @property
    def default_judge_hash(self) -> str | None:
        return content_hash(self.default_judge) if self.default_judge is not None else None

    @property
    def hash(self) -> str:
        """The content hash of everything a load would write; equal hashes, equal rows."""
        return content_hash({"file": self.file_hash, "default_judge": self.default_judge_hash})

    def parse(self) -> tuple[dict[str, dict], dict[str, dict]]:
        return judges_file_parse(self.data, str(self.path)) if self.data is not None else ({}, {})

    def default_name(self) -> str | None:
        return judges_file_default(self.data, str(self.path)) if self.data is not None else None


def judges_source_read(*, path: str | None = None) -> JudgesSource:
    """Read the judges file (default JUDGES_FILE; a missing default file is no file) and the environment.
    A named file that is missing is an InputError."""
    file_path = Path(path or settings.JUDGES_FILE)
    try:
        data = file_path.read_bytes()
    except FileNotFoundError:
        if path:
            raise InputError(f"{path}: no such judges file") from None
        data = None
    except OSError as exc:
        raise InputError(f"{file_path}: cannot be read ({exc.strerror or exc})") from None
    return JudgesSource(file_path, data, _default_judge_fields())


# What was last loaded, when nothing ever was: no file and no default judge.
_NOTHING = JudgesSource(Path(), None, None)


def judges_last_load() -> AuditLog | None:
    """The audit entry of the latest load that changed what was loaded (None: never loaded)."""
    return (
        AuditLog.objects.filter(action=AuditLog.Action.JUDGES_LOADED).select_related("actor")
        .order_by("-created_at", "-id").first()
    )


def judges_sync(*, path: str | None = None, actor=SYSTEM) -> list[str]:
    """Load the judges file (if there is one) and the default judge from the environment. Writes.

    Returns the names loaded. A missing default file is fine; a named file that is missing, or a file that
    does not parse, is an InputError and nothing is written (the rows of the last good load stay). A row
    edited in the admin is left as the admin made it. A load whose content differs from the last one is
    audited under `actor` (see judgeapp/judging/audit.py for who that is).
    """
    source = judges_source_read(path=path)
    judges, systems = source.parse()
    names: list[str] = []
    with transaction.atomic():
        for name, entry in judges.items():
            # A price left out is no price: a judge whose prices were removed from the file is unpriced again.
            _upsert(Judge, name, _endpoint_fields(entry) | {key: entry.get(key) for key in PRICE_KEYS})
            names.append(name)
        for name, entry in systems.items():
            _upsert(System, name, _endpoint_fields(entry))
            names.append(name)
        if source.default_judge is not None:
            _upsert(Judge, "default", source.default_judge)
            names.append("default")
        judge_default_set(name=source.default_name(), source=EndpointSource.FILE)
        last = judges_last_load()
        if source.hash != (last.detail.get("hash") if last else _NOTHING.hash):
            audit_log_create(
                action=AuditLog.Action.JUDGES_LOADED,
                actor=actor,
                subject=str(source.path),
                reason=f"{len(judges)} judge(s), {len(systems)} system(s)"
                + (", the default judge from JUDGE_MODEL" if source.default_judge is not None else ""),
                detail={
                    "hash": source.hash,
                    "file_hash": source.file_hash,
                    "default_judge_hash": source.default_judge_hash,
                    "judges": sorted(judges),
                    "systems": sorted(systems),
                },
            )
    return names


@dataclass(frozen=True)
class JudgesFileStatus:
    """Whether the judges file (and the default judge) still say what was last loaded. Read only."""

    path: str
    changed: bool
    never_loaded: bool
    loaded_at: datetime | None = None
    loaded_by: str = ""
    error: str = ""  # the file as it is now does not load: why


def judges_file_status() -> JudgesFileStatus:
    """Compare the judges file and the environment with the last load, without writing anything."""
    last = judges_last_load()
    loaded_hash = last.detail.get("hash") if last else _NOTHING.hash
    try:
        source = judges_source_read()
    except InputError as exc:
        return JudgesFileStatus(str(settings.JUDGES_FILE), True, last is None, error=str(exc))
    changed = source.hash != loaded_hash
    error = ""
    if changed:
        try:
            source.parse()
        except InputError as exc:
            error = str(exc)
    return JudgesFileStatus(
        path=str(source.path),
        changed=changed,
        never_loaded=last is None,
        loaded_at=last.created_at if last else None,
        loaded_by=last.actor_label if last else "",
        error=error,
    )


def judge_default_set(*, name: str | None, source: str) -> None:
    """Mark the judge `name` as the one used when none is named (a judges file's `default`, the demo's);
    with no name, a default this source had set is cleared. Writes."""
    if name:
        Judge.objects.filter(is_default=True).exclude(name=name).update(is_default=False)
        Judge.objects.filter(name=name, is_default=False).update(is_default=True)
    else:
        Judge.objects.filter(is_default=True, source=source).update(is_default=False)


def judge_get(*, name: str | None = None) -> Judge:
    """The judge called `name`, or else the default one: the judge from JUDGE_MODEL (the row "default"), the
    one the judges file names as `default = "NAME"`, or the only judge there is. InputError with the known
    names otherwise. Reads only: a command loads the judges file when it starts."""
    if name:
        judge = Judge.objects.filter(name=name).first()
        if judge is None:
            known = ", ".join(Judge.objects.order_by("name").values_list("name", flat=True)) or "none"
            raise InputError(f"unknown judge {name!r} (known: {known}); add it to {settings.JUDGES_FILE} or the admin")
        return judge
    judge = Judge.objects.filter(name="default").first() or Judge.objects.filter(is_default=True).first()
    if judge is not None:
        return judge
    only = list(Judge.objects.order_by("name")[:2])
    if len(only) == 1:
        return only[0]
    if not only:
        raise InputError(
            f"no judge chosen: no judge is configured; add one to {settings.JUDGES_FILE}, or set JUDGE_MODEL (and "
            f"OPENAI_BASE_URL) for a default judge"
        )
    known = ", ".join(Judge.objects.order_by("name").values_list("name", flat=True)[:20])
    raise InputError(
        f"no judge chosen: pass --judge NAME (known: {known}), or name one in {settings.JUDGES_FILE} as default = \"NAME\""
    )


def system_get(*, name: str) -> System:
    """The system under test called `name`; InputError with the known names otherwise. Reads only."""
    system = System.objects.filter(name=name).first()
    if system is None:
        known = ", ".join(System.objects.order_by("name").values_list("name", flat=True)) or "none"
        raise InputError(f"unknown system {name!r} (known: {known}); add it to {settings.JUDGES_FILE} or the admin")
    return system


def endpoint_identity(endpoint: Judge | System) -> tuple[str, str]:
    """(base URL, model): who answers a call, whatever family the endpoint declares, each spelled one way
    (judgeapp/models/identity.py: every comparison of two endpoints goes through this)."""
    return endpoint.identity(settings.OPENAI_BASE_URL or "")


def identity_label(endpoint: Judge | System) -> str:
    base_url, model = endpoint_identity(endpoint)
    return f"model {model} at {base_url}"


def judge_not_system_check(*, judge: Judge, systems) -> None:
    """Refuse (InputError, one line) a judge that is the system under test itself: the same model at the
    same server, whatever families the two declare."""
    for system in systems:
        if system is not None and endpoint_identity(judge) == endpoint_identity(system):
            raise InputError(
                f"judge {judge.name} is the system under test {system.name} itself ({identity_label(judge)}), "
                f"whatever family each declares; choose a judge that is another model"
            )


def family_warnings(endpoints) -> list[str]:
    """A warning for each endpoint whose declared family its model name contradicts, and for each model
    (one identity, however spelled) declared as two families."""
    endpoints = [e for e in endpoints if e is not None]
    warnings = [
        f"{e.name}: declared family {e.family.lower()!r}, but its model name {e.model!r} looks like {e.guessed_family!r}"
        for e in endpoints
        if e.family_mismatch
    ]
    by_identity: dict[tuple[str, str], list] = {}
    for endpoint in endpoints:
        by_identity.setdefault(endpoint_identity(endpoint), []).append(endpoint)
    for members in by_identity.values():
        families = sorted({m.effective_family for m in members})
        if len(families) > 1:
            warnings.append(
                f"{' and '.join(m.name for m in members)} are one model ({identity_label(members[0])}) declared as "
                f"families {' and '.join(repr(f) for f in families)}"
            )
    return warnings
