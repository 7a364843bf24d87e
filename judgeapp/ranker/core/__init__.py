"""The ranker's core (seed ranker.md), plain Python: the comparator's prompt, the incremental insert, the
both-orders wrapper, the atomic ranklist write and the figures the report quotes. The strategies beyond
the seed are beside it: `robust.py`, `tournament.py` (over `evidence.py`), and `support.py`, how well a
ranklist's order is supported.

A comparator is a function `(candidate_id, incumbent_id) -> "A" | "B" | "Equal"` that asks the one
question of the seed with the candidate as Artifact A and the incumbent as Artifact B: "A" means the
new candidate better accomplishes the goal.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from judgeapp.judging.prompts import Prompt, PromptMarkup

A, B, EQUAL = "A", "B", "Equal"
WINNERS = (A, B, EQUAL)
DEFAULT_GOAL = "general quality"
DEFAULT_MAX_SIZE = 10

Comparator = Callable[[str, str], str]


class ComparisonFailed(Exception):
    """A comparator call that gave no verdict, after its retries: the strategies leave the candidate
    unplaced (the seed's insert, robust) or drop the artifact that keeps failing (tournament)."""

    def __init__(self, reason: str, *, first: str = "", second: str = ""):
        super().__init__(reason)
        self.reason, self.first, self.second = reason, first, second


# --- The comparator's prompt ----------------------------------------------------------------------------

_BACKTICK_RUN = re.compile(r"`+")


def fence(content: str) -> PromptMarkup:
    """The artifact's text inside a code fence that the text itself cannot close.

    A fence closes only on a line of at least as many backticks as opened it, so a run one longer than
    any run inside the content is never closed early: a line `WINNER: A` in an artifact stays quoted
    content, for the judge and for the reply parser when a judge echoes it. The fence is the ranker's
    escaping (its prompt has no tags), so the artifact goes in as it is, never changed (PromptMarkup).
    """
    longest = max((len(m.group(0)) for m in _BACKTICK_RUN.finditer(content)), default=0)
    marker = "`" * max(3, longest + 1)
    body = content if content.endswith("\n") else content + "\n"
    return PromptMarkup(f"{marker}\n{body}{marker}")


def render_comparison(prompt: Prompt, *, goal: str, artifact_a: str, artifact_b: str) -> str:
    """The seed's comparator prompt, with both artifacts fenced."""
    return prompt.render(goal=goal, artifact_a=fence(artifact_a), artifact_b=fence(artifact_b))


def swap(winner: str) -> str:
    """The same verdict seen from the other side: A <-> B, Equal stays."""
    return {A: B, B: A, EQUAL: EQUAL}[winner]


def combine_orders(candidate_first: str, candidate_second: str) -> str:
    """Both orders' verdicts, each already from the candidate's side: agreement stands, any disagreement
    is Equal (a verdict that flips with the order says more about position than about the artifacts)."""
    return candidate_first if candidate_first == candidate_second else EQUAL


def both_orders(compare_once: Callable[[str, str], str]) -> Comparator:
    """A comparator that asks `compare_once(first, second)` in both orders (the judge's "A" is `first`)."""

    def compare(candidate: str, incumbent: str) -> str:
        return combine_orders(compare_once(candidate, incumbent), swap(compare_once(incumbent, candidate)))

    return compare


# --- Mode 3: incremental insert -------------------------------------------------------------------------


class Outcome:
    INSERTED = "inserted"
    DISCARDED = "discarded"  # worse than the worst of a full list
    SKIPPED = "skipped"  # the ID is already registered


@dataclass
class Step:
    """One comparator call of an insert: which incumbent, where it stood, what the judge said."""

    stage: str  # top | bottom | middle
    incumbent: str
    index: int
    winner: str


@dataclass
class InsertResult:
    ranklist: list[str]
    outcome: str
    position: int | None = None  # index in the new list, when inserted and kept
    dropped: list[str] = field(default_factory=list)  # pushed out of the list by the prune
    steps: list[Step] = field(default_factory=list)

    @property
    def comparisons(self) -> int:
        return len(self.steps)


def insert(ranklist: list[str], candidate: str, compare: Comparator, max_size: int = DEFAULT_MAX_SIZE) -> InsertResult:
    """Place `candidate` in `ranklist` (best first) with the seed's adaptive insertion: top, bottom, then
    bisection of the middle. The input list is not modified; the result holds the new one."""
    if max_size < 1:
        raise ValueError("max_size must be at least 1")
    current = list(ranklist)
    if candidate in current:
        return InsertResult(current, Outcome.SKIPPED)
    steps: list[Step] = []

    def ask(stage: str, index: int) -> str:
        winner = compare(candidate, current[index])
        if winner not in WINNERS:
            raise ValueError(f"comparator answered {winner!r}; expected one of {', '.join(WINNERS)}")
        steps.append(Step(stage, current[index], index, winner))
        return winner

    # 1. Empty list: the candidate is the list.
    if not current:
        return _placed(current, candidate, 0, max_size, steps)

    # 2. Against the top.
    winner = ask("top", 0)
    if winner == A:
        return _placed(current, candidate, 0, max_size, steps)
    if winner == EQUAL:
        return _placed(current, candidate, 1, max_size, steps)

    # 3. Against the bottom, when the list has more than one item.
    if len(current) > 1:
        winner = ask("bottom", len(current) - 1)
        if winner == B:
            if len(current) >= max_size:
                return InsertResult(current[:max_size], Outcome.DISCARDED, dropped=current[max_size:], steps=steps)
            return _placed(current, candidate, len(current), max_size, steps)

    # 4. Bisection of the middle, low = 1, high = len - 2. Above the bottom (step 3) but below every middle
    # item, the candidate goes just above the bottom: that is where insertion_point starts. With one item
    # (no bottom compare) the candidate is below the top, so it goes after it.
    low, high = 1, len(current) - 2
    insertion_point = len(current) - 1 if len(current) > 1 else 1
    while low <= high:
        mid = (low + high) // 2
        winner = ask("middle", mid)
        if winner in (A, EQUAL):
            insertion_point = mid
            high = mid - 1
        else:
            low = mid + 1
    # 5. Prune (in _placed). 6. The caller writes the list atomically (write_ranklist).
    return _placed(current, candidate, insertion_point, max_size, steps)


def _placed(current: list[str], candidate: str, index: int, max_size: int, steps: list[Step]) -> InsertResult:
    new = current[:index] + [candidate] + current[index:]
    kept, dropped = new[:max_size], new[max_size:]
    if candidate in dropped:
        return InsertResult(kept, Outcome.DISCARDED, dropped=[d for d in dropped if d != candidate], steps=steps)
    return InsertResult(kept, Outcome.INSERTED, position=index, dropped=dropped, steps=steps)


# --- Figures for the report -----------------------------------------------------------------------------


def seed_worst_case(list_length: int) -> float:
    """The seed's worst case for one insert into a list of this length: 2 + log2(N) calls (none when the
    list is empty)."""
    return 0.0 if list_length == 0 else 2 + math.log2(list_length)


def max_comparisons(list_length: int) -> int:
    """The most comparator calls one insert can make: top, bottom, and a bisection of len - 2 items."""
    if list_length == 0:
        return 0
    if list_length == 1:
        return 1
    return 2 + math.ceil(math.log2(list_length - 1))


def rank_calls_most(candidates: int, *, max_size: int, both_orders: bool, list_length: int = 0) -> int:
    """The most comparator calls binary insertion makes to insert `candidates` artifacts one by one into a
    list of `list_length`, capped at `max_size`: each insert's max_comparisons, twice when both orders are judged."""
    total, length = 0, list_length
    for _ in range(candidates):
        total += max_comparisons(length)
        length = min(length + 1, max_size)
    return total * (2 if both_orders else 1)


# --- Files ----------------------------------------------------------------------------------------------


def write_ranklist(path: str | Path, ids: list[str]) -> None:
    """Write the ranklist (a JSON array of IDs, best first) so that no reader ever sees a partial file:
    the whole content goes to <path>.tmp, is flushed to disk, then renamed over the old file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    data = json.dumps(list(ids), ensure_ascii=False, indent=2) + "\n"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    try:
        directory = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(directory)  # the rename itself survives a power cut
    finally:
        os.close(directory)


def read_ranklist(path: str | Path) -> list[str]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except RecursionError:
        raise ValueError(f"{path}: not a ranklist (nested too deep)") from None
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        raise ValueError(f"{path}: not a ranklist (a JSON array of artifact IDs)")
    return data


def jsonl_ensure(path: str | Path, records: list[dict], key: Callable[[dict], object]) -> int:
    """Append to a JSONL log the records it does not hold yet (by `key`); returns how many were added.

    The log is append-only: nothing in it is ever rewritten. Appending what is missing, under an
    exclusive lock on the file, makes a retried or resumed write add each record exactly once, and a
    record whose write was lost in a crash is added by the next writer.
    """
    if not records:
        return 0
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with open(fd, "rb", closefd=False) as f:
            existing = f.read()
        present = set()
        for line in existing.splitlines():
            try:
                present.add(key(json.loads(line)))
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
        missing = [r for r in records if key(r) not in present]
        if not missing:
            return 0
        data = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in missing).encode("utf-8")
        if existing and not existing.endswith(b"\n"):
            data = b"\n" + data  # a line cut short by a crash stays on its own line
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
        return len(missing)
    finally:
        os.close(fd)  # releases the lock


def read_jsonl(path: str | Path) -> list[dict]:
    """The whole records of a JSONL log; a last line cut short by a crash is ignored."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


# --- The report (seed "4. Save the result") ---------------------------------------------------------------


def format_verdict(winner: str, rationale: str) -> str:
    return f"WINNER: {winner}\nRATIONALE: {rationale}"


def format_ranklist(path: str | Path, top: list[tuple[str, str]]) -> str:
    """`Ranklist: <path>` then `Top 3:` and one line per artifact: `  1. <id> — <one-line preview>`."""
    lines = [f"Ranklist: {path}", "Top 3:"]
    lines += [f"  {n}. {artifact_id} — {preview}" for n, (artifact_id, preview) in enumerate(top[:3], start=1)]
    if not top:
        lines.append("  (empty)")
    return "\n".join(lines)


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def format_placement(artifact_id: str, ranking: list[str]) -> str | None:
    """Where an inserted candidate stands now: `Placed: <id> 4th of 12 (between <3rd> and <5th>)`; None
    when the list does not hold it (discarded, or pushed out later)."""
    if artifact_id not in ranking:
        return None
    index = ranking.index(artifact_id)
    above = ranking[index - 1] if index > 0 else None
    below = ranking[index + 1] if index + 1 < len(ranking) else None
    if above and below:
        where = f" (between {above} and {below})"
    elif below:
        where = f" (above {below})"
    elif above:
        where = f" (below {above}, the last)"
    else:
        where = " (the only one)"
    return f"Placed: {artifact_id} {ordinal(index + 1)} of {len(ranking)}{where}"


def format_calls(calls: int, worst_case: float, *, inserts: int, both_orders: bool) -> str:
    orders = " (each comparison judged in both orders)" if both_orders else ""
    return (
        f"Comparator calls: {calls} for {inserts} insert{'s' if inserts != 1 else ''}{orders} (HTTP requests to the "
        f"judge, its retries included); worst case: at most 2 + log2 N comparisons per insert, {worst_case:.0f} in all"
    )
