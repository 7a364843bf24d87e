"""The house plan's figures (docs/ARCHITECTURE.md): files per mode, import circles between modules, and
the longest import chain. Run from the repository root: `.venv/bin/python scripts/house_figures.py`.

A mode's places are its own folders (each counted once) and the other files whose path names it; a circle is
a set of two or more modules that import each other round (a strongly connected component of the module
import graph, function-level imports included); the longest chain is the longest path of imports through
the graph with each circle counted as one step.
"""

import subprocess
import sys
from pathlib import Path

import grimp

MODES = ("ranker", "pointwise", "pairwise", "jury", "agent", "blind")
PACKAGES = ("judgeapp", "calibration", "fakejudge")


def places_per_mode() -> dict[str, int]:
    """Where someone changing a mode must look: its own folders (a folder named after the mode counts once,
    however many files it holds) and every other file that names it."""
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    code = [f for f in tracked if f.endswith((".py", ".html")) and not f.startswith(("tests/", "bench/", "docs/"))]
    places = {}
    for mode in MODES:
        spots = set()
        for f in code:
            parts = f.split("/")
            if mode not in f:
                continue
            own = next((i for i, part in enumerate(parts[:-1]) if part == mode), None)
            spots.add("/".join(parts[: own + 1]) if own is not None else f)
        places[mode] = len(spots)
    return places


def strongly_connected(graph, modules: set[str]) -> list[set[str]]:
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(m):
        index[m] = low[m] = counter[0]
        counter[0] += 1
        stack.append(m)
        on_stack.add(m)
        for n in graph.find_modules_directly_imported_by(m) & modules:
            if n not in index:
                visit(n)
                low[m] = min(low[m], low[n])
            elif n in on_stack:
                low[m] = min(low[m], index[n])
        if low[m] == index[m]:
            component = set()
            while True:
                n = stack.pop()
                on_stack.discard(n)
                component.add(n)
                if n == m:
                    break
            out.append(component)

    for m in sorted(modules):
        if m not in index:
            visit(m)
    return out


def longest_chain(graph, modules: set[str], components: list[set[str]]) -> list[str]:
    of = {m: i for i, c in enumerate(components) for m in c}
    edges = {i: set() for i in range(len(components))}
    for m in modules:
        for n in graph.find_modules_directly_imported_by(m) & modules:
            if of[m] != of[n]:
                edges[of[m]].add(of[n])
    best: dict[int, list[int]] = {}

    def walk(i):
        if i not in best:
            tails = [walk(j) for j in edges[i]]
            best[i] = [i] + max(tails, key=len, default=[])
        return best[i]

    path = max((walk(i) for i in edges), key=len)
    return [" + ".join(sorted(components[i])) for i in path]


def main() -> None:
    sys.path.insert(0, str(Path.cwd()))
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    modules = {m for m in graph.modules if not m.split(".")[-1].startswith("test")}
    components = strongly_connected(graph, modules)
    circles = [c for c in components if len(c) > 1]
    print("places per mode:", ", ".join(f"{mode} {n}" for mode, n in places_per_mode().items()))
    print(f"import circles: {len(circles)}")
    for c in sorted(circles, key=len, reverse=True):
        print(f"  {len(c)} modules: {', '.join(sorted(c)[:6])}{' …' if len(c) > 6 else ''}")
    chain = longest_chain(graph, modules, components)
    print(f"longest import chain: {len(chain)} modules")
    print("  " + " -> ".join(chain))


if __name__ == "__main__":
    main()
