"""What the app already knows before a run starts: warnings shown in the form (as its fields change) and
on the command line (one line each on stderr), and the one problem that refuses the run outright.

`endpoint_warnings` reads only the endpoint and the environment; the calibration status of each judge comes
from `calibration/selectors/status.py: preflight_for_run`, which every mode's form and command call.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from judgeapp.models import EndpointSource


def is_imported(endpoint) -> bool:
    """A judge that ran elsewhere (its verdicts brought in): there is nothing to call."""
    return endpoint.source == EndpointSource.IMPORT


def imported_refusal(judges: Iterable) -> str | None:
    """The one line that refuses a run: a judge with no endpoint (imported verdicts) cannot judge here."""
    names = [judge.name for judge in judges if judge is not None and is_imported(judge)]
    if not names:
        return None
    return (f"{', '.join(names)}: an imported judge (its verdicts were brought in) has no endpoint to call; "
            "choose a judge from the judges file")


def _local(base_url: str) -> bool:
    """A server on this machine (vLLM, Ollama, llama.cpp, the demo judge) usually needs no key."""
    host = urlsplit(base_url).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def endpoint_warnings(endpoint, *, role: str = "judge") -> list[str]:
    """The endpoint's own problems: imported with no endpoint, its key's variable not set (a server on this
    machine is taken to need none)."""
    if is_imported(endpoint):
        return [f"{role} {endpoint.name} is imported: it has no endpoint to call"]
    if endpoint.api_key_env and not os.environ.get(endpoint.api_key_env) and not _local(endpoint.base_url):
        return [
            f"{role} {endpoint.name}: its key variable {endpoint.api_key_env} is not set, so its server will refuse every call"
        ]
    return []


@dataclass(frozen=True)
class Warning:
    """One line said before a run starts; `confirm`: the browser asks "start anyway?" before starting."""

    text: str
    confirm: bool = True

    def __str__(self) -> str:
        return self.text


def run_warnings(
    *,
    judges: Iterable,
    systems: Iterable = (),
    pair: tuple | None = None,
    status_of: Callable[[object], dict | None] = lambda judge: None,
) -> list[Warning]:
    """Every warning about a run about to start, in the order a reviewer reads them. A judge never
    calibrated is said, not asked about: on a new install every judge is.

    `pair`: the two sides of a comparison (systems) when the kind compares two;
    `status_of(judge)`: the judge's calibration status (calibration.selectors.status.status_for_judge).
    """
    judges = [j for j in judges if j is not None]
    systems = [s for s in systems if s is not None]
    warnings: list[Warning] = []
    if pair is not None and pair[0] is not None and pair[0] == pair[1]:
        warnings.append(Warning(f"A and B are the same ({pair[0]}): the comparison can only end in ties"))
    for judge in judges:
        warnings += [Warning(line) for line in endpoint_warnings(judge)]
        if is_imported(judge):
            continue
        status = status_of(judge) or {}
        if status.get("status") == "below level — locked":
            warnings.append(
                Warning(
                    f"judge {judge.name} is locked by calibration (it agreed with people below the set "
                    f"level): its runs cannot pass a gate"
                )
            )
        elif status.get("status") == "undecided":
            # Its agreement interval reaches across the level: said with the planning figure, an estimate.
            plan = (status.get("planning") or {}).get("text") or "more labelled items would settle it"
            warnings.append(
                Warning(
                    f"judge {judge.name} is undecided by calibration (its agreement interval reaches across the level): {plan}",
                    confirm=False
                )
            )
        elif status.get("status") == "not calibrated":
            warnings.append(Warning(f"judge {judge.name} is not calibrated: no person has scored a sample of it", confirm=False))
        for system in systems:
            if judge.effective_family and judge.effective_family == system.effective_family:
                warnings.append(
                    Warning(
                        f"judge {judge.name} is of {system.name}'s family ({system.effective_family}): it may "
                        f"favour its own family's replies"
                    )
                )
    for system in systems:
        warnings += [Warning(line) for line in endpoint_warnings(system, role="system")]
    return list(dict.fromkeys(warnings))
