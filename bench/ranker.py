"""Benchmark of the ranker (seed ranker.md): comparator calls and ranking quality of a batch rank.

    python bench/ranker.py [--n 100] [--cap 10] [--trials 5] [--noise 0.05,0.2] [--bias 0.1,0.3]

N candidates with hidden true qualities arrive in a random order (a fresh order per trial) and are
batch-ranked with `manage.py rank` into a ranklist capped at --cap, through the app's judge client over
HTTP to the fake judge server, in a throwaway SQLite database and DATA_DIR. The fake judge compares by
an oracle of the true quality; it is then made a bad judge on purpose:

- noisy: with probability p (each of --noise) a verdict is drawn at random (A, B or Equal);
- position-biased: with probability p (each of --bias) it answers A (the artifact shown first) whatever
  the content.

Printed figures:
- comparator calls of a batch rank with a perfect judge, against the seed's worst case (2 + log2 N per
  insert, N the list's length at that insert) and against the information-theoretic lower bound for
  finding and ordering the top k of n with two-way comparisons, log2(n! / (n - k)!);
- for each bad judge, with and without --both-orders: Kendall tau-b (scipy) of the top k against the
  truth, over the union of the ranked top k and the true top k (an artifact missing from one list ranks
  k + 1 there, so both order and membership count), and the overlap with the true top k.

Each trial's judge has its own model name, so the response cache never carries one trial's verdicts into
another.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL = "depth and correctness of the incident analysis"


def setup_django(workdir: Path) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "judgeapp.settings"
    os.environ["DATA_DIR"] = str(workdir / "data")
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ["JUDGES_FILE"] = str(workdir / "no-judges.toml")
    os.environ["JUDGE_MODEL"] = ""
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)


def kendall_top_k(ranked: list[str], truth: dict[str, float], k: int) -> tuple[float, int]:
    """(tau-b over the union of the ranked top k and the true top k, overlap with the true top k)."""
    from scipy.stats import kendalltau

    true_top = sorted(truth, key=truth.get, reverse=True)[:k]
    union = sorted(set(ranked[:k]) | set(true_top))
    ranked_pos = {a: i for i, a in enumerate(ranked[:k])}
    true_pos = {a: i for i, a in enumerate(true_top)}
    tau = kendalltau([ranked_pos.get(a, k) for a in union], [true_pos.get(a, k) for a in union]).statistic
    return float(tau), len(set(ranked[:k]) & set(true_top))


class Bench:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.quality: dict[str, float] = {}
        self.truth: dict[str, float] = {}
        self.texts: dict[str, str] = {}
        for i in range(args.n):
            doc = f"doc{i:03d}"
            text = f"# Incident analysis {doc}\n\nFindings {self.rng.random():.10f}; timeline, root cause, actions.\n"
            q = self.rng.random()
            self.truth[doc], self.texts[doc], self.quality[text.strip()] = q, text, q
        self.counter = 0

    def oracle(self, text: str, goal: str = "") -> float:
        return self.quality[text.strip()]

    def candidates(self, workdir: Path, trial: int) -> Path:
        """The N files in a random arrival order: the rank command takes them sorted by name."""
        order = list(self.truth)
        random.Random(f"{self.args.seed}-arrival-{trial}").shuffle(order)
        directory = workdir / "candidates" / f"trial-{trial}"
        directory.mkdir(parents=True)
        for arrival, doc in enumerate(order):
            (directory / f"{arrival:03d}-{doc}.md").write_text(self.texts[doc])
        return directory

    def rank(self, server, directory: Path, *, both_orders: bool) -> dict:
        from django.core.management import call_command

        from judgeapp.models import Judge, Run

        self.counter += 1
        judge = Judge.objects.create(name=f"bench-{self.counter}", model=f"fake-{self.counter}", base_url=server.url, max_concurrency=4)
        run_id = f"bench-{self.counter}"
        argv = ["rank", str(directory), "--goal", GOAL, "--judge", judge.name, "--max-size", str(self.args.cap), "--run-id", run_id]
        if both_orders:
            argv.append("--both-orders")
        call_command(*argv, stdout=io.StringIO(), stderr=io.StringIO())
        report = Run.objects.get(run_id=run_id).report
        report["ranking_docs"] = [a.split("-", 1)[1].removesuffix(".md") for a in report["ranking"]]
        return report


def probabilities(text: str) -> list[float]:
    values = [float(v) for v in text.split(",") if v.strip()]
    if not values or not all(0 <= v <= 1 for v in values):
        raise argparse.ArgumentTypeError("comma-separated probabilities between 0 and 1")
    return values


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100, help="candidates (default 100)")
    parser.add_argument("--cap", type=int, default=10, help="max ranklist size (default 10)")
    parser.add_argument("--trials", type=int, default=5, help="random arrival orders per setting (default 5)")
    parser.add_argument("--noise", type=probabilities, default="0.05,0.2", help="noisy judges: probabilities of a random verdict (default 0.05,0.2)")
    parser.add_argument("--bias", type=probabilities, default="0.1,0.3", help="biased judges: probabilities of answering A (default 0.1,0.3)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the qualities and arrival orders")
    args = parser.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="bench-ranker-"))
    setup_django(workdir)
    from fakejudge import DemoBrain, FakeJudgeServer
    from judgeapp.ranker.core import top_k_lower_bound

    bench = Bench(args)
    directories = [bench.candidates(workdir, t) for t in range(args.trials)]
    lower_bound = top_k_lower_bound(args.n, args.cap)
    command = " ".join(["python bench/ranker.py", *(argv if argv is not None else sys.argv[1:])])
    print(f"Ranker benchmark: N={args.n} candidates, cap {args.cap}, {args.trials} random arrival orders, "
          f"the fake judge server over HTTP ({command})\n")

    started = time.monotonic()
    with FakeJudgeServer(DemoBrain(artifact_quality_fn=bench.oracle, tie_margin=1e-12)) as perfect:
        reports = [bench.rank(perfect, d, both_orders=False) for d in directories]
    calls = [r["comparator_calls"] for r in reports]
    worst = [r["seed_worst_case"] for r in reports]
    true_top = sorted(bench.truth, key=bench.truth.get, reverse=True)[: args.cap]
    exact = sum(1 for r in reports if r["ranking_docs"][: args.cap] == true_top)
    mean_calls = statistics.mean(calls)
    print("Perfect judge (the oracle), seed algorithm, one order:")
    print(f"  comparator calls per batch rank: mean {mean_calls:.1f} (min {min(calls)}, max {max(calls)})")
    print(f"  the seed's worst case, sum of 2 + log2 N over the inserts: {statistics.mean(worst):.1f} "
          f"-> ratio {mean_calls / statistics.mean(worst):.2f}")
    print(f"  information-theoretic lower bound for the top {args.cap} of {args.n}, log2({args.n}!/{args.n - args.cap}!): "
          f"{lower_bound:.1f} -> ratio {mean_calls / lower_bound:.2f}")
    print(f"  the ranklist is exactly the true top {args.cap}, in order, in {exact}/{len(reports)} trials\n")

    settings = [(f"noisy (p={p:g} random verdict)", {"noise": p}) for p in args.noise]
    settings += [(f"position-biased (p={p:g} answers A)", {"position_bias": p}) for p in args.bias]
    print(f"Bad judges: Kendall tau-b of the top {args.cap} against the truth (mean over {args.trials} trials; "
          f"1 = the true top {args.cap} in order), overlap with the true top {args.cap}, comparator calls")
    print(f"  {'judge':42} {'orders':>8} {'tau-b':>7} {'min':>6} {'overlap':>8} {'calls':>7}")
    for label, options in settings:
        for both in (False, True):
            results, calls = [], []
            for trial, directory in enumerate(directories):
                brain = DemoBrain(artifact_quality_fn=bench.oracle, tie_margin=1e-12, seed=trial, **options)
                with FakeJudgeServer(brain) as server:
                    report = bench.rank(server, directory, both_orders=both)
                results.append(kendall_top_k(report["ranking_docs"], bench.truth, args.cap))
                calls.append(report["comparator_calls"])
            taus = [tau for tau, _ in results]
            overlaps = [overlap for _, overlap in results]
            print(f"  {label:42} {'both' if both else 'one':>8} {statistics.mean(taus):7.3f} {min(taus):6.3f} "
                  f"{statistics.mean(overlaps):6.1f}/{args.cap} {statistics.mean(calls):7.1f}")
    print(f"\nwall time {time.monotonic() - started:.0f}s; scratch data in {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
