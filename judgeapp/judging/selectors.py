"""Reads. Other apps (calibration) read judgeapp's data through these functions only."""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import PurePath

from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from judgeapp.judging.errors import InputError
from judgeapp.judging.leakage.names import KnownName, version_names
from judgeapp.models import AuditLog, Case, Criterion, Judge, Judgment, Output, Run, RunKind, RunStatus, RunTag, System, TestSet


@dataclass(frozen=True)
class LargeRunLimits:
    calls: int
    cost: Decimal


def large_run_limits_get() -> LargeRunLimits:
    """Above how many judge calls, or dollars, a run started from a page asks first: what a lead set in the
    release policy, else the deployment's LARGE_RUN_CALLS and LARGE_RUN_COST."""
    from django.conf import settings

    from judgeapp.models import ReleasePolicy

    policy = ReleasePolicy.objects.order_by("-created_at", "-id").values("large_run_calls", "large_run_cost").first() or {}
    calls, cost = policy.get("large_run_calls"), policy.get("large_run_cost")
    return LargeRunLimits(
        calls=settings.LARGE_RUN_CALLS if calls is None else calls,
        cost=settings.LARGE_RUN_COST if cost is None else cost,
    )


def run_list(*, kind: str | None = None, limit: int = 50) -> QuerySet[Run]:
    runs = Run.objects.select_related("judge", "system", "created_by")
    if kind:
        runs = runs.filter(kind=kind)
    return runs.order_by("-created_at")[:limit]


