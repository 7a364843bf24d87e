"""Train a nearest centroid classifier on data/flowers.csv and report its test accuracy."""

import csv
import json
import os
from collections import defaultdict


def load(path="data/flowers.csv"):
    with open(path, newline="") as f:
        return [(float(r["petal_length"]), float(r["petal_width"]), r["species"]) for r in csv.DictReader(f)]


def centroids(rows):
    sums = defaultdict(lambda: [0.0, 0.0, 0])
    for length, width, species in rows:
        s = sums[species]
        s[0] += length
        s[1] += width
        s[2] += 1
    return {species: (s[0] / s[2], s[1] / s[2]) for species, s in sums.items()}


def predict(model, length, width):
    return min(model, key=lambda species: (model[species][0] - length) ** 2 + (model[species][1] - width) ** 2)


def main():
    rows = load()
    test = rows[::4]
    train = [row for i, row in enumerate(rows) if i % 4]
    model = centroids(train)
    hits = defaultdict(lambda: [0, 0])
    for length, width, species in test:
        hits[species][0] += predict(model, length, width) == species
        hits[species][1] += 1
    accuracy = sum(h[0] for h in hits.values()) / len(test)
    print(f"test accuracy: {accuracy:.3f} on {len(test)} flowers")
    os.makedirs("out", exist_ok=True)
    with open("out/metrics.json", "w") as f:
        json.dump({"accuracy": round(accuracy, 3), "per_species": {s: h[0] / h[1] for s, h in hits.items()}}, f, indent=2)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed; no chart")
        return
    plt.bar(list(hits), [h[0] / h[1] for h in hits.values()])
    plt.savefig("out/accuracy.png")


if __name__ == "__main__":
    main()
