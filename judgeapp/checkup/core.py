"""The judge check-up: how good and how biased a judge is, measured on public pairs that people labelled.

Every pair is judged twice with the seed's Pairwise prompt, the first output shown as Reply 1 ("ab") and
then as Reply 2 ("ba"); each verdict is mapped back to the output it names (judgeapp/judging/pairs.py).
Against the human label ("A": output_1 is better, "B": output_2 is), per set:

- accuracy over consistent verdicts: of the pairs whose two orders agree, the share that agree with the
  label (an agreed tie is a miss: none of these sets has a tied label);
- accuracy over all: of all the pairs, the share whose two orders agree on the labelled output; a
  disagreement between the orders, and a pair without a usable verdict in both orders, count as misses;
- accuracy per order (mean of the two orders' accuracies): LLMBar's published "Acc.", for comparison;
- position consistency: of the pairs with a usable verdict in both orders, the share whose orders agree;
  and when they don't, which position the judge followed (Reply 1 in both orders, Reply 2, or a tie in one);
- Cohen's kappa between the label and the pair's verdict (A, B, tie, or none), over all pairs.

Intervals are 95%: Wilson score intervals for the shares (scipy's binomtest), a percentile bootstrap over
pairs for kappa and the per-order accuracy (2000 resamples, fixed seed, so a report is reproducible).
Published reference figures sit beside them, labelled "published", with where they come from and how
they were measured, which is not always the way measured here.

Plain Python (no Django): the datasets are read from files, the figures computed from plain cases.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from judgeapp.judging.errors import InputError
from judgeapp.judging.files import decode_text, json_load, tags_parse, text_check, text_lines
from judgeapp.judging.pairs import both_orders, sample_case_ids
from judgeapp.judging.stats import wilson_interval

if TYPE_CHECKING:
    import numpy as np

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
WILSON = "Wilson score interval, 95%"
BOOTSTRAP = f"percentile bootstrap over pairs, {BOOTSTRAP_RESAMPLES} resamples, random draw {BOOTSTRAP_SEED}, 95%"

PUBLISHED = "published"
COMPUTED_FROM_PUBLISHED = "computed here from published verdicts"


@dataclass(frozen=True)
class Reference:
    """A figure someone else measured, shown beside ours. `value` is a share or kappa, or a (low, high) range."""

    figure: str  # the key of our figure it stands beside
    value: float | tuple[float, float]
    who: str
    how: str
    source: str
    label: str = PUBLISHED

    def as_report(self) -> dict:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {
            "figure": self.figure, "value": value, "who": self.who, "how": self.how, "source": self.source, "label": self.label
        }


_LLMBAR_STATS = "princeton-nlp/LLMBar @ caa7bee, {path}/evaluators/{model}/{prompt}/statistics.json"


def _llmbar(
    path: str, model: str, prompt: str, prompt_name: str, *, both: float, mean: float, agreement: float
) -> list[Reference]:
    source = _LLMBAR_STATS.format(path=path, model=model, prompt=prompt)
    return [
        Reference("accuracy_all", both, model, f"{prompt_name}; both orders right (correct_both)", source),
        Reference("accuracy_mean_of_orders", mean, model, f"{prompt_name}; mean of the two orders' accuracy (LLMBar's Acc.)",
                  source),
        Reference("position_consistency", agreement, model, f"{prompt_name}; positional agreement rate (LLMBar's Agr.)", source),
    ]


@dataclass(frozen=True)
class CheckupSet:
    name: str
    path: str  # under the datasets directory
    title: str
    source: str
    label_rule: str
    references: tuple[Reference, ...] = ()


SETS: dict[str, CheckupSet] = {
    s.name: s
    for s in (
        CheckupSet(
            name="llmbar-natural",
            path="llmbar/natural.json",
            title="LLMBar Natural: 100 instructions, one output objectively better",
            source="princeton-nlp/LLMBar @ 900616bf (MIT), datasets/llmbar/natural.json",
            label_rule="the objectively better output, as LLMBar's authors labelled it",
            references=tuple(
                _llmbar("Dataset/LLMBar/Natural", "GPT-4", "Vanilla_NoRules", "the basic prompt (LLMBar's Vanilla)",
                        both=0.92, mean=0.935, agreement=0.97)
                + _llmbar("Dataset/LLMBar/Natural", "GPT-4", "Vanilla", "the basic prompt with rules (LLMBar's Vanilla*)",
                          both=0.93, mean=0.955, agreement=0.95)
            ),
        ),
        CheckupSet(
            name="mt-bench-human",
            path="llmbar/mt-bench-human.json",
            title="MT-Bench human judgments: 200 pairs, the experts' majority, ties removed",
            source="princeton-nlp/LLMBar @ 900616bf (MIT), Dataset/Processed/MT-Bench; datasets/llmbar/mt-bench-human.json",
            label_rule="the majority vote of MT-Bench's expert annotators (tied pairs removed by LLMBar)",
            references=tuple(
                _llmbar("Dataset/Processed/MT-Bench", "GPT-4", "Vanilla_NoRules", "the basic prompt (LLMBar's Vanilla)",
                        both=0.745, mean=0.81, agreement=0.87)
                + _llmbar("Dataset/Processed/MT-Bench", "ChatGPT", "Vanilla_NoRules", "the basic prompt (LLMBar's Vanilla)",
                          both=0.50, mean=0.7125, agreement=0.575)
                + [
                    Reference("accuracy_consistent", 0.85, "GPT-4",
                              "agreement with the experts on non-tie votes (setup S2), per vote, "
                              "on all of MT-Bench's expert votes",
                              "Zheng et al. 2023, Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena, Table 3"),
                    Reference("accuracy_consistent", 0.81, "people with each other",
                              "expert–expert agreement on non-tie votes (setup S2)",
                              "Zheng et al. 2023, Table 3"),
                    Reference("position_consistency", 0.65, "GPT-4",
                              "consistency when the two replies are swapped, default prompt, MT-Bench questions",
                              "Zheng et al. 2023, Table 2"),
                    Reference("position_consistency", 0.462, "GPT-3.5",
                              "consistency when the two replies are swapped, default prompt, MT-Bench questions",
                              "Zheng et al. 2023, Table 2"),
                ]
            ),
        ),
        CheckupSet(
            name="pandalm",
            path="pandalm/testset-v1.json",
            title="PandaLM test set v1: pairs labelled by three people, majority ties removed",
            source="WeOpenML/PandaLM @ 3871806e (Apache-2.0), datasets/pandalm/testset-v1.json",
            label_rule="the majority of PandaLM's three annotators; pairs whose majority is a tie are left out",
            references=(
                Reference("kappa", (0.85, 0.88), "PandaLM's three annotators with each other",
                          "inter-annotator Cohen's kappa, ties included",
                          "Wang et al. 2023, PandaLM; datasets/README.md"),
            ),
        ),
    )
}
DEFAULT_SETS = tuple(SETS)
PANDALM_GPT35 = "pandalm/gpt-3.5-turbo-testset-v1.json"


@dataclass(frozen=True)
class Pair:
    """One labelled pair: `label` "A" when output_1 is the better, "B" when output_2 is."""

    case_id: str
    set: str
    input: str
    output_1: str
    output_2: str
    label: str  # "tie" only in a team's own set: the shipped sets have no tied label
    tags: tuple[str, ...] = ()


def _read_json_list(path: Path) -> list:
    if not path.is_file():
        raise InputError(f"{path}: no such file (the check-up's public sets live in datasets/)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, list) or not data:
        raise InputError(f"{path}: expected a non-empty JSON array")
    return data


def _text(row: dict, key: str, where: str) -> str:
    value = row.get(key)
    # A few of PandaLM's responses are JSON booleans (a model that answered "True"): shown as Python's str().
    if isinstance(value, (bool, int, float)):
        return str(value)
    if not isinstance(value, str):
        raise InputError(f"{where}: '{key}' must be a text")
    return value


def _majority(votes: list[int]) -> int | None:
    value, count = Counter(votes).most_common(1)[0]
    return value if count * 2 > len(votes) else None


def load_pairs(set_name: str, datasets_dir: Path) -> list[Pair]:
    """Every labelled pair of a set, in file order, with ids "<set>/<index in the file>" (PandaLM's idx)."""
    spec = checkup_set(set_name)
    path = Path(datasets_dir) / spec.path
    pairs = []
    for i, row in enumerate(_read_json_list(path)):
        where = f"{path} item {i}"
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected a JSON object")
        if set_name == "pandalm":
            try:
                votes = [int(row[f"annotator{k}"]) for k in (1, 2, 3)]
            except (KeyError, TypeError, ValueError):
                raise InputError(f"{where}: needs annotator1..3 as 0, 1 or 2") from None
            majority = _majority(votes)
            if majority not in (1, 2):
                continue  # a tied (or split) human verdict: nothing to be right or wrong about
            extra = row.get("input") or ""
            prompt = _text(row, "instruction", where) + (f"\n\nInput: {extra}" if extra else "")
            pairs.append(Pair(f"{set_name}/{row.get('idx', i)}", set_name, prompt, _text(row, "response1", where),
                              _text(row, "response2", where), "A" if majority == 1 else "B"))
        else:
            label = row.get("label")
            if label not in (1, 2):
                raise InputError(f"{where}: 'label' must be 1 or 2, got {json.dumps(label)}")
            pairs.append(Pair(f"{set_name}/{i}", set_name, _text(row, "input", where), _text(row, "output_1", where),
                              _text(row, "output_2", where), "A" if label == 1 else "B"))
    if not pairs:
        raise InputError(f"{path}: no labelled pair")
    return pairs


def checkup_set(name: str) -> CheckupSet:
    try:
        return SETS[name]
    except KeyError:
        raise InputError(
            f"unknown set {name!r}: choose from {', '.join(SETS)}, or give a .jsonl file of your own pairs"
        ) from None


def parse_sets(value: str | list[str] | None) -> list[str]:
    """'llmbar-natural,pandalm' (or a list) -> the set names, known, deduplicated, in the order given."""
    if value is None:
        return list(DEFAULT_SETS)
    names = value.split(",") if isinstance(value, str) else list(value)
    chosen: list[str] = []
    for name in (n.strip() for n in names):
        if not name:
            continue
        checkup_set(name)
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise InputError(f"--set is empty: choose from {', '.join(SETS)}")
    return chosen


# --- A team's own set: JSONL of human-labelled pairs -------------------------------------------------------

OWN_LABELS = {1: "A", 2: "B", "1": "A", "2": "B", "tie": "tie"}
# A set's file name names it in the report and builds its pairs' ids ("<file name>/<n>", 150 characters).
MAX_OWN_NAME = 100
OWN_LABEL_RULE = "the team's own human label in the file: 1 (output_1 is better), 2 (output_2 is) or tie"


def own_set_name(name: str) -> str:
    """The set's name: its file name (not a path), refused when it is a shipped set's name or too long."""
    name = Path(name).name
    text_check(name, name, "the set's file name", max_length=MAX_OWN_NAME)
    if name in SETS:
        raise InputError(f"{name}: a shipped set has this name; rename the file")
    return name


def _own_text(row: dict, key: str, where: str, *, blank: bool = True) -> str:
    value = row.get(key)
    if not isinstance(value, str) or (not blank and not value.strip()):
        raise InputError(f"{where}: '{key}' must be a {'' if blank else 'non-empty '}text")
    return value


def own_pairs(data: bytes, name: str, *, max_pairs: int) -> list[Pair]:
    """A team's own pairs: JSONL `{"input", "output_1", "output_2", "label": 1 | 2 | "tie", "tags"?}`, read
    strictly line by line (the first bad row is one line naming its line number and the reason); ids are
    "<file name>/<n>", n counting the pairs from 0 as a shipped set's file index does."""
    set_name = own_set_name(name)
    pairs: list[Pair] = []
    for line_no, line in enumerate(text_lines(decode_text(data, set_name)), start=1):
        if not line.strip():
            continue
        where = f"{set_name} line {line_no}"
        if len(pairs) >= max_pairs:
            raise InputError(f"{set_name}: more than {max_pairs:,} pairs (MAX_TESTSET_CASES)")
        row = json_load(line, where)
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected a JSON object")
        label = row.get("label")
        if isinstance(label, bool) or not isinstance(label, (int, str)) or label not in OWN_LABELS:
            raise InputError(f"{where}: 'label' must be 1, 2 or \"tie\", got {json.dumps(label)[:40]}")
        pairs.append(Pair(
            f"{set_name}/{len(pairs)}", set_name, _own_text(row, "input", where, blank=False),
            _own_text(row, "output_1", where), _own_text(row, "output_2", where), OWN_LABELS[label],
            tuple(tags_parse(row.get("tags"), where)),
        ))
    if not pairs:
        raise InputError(f"{set_name}: no pairs")
    return pairs


def sample_pairs(pairs: list[Pair], *, sample: int | None, seed: int | None) -> list[Pair]:
    """`sample` pairs of one set drawn with `seed` (all of a set smaller than that), in file order."""
    chosen = set(sample_case_ids([p.case_id for p in pairs], sample=sample, seed=seed))
    return [p for p in pairs if p.case_id in chosen]


# --- The figures ---------------------------------------------------------------------------------------


@dataclass
class CheckupCase:
    """One pair as judged: each order's verdict mapped back to "A" | "B" | "tie", or None (no usable verdict)."""

    case_id: str
    label: str
    ab: str | None
    ba: str | None
    truncated: tuple[str, ...] = ()  # the orders whose final reply was cut at the token limit
    parse_failed: tuple[str, ...] = ()  # the orders whose reply did not parse, after the one retry
    errors: dict[str, str] = field(default_factory=dict)  # order -> why it has no verdict
    tags: tuple[str, ...] = ()  # a team's own pair's tags: its figures again per tag (set_figures' slices)

    @property
    def judged(self) -> bool:
        return self.ab is not None and self.ba is not None

    @property
    def verdict(self) -> str | None:
        """The pair's verdict after both orders: the output both named, "tie" (an agreed tie or a
        disagreement), or None when an order has no verdict."""
        return both_orders(self.ab, self.ba)[0]

    @property
    def consistent(self) -> bool:
        return self.judged and self.ab == self.ba

    @property
    def correct(self) -> bool:
        return self.consistent and self.ab == self.label

    @property
    def followed(self) -> str | None:
        """When the orders disagree, which position the judge followed: "first" (Reply 1 both times),
        "second" (Reply 2 both times) or "mixed" (a tie in one order)."""
        if not self.judged or self.consistent:
            return None
        if (self.ab, self.ba) == ("A", "B"):
            return "first"
        if (self.ab, self.ba) == ("B", "A"):
            return "second"
        return "mixed"

    def as_report(self) -> dict:
        return {
            "case_id": self.case_id,
            "label": self.label,
            "ab": self.ab,
            "ba": self.ba,
            "verdict": self.verdict,
            "consistent": self.consistent,
            "correct": self.correct,
            **({"followed": self.followed} if self.followed else {}),
            **({"truncated": list(self.truncated)} if self.truncated else {}),
            **({"errors": self.errors} if self.errors else {}),
            **({"tags": list(self.tags)} if self.tags else {}),
        }


def wilson(successes: int, trials: int) -> dict:
    """A share with its Wilson score interval (None without trials)."""
    if not trials:
        return {"value": None, "ci95": None, "k": successes, "n": trials, "method": WILSON}
    return {
        "value": successes / trials,
        "ci95": wilson_interval(successes, trials, confidence=CONFIDENCE),
        "k": successes,
        "n": trials,
        "method": WILSON,
    }


def verdict_category(verdict: str | None) -> str:
    """The judge's side of the kappa table: "A", "B", "tie" or "none" (no verdict in both orders)."""
    return "none" if verdict is None else verdict


def cohen_kappa(first: list[str], second: list[str]) -> float | None:
    """Cohen's kappa of two raters over the same items (None when chance agreement is certain)."""
    if len(first) != len(second) or not first:
        raise ValueError("kappa needs two equally long, non-empty lists")
    n = len(first)
    observed = sum(a == b for a, b in zip(first, second)) / n
    counts_first, counts_second = Counter(first), Counter(second)
    expected = sum(counts_first[c] * counts_second[c] for c in counts_first) / (n * n)
    if math.isclose(expected, 1.0):
        return None
    return (observed - expected) / (1 - expected)


def _kappa_rows(first: np.ndarray, second: np.ndarray, categories: int) -> np.ndarray:
    """Kappa of every row of two (resamples x n) code arrays; NaN where chance agreement is certain."""
    import numpy as np  # here: `judge-checkup --help` imports this module

    observed = (first == second).mean(axis=1)
    expected = np.zeros(first.shape[0])
    for c in range(categories):
        expected += (first == c).mean(axis=1) * (second == c).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (observed - expected) / (1 - expected)
    kappa[np.isclose(expected, 1.0)] = np.nan
    return kappa


def _resample_indices(n: int) -> np.ndarray:
    import numpy as np

    return np.random.default_rng(BOOTSTRAP_SEED).integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))


