"""What a run's judge calls used and cost (every report's `usage`), what a run's units have cost so far (its
budget), and the estimate made from a run's inputs before it starts (no judge call).

Prices are per million tokens, in the judges' price currency (USD), on the Judge row (the judges file's
`input_price_per_million` and `output_price_per_million`, or the admin). A judgment answered wholly from
the response cache cost nothing; any other is paid in full, its parse retry and every trial included (a
trial answered from the cache inside a paid judgment is counted as paid: the tokens of a judgment are
recorded as one sum). A report's `cost` is null when a judge it used has no price.

Only the judge's calls are counted: a system under test asked for its outputs (generation units) is not a
judge and is not in `usage`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from django.db.models import Count, Q, Sum
from django.db.models.functions import Coalesce

from judgeapp.judging.accounting import money_text
from judgeapp.models import Judge, Judgment, Run, StopReason

MILLION = Decimal(1_000_000)
# Reports and pages show money to the hundredth of a cent; the budget is compared unrounded.
COST_PLACES = Decimal("0.000001")


def prices_of(judge: Judge | None) -> tuple[Decimal, Decimal] | None:
    """(input, output) dollars per million tokens, or None for an unpriced judge."""
    if judge is None or judge.input_price_per_million is None or judge.output_price_per_million is None:
        return None
    return judge.input_price_per_million, judge.output_price_per_million


def tokens_cost(input_tokens: int, output_tokens: int, prices: tuple[Decimal, Decimal]) -> Decimal:
    return (Decimal(input_tokens) * prices[0] + Decimal(output_tokens) * prices[1]) / MILLION


def unit_cost(unit: Judgment, fields: dict) -> Decimal:
    """What one recorded judgment cost (`fields`: what is written on it). An unpriced judge's cost nothing
    here: a budget needs every judge priced (`budget_check`), so it never reads one."""
    prices = prices_of(unit.judge) if unit.judge_id else None
    if prices is None or fields.get("cached"):
        return Decimal(0)
    return tokens_cost(fields.get("prompt_tokens") or 0, fields.get("completion_tokens") or 0, prices)


def money(value: Decimal | None) -> float | None:
    """A cost as a report's JSON number (dollars, to the millionth)."""
    return None if value is None else float(value.quantize(COST_PLACES, rounding=ROUND_HALF_UP))


def run_usage(*, run: Run) -> dict:
    """`usage`: {calls, cached, input_tokens, output_tokens, cost} over the run's judge units. `calls` is the
    HTTP requests made to the judges, retries (429, 5xx, timeouts) and parse retries included; `cached`
    the judgments answered from the response cache (no request); the tokens are every judgment's, cached
    ones included (what the judge read and wrote for this run's verdicts); `cost` is what the requests
    cost, null when a judge used has no price."""
    rows = (
        Judgment.objects.filter(run=run, judge__isnull=False)
        .values("judge_id")
        .annotate(
            # Named apart from the `cached` column: an annotation of its name would stand for it in the filters.
            paid_in=Coalesce(Sum("prompt_tokens", filter=Q(cached=False)), 0),
            paid_out=Coalesce(Sum("completion_tokens", filter=Q(cached=False)), 0),
            calls=Coalesce(Sum("attempts"), 0),
            cached_units=Count("id", filter=Q(cached=True)),
            input_tokens=Coalesce(Sum("prompt_tokens"), 0),
            output_tokens=Coalesce(Sum("completion_tokens"), 0),
        )
        .order_by("judge_id")
    )
    rows = list(rows)
    judges = Judge.objects.in_bulk([row["judge_id"] for row in rows])
    usage = {"calls": 0, "cached": 0, "input_tokens": 0, "output_tokens": 0}
    cost: Decimal | None = Decimal(0)
    for row in rows:
        row["cached"] = row.pop("cached_units")
        for key in usage:
            usage[key] += row[key]
        prices = prices_of(judges.get(row["judge_id"]))
        if prices is None:
            cost = None
        elif cost is not None:
            cost += tokens_cost(row["paid_in"], row["paid_out"], prices)
    return {**usage, "cost": money(cost)}


# --- The budget -----------------------------------------------------------------------------------------


def budget_check(*, budget, judges) -> Decimal | None:
    """A run's budget as given (--budget, a form's or the API's field): a number of dollars above 0, and every
    judge the run uses priced. None: no budget."""
    from judgeapp.judging.errors import InputError

    if budget is None or budget == "":
        return None
    try:
        value = Decimal(str(budget))
    except ArithmeticError:
        raise InputError(f"the budget {budget!r} is not a number of dollars") from None
    if not value.is_finite() or value <= 0 or value >= Decimal("1e8"):
        raise InputError(f"the budget must be a number of dollars above 0 (below 100,000,000), not {budget}")
    unpriced = [judge.name for judge in judges if judge is not None and prices_of(judge) is None]
    if unpriced:
        raise InputError(
            f"a budget needs prices for every judge, and judge {', '.join(unpriced)} has none: set input_price_per_million "
            "and output_price_per_million in the judges file (or the admin)"
        )
    return value.quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP)


