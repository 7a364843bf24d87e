"""Demo data, so that a new user sees every mode before configuring anything.

Everything here is judged by the repo's scripted demo judge server (fakejudge), never by a language model,
and every judge it creates is marked `scripted_demo` so that each page and report says so. The one
exception is real data: the PandaLM import brings a real GPT-3.5 judge's verdicts and real human labels.

`demo_load()` is idempotent: a step whose run already exists is skipped. Each mode adds its step to STEPS.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

from django.contrib.auth.models import Group, User

from judgeapp.demo.registry import EVALS, STEPS, DemoContext, step  # noqa: F401  (the steps' registry)
from judgeapp.judging.judges import judge_default_set, judges_file_default, judges_file_parse
from judgeapp.models import EndpointSource, Judge, Run, System
from judgeapp.roles import Role

DEMO_PASSWORD_SUFFIX = "-demo-password"
# How `up` starts the scripted demo judge (python -m fakejudge): now and then a random verdict, as a real
# judge errs; and pointwise scores read per criterion, so that people labelling the demo's calibration sample
# as they read the replies calibrate it (README, "The calibration loop").
DEMO_JUDGE_NOISE = 0.08
DEMO_JUDGE_OPTIONS = ("--noise", str(DEMO_JUDGE_NOISE), "--rubric-aware")
# One scripted judge per family, so that the jury demo has a panel of different families.
DEMO_JUDGES = [
    ("demo-judge", "demo-judge-qwen2.5-7b", "qwen"),
    ("demo-juror-llama", "demo-judge-llama-3.1-8b", "meta"),
    ("demo-juror-mistral", "demo-judge-mistral-7b", "mistral"),
    ("demo-juror-gemma", "demo-judge-gemma-2-9b", "google"),
]
# Example prices per million tokens (input, output), in dollars, so that the demo's reports show a cost: about
# what a hosted 7-9B model costs; the scripted server itself charges nothing.
DEMO_PRICES = (Decimal("0.20"), Decimal("0.60"))
DEMO_SYSTEMS = [
    ("support-bot-v1", "gpt-4o-mini", "openai", "You are a support assistant. Be brief."),
    ("support-bot-v2", "gpt-4o-mini", "openai", "You are a support assistant. Give concrete next steps and say what to expect."),
]


# Every account the demo makes, in the order `up` prints them. `annotator` and `annotator2` share the demo's
# calibration sample (calibration/demo.py, DEMO_ANNOTATORS); `annotator3` starts with an empty queue, for a
# lead to give a sample of their own (a database from before the sample grew may still queue items for it).
DEMO_ACCOUNTS = [
    ("lead", Role.LEAD),
    ("reviewer", Role.REVIEWER),
    ("annotator", Role.ANNOTATOR),
    ("annotator2", Role.ANNOTATOR),
    ("annotator3", Role.ANNOTATOR),
]


def demo_users() -> list[tuple[str, str, str]]:
    """(username, password, role) of the demo accounts that log in with the demo password, created if missing.

    An account that already existed keeps its password: one changed since (or made unusable) is left out,
    so that every account printed logs in with what is printed."""
    accounts = []
    for username, role in DEMO_ACCOUNTS:
        password = f"{username}{DEMO_PASSWORD_SUFFIX}"
        user, created = User.objects.get_or_create(username=username)
        if created:
            user.set_password(password)
            user.save()
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        if role == Role.LEAD and not user.is_staff:
            # The README sends people to /admin/ to edit judges and groups: the demo's lead may open it.
            user.is_staff = user.is_superuser = True
            user.save(update_fields=["is_staff", "is_superuser"])
        if created or (user.is_active and user.check_password(password)):
            accounts.append((username, password, str(role)))
    return accounts


# The judges the README and the docs name (small-a, the default; qwen-7b, llama-8b, mistral-7b for a jury…).
DEMO_JUDGES_FILE = Path(__file__).with_name("judges.toml")


def _demo_endpoint_fields(*, model: str, family: str, judge_url: str) -> dict:
    """The fields a scripted demo judge and a demo system share: both answer from the demo judge server."""
    return {
        "model": model,
        "family": family,
        "base_url": judge_url,
        "api_key_env": "DEMO_JUDGE_KEY",
        "source": EndpointSource.DEMO,
        "scripted_demo": True,
    }


def _demo_judge_save(name: str, *, model: str, family: str, judge_url: str, prices: tuple) -> Judge:
    """One scripted demo judge at the demo judge server, made or brought up to date; `prices`: (input, output)
    per million tokens."""
    judge, _ = Judge.objects.update_or_create(
        name=name,
        defaults={
            **_demo_endpoint_fields(model=model, family=family, judge_url=judge_url),
            "timeout_seconds": 10,
            "input_price_per_million": prices[0],
            "output_price_per_million": prices[1],
        },
    )
    return judge


def demo_docs_judges(judge_url: str) -> list[Judge]:
    """The demo's judges file loaded, every judge at the demo judge server; its `default` becomes the judge a
    command uses without --judge, unless another default is set already (a team's own judges file's)."""
    data = DEMO_JUDGES_FILE.read_bytes()
    entries, _systems = judges_file_parse(data, str(DEMO_JUDGES_FILE))
    judges = []
    for name, entry in entries.items():
        existing = Judge.objects.filter(name=name).first()
        if existing is not None and existing.source != EndpointSource.DEMO:
            continue  # a team's own judge of that name (its judges file's, the admin's) stays as it is
        prices = (entry.get("input_price_per_million"), entry.get("output_price_per_million"))
        judges.append(_demo_judge_save(name, model=entry["model"], family=entry.get("family", ""), judge_url=judge_url,
                                       prices=prices))
    default = judges_file_default(data, str(DEMO_JUDGES_FILE))
    if default and not Judge.objects.filter(is_default=True).exists():
        judge_default_set(name=default, source=EndpointSource.DEMO)
    return judges


def demo_endpoints(judge_url: str) -> tuple[list[Judge], list[System]]:
    judges = []
    for name, model, family in DEMO_JUDGES:
        judges.append(_demo_judge_save(name, model=model, family=family, judge_url=judge_url, prices=DEMO_PRICES))
    systems = []
    for name, model, family, prompt in DEMO_SYSTEMS:
        system, _ = System.objects.update_or_create(
            name=name,
            defaults={**_demo_endpoint_fields(model=model, family=family, judge_url=judge_url), "system_prompt": prompt},
        )
        systems.append(system)
    return judges, systems


def demo_load(*, judge_url: str, log: Callable[[str], None] = print) -> None:
    # Importing the steps registers them.
    from judgeapp.demo import steps  # noqa: F401

    accounts = demo_users()
    judges, systems = demo_endpoints(judge_url)
    demo_docs_judges(judge_url)
    context = DemoContext(
        judge_url=judge_url, judge=judges[0], jurors=judges[1:], systems=systems, lead=User.objects.get(username="lead")
    )
    for run_id, function in STEPS:
        if Run.objects.filter(run_id=run_id).exists():
            continue
        message = function(context)
        if message:
            log(message)
    log("demo accounts: " + ", ".join(f"{u} / {p} ({r})" for u, p, r in accounts))
    from calibration.demo import calibration_demo_next_steps

    for line in calibration_demo_next_steps():
        log(line)