def _percentile_interval(values: np.ndarray) -> list[float] | None:
    import numpy as np

    values = values[~np.isnan(values)]
    if not len(values):
        return None
    alpha = (1 - CONFIDENCE) / 2
    return [float(np.quantile(values, alpha)), float(np.quantile(values, 1 - alpha))]


def kappa_figure(labels: list[str], verdicts: list[str]) -> dict:
    """Cohen's kappa of the human labels and the judge's verdicts, with its bootstrap interval."""
    import numpy as np

    figure = {"value": None, "ci95": None, "n": len(labels), "method": BOOTSTRAP}
    if not labels:
        return figure
    figure["value"] = cohen_kappa(labels, verdicts)
    categories = sorted(set(labels) | set(verdicts))
    code = {c: i for i, c in enumerate(categories)}
    first = np.array([code[x] for x in labels])
    second = np.array([code[x] for x in verdicts])
    rows = _resample_indices(len(labels))
    figure["ci95"] = _percentile_interval(_kappa_rows(first[rows], second[rows], len(categories)))
    return figure


def mean_figure(values: list[float]) -> dict:
    """A mean over pairs with its bootstrap interval (the per-order accuracy: 0, 0.5 or 1 a pair)."""
    import numpy as np

    figure = {"value": None, "ci95": None, "n": len(values), "method": BOOTSTRAP}
    if not values:
        return figure
    array = np.array(values, dtype=float)
    figure["value"] = float(array.mean())
    figure["ci95"] = _percentile_interval(array[_resample_indices(len(values))].mean(axis=1))
    return figure