def budget_reached(run_pk: int, unrecorded: Decimal = Decimal(0)) -> bool:
    """Whether the run's units have cost its budget: those recorded (`Run.spent`) and those this caller
    judged and has not recorded yet (`unrecorded`). False for a run without a budget."""
    row = Run.objects.filter(pk=run_pk).values("budget", "spent").first()
    return bool(row) and row["budget"] is not None and row["spent"] + unrecorded >= row["budget"]


def run_spent(run_pk: int) -> Decimal:
    """What a run's judge calls have cost so far, recounted from its judgments (a cached one is free); stored
    on the run as its `spent`. For the kinds that judge outside the unit machinery (the ranker's batch), whose
    judgments are written one call at a time."""
    spent = Decimal(0)
    for unit in Judgment.objects.filter(run_id=run_pk, judge__isnull=False, cached=False).select_related("judge"):
        prices = prices_of(unit.judge)
        if prices is not None:
            spent += tokens_cost(unit.prompt_tokens or 0, unit.completion_tokens or 0, prices)
    Run.objects.filter(pk=run_pk).update(spent=spent)
    return spent


def budget_report(*, run: Run) -> dict | None:
    """The report's `budget`: the cap, what was spent, the units judged and those left unjudged, and (for a
    run stopped at its cap) the cases judged, the first 1,000 of them. None for a run without a budget."""
    if run.budget is None:
        return None
    from judgeapp.models import UnitStatus

    units = Judgment.objects.filter(run=run, judge__isnull=False)
    counts = units.aggregate(
        judged=Count("id", filter=Q(status__in=[UnitStatus.DONE, UnitStatus.FAILED])),
        not_judged=Count("id", filter=Q(status=UnitStatus.CANCELLED)),
    )
    report = {
        "limit": float(run.budget),
        "spent": money(Run.objects.filter(pk=run.pk).values_list("spent", flat=True).first()),
        "stopped": run.stopped == StopReason.BUDGET,
        "units_judged": counts["judged"],
        "units_not_judged": counts["not_judged"],
    }
    if report["stopped"]:
        cases = (
            units.filter(status__in=[UnitStatus.DONE, UnitStatus.FAILED], case__isnull=False)
            .order_by("case__position", "case__case_id").values_list("case__case_id", flat=True).distinct()
        )
        report["cases_judged"] = list(cases[:1000])
        report["cases_judged_count"] = cases.count()
    return report


def stopped_reason(run: Run) -> str:
    """The line a run stopped at its budget gives among the reasons it is invalid."""
    return f"the run stopped at its budget of {money_text(run.budget)} before every unit was judged"


@dataclass
class Estimate:
    """What a run would ask its judges, from its inputs alone (no judge call): `calls` (each verdict and trial
    once: no retry, no parse retry, nothing answered from the cache), the tokens they would send and get back,
    and their `cost` (None: a judge has no price)."""

    calls: int
    input_tokens: int
    output_tokens: int
    cost: Decimal | None
    how: str = ""

    def as_dict(self) -> dict:
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": money(self.cost),
            "how": self.how,
        }

    @property
    def text(self) -> str:
        """"about 2,388 judge calls, 1,203,000 tokens in and 95,000 out, about $0.41"."""
        cost = f", about {money_text(self.cost)}" if self.cost is not None else ", no price for the judge"
        return (
            f"about {self.calls:,} judge calls, {self.input_tokens:,} tokens in and {self.output_tokens:,} out{cost}"
        )


# Without a judge's history: about four characters a token (English text, most tokenizers; the fake judge
# counts exactly so), and a reply of this many tokens per mode: a verdict object with a sentence or two of
# reasoning (the demo judge's pointwise replies averaged 37 tokens over evals/support). A judge's own history
# replaces both once it has judged (judge_token_profile).
CHARS_PER_TOKEN = 4.0
DEFAULT_OUTPUT_TOKENS = {"pointwise": 40, "pairwise": 50, "jury": 40, "checkup": 50, "agent": 200, "blind": 400, "rank": 40}
# The judge's recent judgments read to learn its tokens (what its tokenizer makes of a character, how long
# its replies are): enough for a steady mean, few enough to read at once.
HISTORY_UNITS = 200
# Prompts rendered for an estimate: a larger run is measured on its first ones and scaled up.
PROMPTS_MEASURED = 2000


@dataclass(frozen=True)
class TokenProfile:
    chars_per_token: float
    output_tokens: float
    learned_from: int  # judgments of the judge's history it was learned from; 0: the defaults

    @property
    def how(self) -> str:
        if not self.learned_from:
            return f"about {CHARS_PER_TOKEN:g} characters a token; replies of about {self.output_tokens:g} tokens"
        return (
            f"{self.chars_per_token:.2f} characters a token and replies of {self.output_tokens:.0f} tokens, "
            f"as the judge's last {self.learned_from} judgments went"
        )


def messages_chars(messages: list[dict]) -> int:
    """The characters of a conversation's texts, as a server counts what it reads (one per line between)."""
    texts = [m.get("content") if isinstance(m.get("content"), str) else "" for m in messages or []]
    return len("\n".join(texts))


