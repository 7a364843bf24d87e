"""How long the agreement task's statistics take, on PandaLM's real labels and on synthetic samples.

    .venv/bin/python bench/calibration_agreement.py [--resamples 1000]

Prints one line per case: items, labels, seconds for judge-human figures (with bootstrap intervals) and
for inter-annotator figures (Krippendorff's alpha with its interval, pairwise kappas), and the time to
draw a stratified sample. No database: the pure functions the task calls.
"""

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calibration.core.agreement import LabelPair, inter_annotator, judge_human  # noqa: E402
from calibration.core.sampling import stratified_sample  # noqa: E402


def pandalm():
    items = json.loads((ROOT / "datasets/pandalm/testset-v1.json").read_text())
    verdicts = {
        r["idx"]: r["gpt_result"] for r in json.loads((ROOT / "datasets/pandalm/gpt-3.5-turbo-testset-v1.json").read_text())
    }
    human = {0: "tie", 1: "A", 2: "B"}
    judge = {"1": "A", "2": "B", "Tie": "tie"}
    pairs, labels = [], {}
    for item in items:
        by = {f"annotator{i}": human[item[f"annotator{i}"]] for i in (1, 2, 3)}
        labels[item["idx"]] = by
        if verdicts[item["idx"]] in judge:
            pairs += [LabelPair(item["idx"], a, judge[verdicts[item["idx"]]], v) for a, v in by.items()]
    return "pandalm pairwise (real)", "pairwise", pairs, labels


def synthetic(n_items: int, overlap: int, seed: int = 0):
    rng = random.Random(seed)
    pairs, labels = [], {}
    for i in range(n_items):
        truth = rng.randint(1, 5)
        judged = min(5, max(1, truth + rng.choice([-1, 0, 0, 1])))
        by = {f"a{(i + k) % 5}": min(5, max(1, truth + rng.choice([-1, 0, 0, 0, 1]))) for k in range(overlap)}
        labels[i] = by
        pairs += [LabelPair(i, a, judged, v) for a, v in by.items()]
    return f"synthetic 1-5 scores, {n_items} items x {overlap}", "score", pairs, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (the app's default is 1000)")
    args = parser.parse_args()
    print(f"bootstrap resamples: {args.resamples}")
    print(f"{'case':<42} {'items':>6} {'labels':>7} {'judge-human s':>14} {'inter-annot. s':>15}")
    for name, kind, pairs, labels in [pandalm(), synthetic(30, 2), synthetic(200, 2), synthetic(1000, 3)]:
        start = time.perf_counter()
        figures = judge_human(pairs, label_kind=kind, n_resamples=args.resamples)
        middle = time.perf_counter()
        inter_annotator(labels, label_kind=kind, n_resamples=args.resamples)
        end = time.perf_counter()
        print(f"{name:<42} {figures['n_items']:>6} {figures['n_labels']:>7} {middle - start:>14.2f} {end - middle:>15.2f}")
    candidates = [(f"c{i}", str(1 + i % 5)) for i in range(100_000)]
    start = time.perf_counter()
    stratified_sample(candidates, size=500, seed=1)
    print(f"stratified draw of 500 from 100,000 judged items: {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