def set_figures(cases: list[CheckupCase]) -> dict:
    """Every figure of one set, from its cases (one per pair drawn), and its slices when pairs carry tags."""
    figures = _figures(cases)
    slices = tag_slices(cases)
    return {**figures, "slices": slices} if slices else figures


def tag_slices(cases: list[CheckupCase]) -> list[dict]:
    """The set's figures again over the pairs of each tag, worst first: the lowest accuracy over all pairs
    (the share both orders got right), a slice without any figure last. Each slice is an object
    ({tag, n, figures, counts}) so that another figure (a run-to-run noise) can sit beside it."""
    tags = sorted({tag for case in cases for tag in case.tags})
    slices = []
    for tag in tags:
        tagged = [c for c in cases if tag in c.tags]
        figures = _figures(tagged)
        slices.append({"tag": tag, "n": len(tagged), "figures": figures["figures"], "counts": figures["counts"]})
    return sorted(
        slices,
        key=lambda s: (s["figures"]["accuracy_all"]["value"] is None, s["figures"]["accuracy_all"]["value"] or 0, s["tag"]),
    )


def _figures(cases: list[CheckupCase]) -> dict:
    judged = [c for c in cases if c.judged]
    consistent = [c for c in judged if c.consistent]
    correct = [c for c in consistent if c.correct]
    followed = Counter(c.followed for c in judged if not c.consistent)
    decisive_followed = followed["first"] + followed["second"]
    if not decisive_followed:
        favours = None
    elif followed["first"] == followed["second"]:
        favours = "neither"
    else:
        favours = "first" if followed["first"] > followed["second"] else "second"
    per_order = [((c.ab == c.label) + (c.ba == c.label)) / 2 for c in cases]
    return {
        "figures": {
            "accuracy_consistent": wilson(len(correct), len(consistent)),
            "accuracy_all": wilson(len(correct), len(cases)),
            "accuracy_mean_of_orders": mean_figure(per_order),
            "position_consistency": wilson(len(consistent), len(judged)),
            "kappa": kappa_figure([c.label for c in cases], [verdict_category(c.verdict) for c in cases]),
        },
        "position": {
            "inconsistent": len(judged) - len(consistent),
            "followed_first": followed["first"],
            "followed_second": followed["second"],
            "mixed": followed["mixed"],
            # Of the disagreements where the judge picked the same position twice, the share it picked Reply 1.
            "first_share": wilson(followed["first"], decisive_followed),
            "favours": favours,
        },
        "counts": {
            "pairs": len(cases),
            "judged": len(judged),
            "unjudged": len(cases) - len(judged),
            "consistent": len(consistent),
            "correct": len(correct),
            "agreed_ties": sum(1 for c in consistent if c.ab == "tie"),
            "parse_failures": sum(len(c.parse_failed) for c in cases),
            "truncated": sum(len(c.truncated) for c in cases),
        },
        "cases": [c.as_report() for c in cases],
    }