def run_list_for_search(
    *,
    q: str = "",
    kind: str | None = None,
    system: str | None = None,
    testset: str | None = None,
    tag: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[Run]:
    """Runs newest first, filtered on what a run stores: `q` in its title, id, system, test set or judge (a
    jury's juror by exact name), its kind, a system (a pairwise run's A or B side too), a test set's name, a
    tag, created in [since, until). One query; the run's judge, system and test set come with it, its tags
    prefetched."""
    runs = Run.objects.select_related("judge", "system", "testset", "created_by").prefetch_related(
        Prefetch("tags", queryset=RunTag.objects.order_by("name"))
    )
    if q:
        runs = runs.filter(
            Q(title__icontains=q) | Q(run_id__icontains=q) | Q(system__name__icontains=q) | Q(system__model__icontains=q)
            | Q(testset__name__icontains=q) | Q(judge__name__icontains=q) | Q(config__judges__has_key=q)
            | Q(config__options__versions__A__system__icontains=q) | Q(config__options__versions__B__system__icontains=q)
        )
    if kind:
        runs = runs.filter(kind=kind)
    if system:
        runs = runs.filter(
            Q(system__name=system) | Q(config__options__versions__A__system=system)
            | Q(config__options__versions__B__system=system)
        )
    if testset:
        runs = runs.filter(testset__name=testset)
    if tag:
        runs = runs.filter(Exists(RunTag.objects.filter(run=OuterRef("pk"), name=tag)))
    if since:
        runs = runs.filter(created_at__gte=since)
    if until:
        runs = runs.filter(created_at__lt=until)
    return runs.order_by("-created_at", "-id")


def testset_names_list() -> list[str]:
    """The test sets' names, for a filter's choices."""
    return list(TestSet.objects.order_by("name").values_list("name", flat=True).distinct())


def tag_names_list(*, limit: int = 500) -> list[str]:
    """The tags in use, for a filter's choices."""
    return list(RunTag.objects.order_by("name").values_list("name", flat=True).distinct()[:limit])


def run_get(*, run_id: str) -> Run:
    return get_object_or_404(Run.objects.select_related("judge", "system", "testset", "rubric", "prompt"), run_id=run_id)


def run_get_for_id(*, run_id: str) -> Run | None:
    return Run.objects.select_related("judge", "system", "testset", "rubric", "prompt").filter(run_id=run_id).first()


def judgments_for_run(*, run: Run) -> QuerySet[Judgment]:
    return run.judgments.select_related("case", "criterion", "judge", "system").order_by("stage", "id")


def endpoint_list() -> tuple[QuerySet[Judge], QuerySet[System]]:
    return Judge.objects.order_by("name"), System.objects.order_by("name")


def outputs_for_run(*, run: Run) -> QuerySet[Output]:
    """The replies a run judged, beside their inputs: slot '' (pointwise, jury) or 'A'/'B' (pairwise)."""
    return run.outputs.select_related("case").order_by("case__position", "slot")


def verdicts_for_run(*, run: Run):
    """Every judge verdict of a finished run (judgeapp.judging.runkind.Verdict), for calibration."""
    from judgeapp.judging.runkind import Verdict, handler_for

    imported = run.config.get("imported")
    if imported:
        # A run judged elsewhere (PandaLM's GPT-3.5 verdicts): its verdicts are the ones in its report.
        return [
            Verdict(case_id=c["case_id"], criterion="", judge=imported["judge"], value=c["verdict"])
            for c in (run.report or {}).get("cases", [])
            if c.get("verdict") is not None
        ]
    return handler_for(run.kind).verdicts(run)


def unusable_for_run(*, run: Run) -> list[tuple[str, str, str]]:
    """The (case id, criterion, judge) of a finished run on which a judge gave no usable verdict (see
    RunHandler.unusable), for calibration. A run judged elsewhere and imported (PandaLM) has none: its
    verdicts are those it was published with."""
    from judgeapp.judging.runkind import handler_for

    if run.config.get("imported"):
        return []
    return handler_for(run.kind).unusable(run)


def unanswered_for_run(*, run: Run) -> list[tuple[str, str, str]]:
    """The (case id, criterion, judge) of a run judged elsewhere and imported (PandaLM) whose published reply
    gave no usable verdict: what calibration's handling alternatives count (its own figure leaves them out)."""
    imported = run.config.get("imported")
    if not imported:
        return []
    return [(c["case_id"], "", imported["judge"]) for c in (run.report or {}).get("cases", []) if c.get("verdict") is None]


def label_kind_for_run(*, run: Run) -> str | None:
    from judgeapp.judging.runkind import handler_for

    imported = run.config.get("imported")
    if imported:
        return imported["label_kind"]
    try:
        return handler_for(run.kind).label_kind
    except LookupError:  # a kind with no handler in this build labels nothing
        return None


def criteria_for_run(*, run: Run) -> list[Criterion]:
    """The rubric criteria a run judged on, in rubric order (empty for a run without a rubric)."""
    return list(run.rubric.criteria.order_by("position")) if run.rubric_id else []


def finished_run_list(*, kinds: list[str] | None = None, limit: int = 200) -> QuerySet[Run]:
    """Finished runs with a report, newest first (the runs a calibration sample can be drawn from)."""
    runs = Run.objects.filter(status__in=[RunStatus.DONE, RunStatus.INVALID]).select_related("judge", "system")
    if kinds is not None:
        runs = runs.filter(kind__in=kinds)
    return runs.order_by("-created_at")[:limit]


def audit_list(*, action_prefix: str = "", limit: int = 20) -> QuerySet[AuditLog]:
    """The latest audit entries, optionally of one family of actions ("calibration.")."""
    entries = AuditLog.objects.select_related("actor", "run")
    if action_prefix:
        entries = entries.filter(action__startswith=action_prefix)
    return entries.order_by("-created_at", "-id")[:limit]


def case_for_run(run: Run, case_id: str) -> Case:
    """A case of the run's test set by its id; 404 when the test set has none."""
    case = Case.objects.filter(testset_id=run.testset_id, case_id=case_id).first()
    if case is None:
        raise Http404(f"no case {case_id!r} in run {run.run_id}")
    return case


def neighbours_for_case(report: dict | None, case_id: str) -> tuple[str | None, str | None]:
    """The case ids before and after `case_id` in the report's case list (the page's previous / next)."""
    ids = [c["case_id"] for c in (report or {}).get("cases", [])]
    if case_id not in ids:
        return None, None
    i = ids.index(case_id)
    return (ids[i - 1] if i > 0 else None), (ids[i + 1] if i + 1 < len(ids) else None)


def known_names_for_run(*, run: Run | None = None) -> list[KnownName]:
    """Every name whose mention would tell a reader which configuration produced a text: the configured
    systems and judges (names and models), those of the judges file as it is now (read, not loaded: a
    system named only there is known too, and a read writes nothing), and, for a run, its own versions (a
    pairwise run's outputs files and systems)."""
    from judgeapp.judging.judges import judges_source_read

    names: list[KnownName] = []
    if run is not None:
        versions = run.options.get("versions") or {}
        files = [PurePath(v["file"]).stem for v in versions.values() if isinstance(v, dict) and v.get("file")]
        names += version_names(files)
    try:
        file_judges, file_systems = judges_source_read().parse()
    except InputError:  # a bad judges file: the rows of its last good load still name everything it named
        file_judges, file_systems = {}, {}
    # dict.fromkeys: each (name, model) once, in order; a file entry edited since the load adds its new model.
    systems = dict.fromkeys(
        [(s.name, s.model) for s in System.objects.order_by("name")] + [(n, e["model"]) for n, e in file_systems.items()]
    )
    judges = dict.fromkeys(
        [(j.name, j.model) for j in Judge.objects.order_by("name")] + [(n, e["model"]) for n, e in file_judges.items()]
    )
    for name, model in systems:
        names += [KnownName(name, "configured system"), KnownName(model, f"model of the system {name!r}")]
    for name, model in judges:
        names += [KnownName(name, "configured judge"), KnownName(model, f"model of the judge {name!r}")]
    return names


# --- The judge check-up, part of a judge version's record (judgeapp/checkup/) -----------------------------
# Here rather than in judgeapp/checkup/ because the judges page and the judge's scorecard (judgeapp/web/)
# show it, and no mode imports another.

CHECKUP_FIGURES = ("accuracy_consistent", "accuracy_all", "position_consistency", "kappa")


@dataclass(frozen=True)
class CheckupRecord:
    """The latest finished check-up of a judge: what it found, on which version of the judge, and whether
    the judge's configuration changed since (stale: the figures describe another configuration)."""

    run_id: str
    status: str
    finished_at: object
    judge_name: str
    checked_version: str | None  # Judge.version when the check-up ran
    current_version: str | None  # Judge.version now
    sets: dict  # set name -> {pairs, and each of CHECKUP_FIGURES: {value, ci95}}, in the order the run chose
    calls: dict
    invalid_reasons: tuple[str, ...] = ()  # why the check-up is invalid (too many unusable replies)

    @property
    def invalid(self) -> bool:
        return self.status == RunStatus.INVALID or bool(self.invalid_reasons)

    @property
    def stale(self) -> bool:
        return self.checked_version != self.current_version

    @property
    def state(self) -> str:
        return "stale" if self.stale else "current"


def _checkup_record(run: Run, current_version: str | None) -> CheckupRecord:
    report = run.report or {}
    sets = {}
    entries = report.get("sets") or {}
    # PostgreSQL's jsonb keeps an object's keys in its own order: the report names the run's order.
    for name in [n for n in report.get("set_order") or [] if n in entries] or list(entries):
        entry = entries[name]
        figures = entry.get("figures", {})
        sets[name] = {"pairs": entry.get("counts", {}).get("pairs"), "sha256": entry.get("sha256"),  # a team's own set: its hash
                      **{f: {k: figures.get(f, {}).get(k) for k in ("value", "ci95")} for f in CHECKUP_FIGURES}}
    return CheckupRecord(
        run_id=run.run_id,
        status=run.status,
        finished_at=run.finished_at,
        judge_name=run.judge.name if run.judge else "",
        checked_version=run.versions.get("judge"),
        current_version=current_version,
        sets=sets,
        calls=report.get("calls", {}),
        invalid_reasons=tuple(report.get("invalid_reasons") or ()),
    )


def checkups_for_configurations(configurations: dict[str, str | None]) -> dict[str, CheckupRecord | None]:
    """{judge name: configuration version} -> the latest finished check-up of that configuration of the
    judge; where it has none, the judge's latest under any configuration (stale); None when the judge was
    never checked up. Two queries: the check-ups' versions, then the reports of those chosen."""
    latest: dict[str, CheckupRecord | None] = dict.fromkeys(configurations)
    finished = Run.objects.filter(
        kind=RunKind.CHECKUP, judge__name__in=list(configurations), status__in=[RunStatus.DONE, RunStatus.INVALID]
    )
    chosen: dict[str, int] = {}
    own: set[str] = set()
    for pk, name, versions in finished.order_by("-finished_at", "-created_at").values_list("pk", "judge__name", "versions"):
        if name in own:
            continue
        if (versions or {}).get("judge") == configurations[name]:
            chosen[name] = pk
            own.add(name)
        else:
            chosen.setdefault(name, pk)
    for run in Run.objects.filter(pk__in=chosen.values()).select_related("judge"):
        latest[run.judge.name] = _checkup_record(run, configurations[run.judge.name])
    return latest


def latest_checkups_for_judges(*, judges) -> dict[str, CheckupRecord | None]:
    """The latest finished check-up of each judge in its configuration now, by name (stale: of an earlier
    configuration, where the current one has none; None: never checked up)."""
    return checkups_for_configurations({j.name: j.version for j in judges})


def latest_checkup_for_judge(judge_name: str, judge_version: str | None = None) -> CheckupRecord | None:
    """The latest finished check-up of the judge `judge_name` in the configuration `judge_version` (default:
    the judge's version now); where that configuration has none, the judge's latest under another one,
    stale. None when it was never checked up."""
    if judge_version is None:
        judge = Judge.objects.filter(name=judge_name).first()
        if judge is None:
            return None
        judge_version = judge.version
    return checkups_for_configurations({judge_name: judge_version})[judge_name]


def checkups_in_progress_for_judges(*, judges) -> dict[str, str]:
    """Judge name -> the run id of its check-up still queued or running (the newest)."""
    running = {}
    for judge_name, run_id in (
        Run.objects.filter(
            kind=RunKind.CHECKUP, judge__name__in=[j.name for j in judges], status__in=[RunStatus.QUEUED, RunStatus.RUNNING]
        )
        .order_by("created_at")
        .values_list("judge__name", "run_id")
    ):
        running[judge_name] = run_id
    return running


def reasonings_for_run(*, run: Run) -> dict[tuple[str, str], str]:
    """{(case id, criterion name or ""): the judge's reasoning} of a run's scored judgments."""
    rows = run.judgments.filter(purpose="judge", status="done").values_list("case__case_id", "criterion__name", "parsed")
    return {(case_id, criterion or ""): (parsed or {}).get("reasoning", "") for case_id, criterion, parsed in rows}


def noise_for_run(*, run: Run, rule: str = "majority", positive=None, tie=None, mapped=None) -> dict | None:
    """The report's `noise` key (judging/noise.py): None when the run asked each judgment once. `mapped(order,
    verdict)` reads an order's verdict as the version it names (both-order kinds), so that the band is A's share."""
    from judgeapp.judging.noise import NoiseItem, noise_report

    trials = run.options.get("trials") or 1
    if trials < 2:
        return None
    units = run.judgments.filter(purpose="judge").order_by("stage", "id")
    items = []
    for case_id, criterion, order, judge, recorded in units.values_list(
        "case__case_id", "criterion__name", "order", "judge__name", "trials"
    ).iterator(chunk_size=2000):
        verdicts = [None] * trials
        for trial in recorded or []:
            number, verdict = trial.get("trial"), trial.get("verdict")
            if isinstance(number, int) and 1 <= number <= trials and verdict is not None:
                verdicts[number - 1] = mapped(order, verdict) if mapped and order else verdict
        items.append(NoiseItem(case_id=case_id or "", criterion=criterion or "", verdicts=verdicts, judge=judge or ""))
    return noise_report(items, trials=trials, rule=rule, positive=positive, tie=tie, tags=case_tags_for_run(run=run))


def case_tags_for_run(*, run: Run) -> dict[str, list[str]]:
    """{case id: its tags} of the cases of a run's test set that carry tags (calibration's slices)."""
    if not run.testset_id:
        return {}
    return {
        case_id: extra["tags"]
        for case_id, extra in Case.objects.filter(testset_id=run.testset_id, extra__has_key="tags").values_list(
            "case_id", "extra"
        )
    }


def output_set_list(*, system: System | None = None, limit: int = 200):
    from judgeapp.models import OutputSet

    found = OutputSet.objects.select_related("system", "testset", "created_by")
    if system is not None:
        found = found.filter(system=system)
    return found.order_by("-created_at", "-pk")[:limit]


def version_numbers_for_model(model) -> dict[int, int]:
    """Each stored version's number within its name (v1, v2… by when it was stored): {pk: number}. One query
    of two columns (a form's picker and the datasets page read it once)."""
    numbers, seen = {}, {}
    for pk, name in model.objects.order_by("name", "created_at", "pk").values_list("pk", "name"):
        seen[name] = seen.get(name, 0) + 1
        numbers[pk] = seen[name]
    return numbers


def testsets_for_runs():
    """The test sets a run form offers: not the check-up's public pair sets (a run of its own kind reads them)."""
    from judgeapp.models import TestSet

    checkup_sets = Run.objects.filter(kind=RunKind.CHECKUP, testset__isnull=False).values("testset_id")
    return TestSet.objects.exclude(pk__in=checkup_sets).order_by("name", "-created_at")


def output_set_for_system(*, system: System, testset, version_label: str | None = None):
    """The outputs stored for a system on this test set's content (a stored TestSet or a file given, by its
    hash): the version labelled `version_label`, else the newest. None when there is none."""
    from judgeapp.models import OutputSet, TestSet, content_hash

    digest = testset.content_hash if isinstance(testset, TestSet) else content_hash(testset.data)
    found = OutputSet.objects.filter(system=system, testset__content_hash=digest).select_related(
        "system", "testset", "created_by"
    )
    if version_label:
        found = found.filter(version_label=version_label.strip())
    return found.order_by("-created_at", "-pk").first()


def report_for_unfinished_run(*, run: Run) -> dict:
    """The report of a run that has none (not finished yet, failed, cancelled): its id, kind, status and
    reason, and the counts of the judge units it made (CONTRACT §6), which add up as a finished report's do.
    Every judge call counts (a derived rubric's too; a system's generated output is no judge call); units
    never asked (pending, or cancelled when the run stopped) do not: each count is a reply the judge gave or
    did not give."""
    from judgeapp.judging.accounting import counts_of
    from judgeapp.judging.runkind import UNIT_REPORT_FIELDS
    from judgeapp.models import Purpose, UnitStatus

    asked = run.judgments.exclude(purpose=Purpose.GENERATE).filter(status__in=[UnitStatus.DONE, UnitStatus.FAILED])
    report = {"run_id": run.run_id, "kind": run.kind, "status": run.status, "counts": counts_of(asked.only(*UNIT_REPORT_FIELDS))}
    if run.error:
        report["error"] = run.error
    return report