def _history_units(mode: str | None):
    """A judge's judgments its tokens are learned from (one call each: no parse retry, no trials), of `mode` or any."""
    units = Judgment.objects.filter(parse_attempts=1, trials__isnull=True, prompt_tokens__gt=0).exclude(messages=[])
    return units.filter(run__kind=mode) if mode else units


def _profile_of(rows: list) -> TokenProfile | None:
    """The profile learned from (messages, prompt tokens, completion tokens) rows; None when they say nothing."""
    chars = sum(messages_chars(messages) for messages, _, _ in rows)
    if not (rows and chars):
        return None
    return TokenProfile(
        chars_per_token=chars / sum(tokens for _, tokens, _ in rows),
        output_tokens=sum(out for _, _, out in rows) / len(rows),
        learned_from=len(rows),
    )


def judge_token_profile(*, judge: Judge, mode: str) -> TokenProfile:
    """How the judge's tokens went in its last judgments of this mode, else in any mode, else the defaults."""
    for units in (_history_units(mode), _history_units(None)):
        recent = units.filter(judge=judge).order_by("-id").values_list("messages", "prompt_tokens", "completion_tokens")
        rows = list(recent[:HISTORY_UNITS])
        if profile := _profile_of(rows):
            return profile
    return TokenProfile(CHARS_PER_TOKEN, DEFAULT_OUTPUT_TOKENS.get(mode, 120), 0)


def judge_token_profiles(*, judges: list[Judge], mode: str) -> dict[int, TokenProfile]:
    """judge_token_profile of several judges, by judge pk: two queries for all of them (a page that lists the
    judges), each judge's last HISTORY_UNITS judgments picked by a window over its own."""
    from django.db.models import F, Window
    from django.db.models.functions import RowNumber

    profiles: dict[int, TokenProfile] = {}
    for units in (_history_units(mode), _history_units(None)):
        missing = [judge.pk for judge in judges if judge.pk not in profiles]
        if not missing:
            break
        ranked = units.filter(judge_id__in=missing).annotate(
            recent=Window(RowNumber(), partition_by=[F("judge_id")], order_by=F("id").desc())
        )
        rows: dict[int, list] = {}
        for judge_id, *row in ranked.filter(recent__lte=HISTORY_UNITS).order_by("judge_id", "-id").values_list(
            "judge_id", "messages", "prompt_tokens", "completion_tokens"
        ):
            rows.setdefault(judge_id, []).append(row)
        profiles.update({pk: profile for pk, group in rows.items() if (profile := _profile_of(group))})
    default = TokenProfile(CHARS_PER_TOKEN, DEFAULT_OUTPUT_TOKENS.get(mode, 120), 0)
    return {judge.pk: profiles.get(judge.pk, default) for judge in judges}


def estimate_from_prompts(*, judge: Judge, mode: str, prompts, count: int, trials: int = 1) -> Estimate:
    """The estimate of `count` judge prompts (`prompts`: an iterable of each one's messages, in the run's
    order; only the first PROMPTS_MEASURED are rendered and measured, the rest taken as long on average),
    each asked `trials` times."""
    profile = judge_token_profile(judge=judge, mode=mode)
    measured, chars = 0, 0
    for messages in prompts:
        chars += messages_chars(messages)
        measured += 1
        if measured >= PROMPTS_MEASURED:
            break
    calls = count * trials
    per_prompt = chars / profile.chars_per_token / measured if measured else 0
    input_tokens = round(per_prompt * calls)
    output_tokens = round(profile.output_tokens * calls)
    prices = prices_of(judge)
    how = profile.how + (f"; measured on the first {measured:,} of {count:,} prompts" if measured < count else "")
    return Estimate(
        calls=calls, input_tokens=input_tokens, output_tokens=output_tokens,
        cost=tokens_cost(input_tokens, output_tokens, prices) if prices else None, how=how,
    )


def estimate_from_chars(
    *, judge: Judge, mode: str, chars_per_call: float, calls: int, profile: TokenProfile | None = None
) -> Estimate:
    """The estimate of `calls` prompts of `chars_per_call` characters on average (measured once for inputs that
    do not change, such as the check-up's shipped sets); `profile` when the judge's is read already."""
    profile = profile or judge_token_profile(judge=judge, mode=mode)
    input_tokens = round(chars_per_call / profile.chars_per_token * calls)
    output_tokens = round(profile.output_tokens * calls)
    prices = prices_of(judge)
    return Estimate(
        calls=calls, input_tokens=input_tokens, output_tokens=output_tokens,
        cost=tokens_cost(input_tokens, output_tokens, prices) if prices else None, how=profile.how,
    )


def estimates_sum(estimates: list[Estimate]) -> Estimate:
    """Several judges' estimates as one (a jury): the cost unknown when one judge's is."""
    costs = [e.cost for e in estimates]
    return Estimate(
        calls=sum(e.calls for e in estimates),
        input_tokens=sum(e.input_tokens for e in estimates),
        output_tokens=sum(e.output_tokens for e in estimates),
        cost=None if any(c is None for c in costs) else sum(costs, start=Decimal(0)),
        how="; ".join(dict.fromkeys(e.how for e in estimates)),
    )