def references_of(set_name: str) -> list[dict]:
    return [r.as_report() for r in checkup_set(set_name).references]


def pandalm_gpt35_reference(datasets_dir: Path, pairs: list[Pair] | list[CheckupCase]) -> list[dict]:
    """GPT-3.5's verdicts published with PandaLM (one order only, response 1 shown first), scored the way
    this check-up scores a judge on the same pairs: accuracy over all and kappa."""
    path = Path(datasets_dir) / PANDALM_GPT35
    try:
        rows = _read_json_list(path)
    except InputError:
        return []
    verdicts = {}
    for row in rows:
        if isinstance(row, dict) and "idx" in row:
            verdicts[f"pandalm/{row['idx']}"] = {"1": "A", "2": "B", "tie": "tie"}.get(
                str(row.get("gpt_result", "")).strip().lower(), "none"
            )
    if not pairs:
        return []
    judged = [verdicts.get(p.case_id, "none") for p in pairs]
    labels = [p.label for p in pairs]
    accuracy = sum(v == label for v, label in zip(judged, labels)) / len(pairs)
    kappa = cohen_kappa(labels, judged)
    source = "WeOpenML/PandaLM @ 3871806e, datasets/pandalm/gpt-3.5-turbo-testset-v1.json"
    how = f"its published verdicts on these {len(pairs)} pairs, one order only (a tie or an unreadable verdict is a miss)"
    refs = [Reference("accuracy_all", accuracy, "GPT-3.5", how, source, COMPUTED_FROM_PUBLISHED)]
    if kappa is not None:
        refs.append(Reference("kappa", kappa, "GPT-3.5", how, source, COMPUTED_FROM_PUBLISHED))
    return [r.as_report() for r in refs]
