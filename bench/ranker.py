"""Benchmark of the ranker's strategies: comparator calls and ranking quality of a batch rank.

    python bench/ranker.py [--n 100] [--cap 10] [--trials 5] [--noise 0.05,0.1,0.2] [--bias 0.1,0.3]
                           [--strategies seed,seed-both,robust,tournament] [--check-app 1]

N candidates with hidden true qualities arrive in a random order (a fresh order per trial) and are
batch-ranked into a ranklist capped at --cap by each strategy:

- `seed`: ranker.md's binary insertion (`--strategy seed`, the default);
- `seed-both`: the same with `--both-orders` (each comparison twice, a disagreement counts as Equal);
- `robust`: `--strategy robust` (judgeapp/ranker/core/robust.py);
- `tournament`: `--strategy tournament` with its default budget (judgeapp/ranker/core/tournament.py).

The judge is the repo's fake judge (fakejudge.DemoBrain), which compares by an oracle of the true quality
and is then made a bad judge on purpose:

- noisy: with probability p (each of --noise) a verdict is drawn at random (A, B or Equal);
- position-biased: with probability p (each of --bias) it answers A (the artifact shown first) whatever
  the content.

Its verdicts are deterministic per prompt (as a temperature-0 judge behind the response cache is): asking
the same question again gives the same answer, so a strategy gets at most two looks at a pair (both orders).

The table is computed with the strategies' own functions (judgeapp/ranker/core), the comparator's real
prompt rendered and sent to the fake judge's brain in this process, its reply parsed by the app's parser:
the same verdicts as over HTTP, without the server and the database, so that 120 batch ranks of 100
candidates take minutes. `--check-app K` then runs K trial(s) of every strategy through `manage.py rank`
over HTTP to the fake judge server (a throwaway SQLite database and DATA_DIR) with the oracle and with the
first noisy judge, and says whether the ranklist and the number of HTTP calls are the same as computed here.

Printed per judge and strategy (mean over the trials): comparator calls (judge calls; the ratio to the
seed's), recall of the true top k, and Kendall tau-b (scipy) of the top k against the truth, over the union
of the ranked top k and the true top k (an artifact missing from one list ranks k + 1 there, so both order
and membership count).
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
STRATEGIES = ("seed", "seed-both", "robust", "tournament")


def kendall_top_k(ranked: list[str], truth: dict[str, float], k: int) -> tuple[float, float]:
    """(tau-b over the union of the ranked top k and the true top k, recall of the true top k)."""
    from scipy.stats import kendalltau

    true_top = sorted(truth, key=truth.get, reverse=True)[:k]
    union = sorted(set(ranked[:k]) | set(true_top))
    ranked_pos = {a: i for i, a in enumerate(ranked[:k])}
    true_pos = {a: i for i, a in enumerate(true_top)}
    tau = kendalltau([ranked_pos.get(a, k) for a in union], [true_pos.get(a, k) for a in union]).statistic
    return float(tau), len(set(ranked[:k]) & set(true_top)) / k


class Candidates:
    def __init__(self, n: int, seed: int):
        self.seed = seed
        rng = random.Random(seed)
        self.truth: dict[str, float] = {}
        self.texts: dict[str, str] = {}
        self.quality: dict[str, float] = {}
        for i in range(n):
            doc = f"doc{i:03d}"
            text = f"# Incident analysis {doc}\n\nFindings {rng.random():.10f}; timeline, root cause, actions.\n"
            q = rng.random()
            self.truth[doc], self.texts[doc], self.quality[text.strip()] = q, text, q

    def oracle(self, text: str, goal: str = "") -> float:
        return self.quality[text.strip()]

    def arrival(self, trial: int) -> list[str]:
        order = list(self.truth)
        random.Random(f"{self.seed}-arrival-{trial}").shuffle(order)
        return order


class InProcessJudge:
    """The fake judge's brain behind the comparator's real prompt and the app's reply parser; counts calls."""

    def __init__(self, candidates: Candidates, model: str, **brain_options):
        from fakejudge import DemoBrain
        from judgeapp.judging.prompts import load_prompt

        self.candidates = candidates
        self.brain = DemoBrain(artifact_quality_fn=candidates.oracle, tie_margin=1e-12, **brain_options)
        self.prompt = load_prompt("ranker")
        self.model = model
        self.calls = 0

    def ask(self, first: str, second: str, *, stage: str = "") -> str:
        import json

        from fakejudge.protocol import FakeRequest
        from judgeapp.judging.parsing import WINNER_SPEC
        from judgeapp.judging.prompts import user_message
        from judgeapp.ranker.core import render_comparison

        self.calls += 1
        text = render_comparison(
            self.prompt, goal=GOAL, artifact_a=self.candidates.texts[first], artifact_b=self.candidates.texts[second],
        )
        request = FakeRequest(path="/v1/chat/completions", body={"model": self.model, "messages": user_message(text)}, headers={})
        reply = json.loads(self.brain(request).body)["choices"][0]["message"]["content"]
        return WINNER_SPEC.parse(reply)["winner"]


def rank_in_process(strategy: str, arrival: list[str], judge: InProcessJudge, cap: int) -> list[str]:
    """A batch rank as the app makes it, with the strategies' core functions."""
    from judgeapp.ranker import core
    from judgeapp.ranker.core import robust, tournament
    from judgeapp.ranker.core.evidence import Evidence

    if strategy in ("seed", "seed-both"):
        memo: dict[tuple[str, str], str] = {}  # a ranklist decides a pair once (the stored comparison)

        def once(candidate: str, incumbent: str) -> str:
            if (candidate, incumbent) not in memo:
                memo[(candidate, incumbent)] = judge.ask(candidate, incumbent)
            return memo[(candidate, incumbent)]

        def both(candidate: str, incumbent: str) -> str:
            key = (candidate, incumbent, "both")
            if key not in memo:
                memo[key] = core.combine_orders(judge.ask(candidate, incumbent), core.swap(judge.ask(incumbent, candidate)))
            return memo[key]

        ranklist: list[str] = []
        for candidate in arrival:
            ranklist = core.insert(ranklist, candidate, both if strategy == "seed-both" else once, max_size=cap).ranklist
        return ranklist
    evidence = Evidence(judge.ask)
    if strategy == "robust":
        from judgeapp.ranker.runkind.work import VERIFY_EVERY

        ranklist = []
        for sequence, candidate in enumerate(arrival):
            ranklist = robust.robust_insert(ranklist, candidate, evidence, max_size=cap).ranklist
            if (sequence + 1) % VERIFY_EVERY == 0 or sequence == len(arrival) - 1:
                ranklist = robust.robust_verify(ranklist, evidence).ranklist
        return robust.robust_settle_cut(ranklist, evidence, max_size=cap).ranklist[:cap]
    evidence.budget = tournament.default_budget(len(arrival), cap)
    return tournament.tournament(arrival, evidence, k=cap, seed=0).ranking


def probabilities(text: str) -> list[float]:
    values = [float(v) for v in text.split(",") if v.strip()]
    if not values or not all(0 <= v <= 1 for v in values):
        raise argparse.ArgumentTypeError("comma-separated probabilities between 0 and 1")
    return values


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


class AppCheck:
    """Batch ranks through `manage.py rank` over HTTP to the fake judge server."""

    def __init__(self, candidates: Candidates, workdir: Path):
        self.candidates = candidates
        self.workdir = workdir
        self.counter = 0

    def directory(self, trial: int) -> Path:
        directory = self.workdir / "candidates" / f"trial-{trial}"
        if not directory.exists():
            directory.mkdir(parents=True)
            for arrival, doc in enumerate(self.candidates.arrival(trial)):
                (directory / f"{arrival:03d}-{doc}.md").write_text(self.candidates.texts[doc])
        return directory

    def rank(self, strategy: str, trial: int, cap: int, model: str, **brain_options) -> tuple[list[str], int]:
        from django.core.management import call_command

        from fakejudge import DemoBrain, FakeJudgeServer
        from judgeapp.models import Judge, Run

        self.counter += 1
        brain = DemoBrain(artifact_quality_fn=self.candidates.oracle, tie_margin=1e-12, **brain_options)
        with FakeJudgeServer(brain, models=(model,)) as server:
            judge = Judge.objects.create(name=f"bench-{self.counter}", model=model, base_url=server.url, max_concurrency=4)
            run_id = f"bench-{self.counter}"
            argv = [
                "rank", str(self.directory(trial)), "--goal", GOAL, "--judge", judge.name, "--max-size", str(cap), "--run-id",
                run_id,
            ]
            argv += ["--both-orders"] if strategy == "seed-both" else ["--strategy", strategy]
            try:
                call_command(*argv, stdout=io.StringIO(), stderr=io.StringIO())
            except SystemExit:
                pass
            requests = len(server.chat_requests)
        report = Run.objects.get(run_id=run_id).report
        return [a.split("-", 1)[1].removesuffix(".md") for a in report["ranking"]], requests


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100, help="candidates (default 100)")
    parser.add_argument("--cap", type=int, default=10, help="max ranklist size, the k of top-k (default 10)")
    parser.add_argument("--trials", type=int, default=5, help="random arrival orders per setting (default 5)")
    parser.add_argument(
        "--noise", type=probabilities, default="0.05,0.1,0.2", help="noisy judges: probabilities of a random verdict",
    )
    parser.add_argument("--bias", type=probabilities, default="0.1,0.3", help="biased judges: probabilities of answering A")
    parser.add_argument("--strategies", default=",".join(STRATEGIES), help=f"comma-separated, of {', '.join(STRATEGIES)}")
    parser.add_argument("--seed", type=int, default=1, help="seed of the qualities and arrival orders")
    parser.add_argument(
        "--check-app", type=int, default=1, metavar="K",
        help="trials of each strategy run through manage.py rank over HTTP as a cross-check (0: none)",
    )
    args = parser.parse_args(argv)
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = set(strategies) - set(STRATEGIES)
    if unknown:
        parser.error(f"unknown strategies: {', '.join(sorted(unknown))}")

    workdir = Path(tempfile.mkdtemp(prefix="bench-ranker-"))
    setup_django(workdir)
    candidates = Candidates(args.n, args.seed)
    command = " ".join(["python bench/ranker.py", *(argv if argv is not None else sys.argv[1:])])
    print(f"Ranker benchmark ({command}): N={args.n} candidates, top {args.cap}, {args.trials} random arrival orders;")
    print("the fake judge's brain (deterministic per prompt) behind the real comparator prompt and reply parser\n")

    judges = [("oracle", {})] + [(f"noise {p:g}", {"noise": p}) for p in args.noise] + [
        (f"bias {p:g}", {"position_bias": p}) for p in args.bias
    ]
    started = time.monotonic()
    results: dict[tuple[str, str], tuple[float, float, float]] = {}
    for label, options in judges:
        for strategy in strategies:
            calls, recalls, taus = [], [], []
            for trial in range(args.trials):
                judge = InProcessJudge(candidates, f"fake-{trial}", seed=trial, **options)
                ranked = rank_in_process(strategy, candidates.arrival(trial), judge, args.cap)
                tau, recall = kendall_top_k(ranked, candidates.truth, args.cap)
                calls.append(judge.calls)
                recalls.append(recall)
                taus.append(tau)
            results[(label, strategy)] = (statistics.mean(calls), statistics.mean(recalls), statistics.mean(taus))

    width = 26
    print(f"{'judge':12}" + "".join(f"{s:>{width}}" for s in strategies))
    print(f"{'':12}" + "".join(f"{'calls (x seed) recall tau':>{width}}" for _ in strategies))
    for label, _options in judges:
        base = results.get((label, "seed"), (None,))[0]
        cells = []
        for strategy in strategies:
            calls, recall, tau = results[(label, strategy)]
            ratio = f"({calls / base:.2f})" if base else ""
            cells.append(f"{calls:6.0f} {ratio:>6} {recall:5.2f} {tau:6.2f}")
        print(f"{label:12}" + "".join(f"{c:>{width}}" for c in cells))
    print(f"\n(wall time {time.monotonic() - started:.0f}s)")

    if args.check_app:
        check = AppCheck(candidates, workdir)
        print(f"\nCross-check through `manage.py rank` over HTTP ({args.check_app} trial(s) per strategy):")
        for label, options in judges[:2]:
            for strategy in strategies:
                for trial in range(args.check_app):
                    # A model name of its own: the response cache never answers one run from another's.
                    model = f"fake-{trial}-check-{strategy}-{label.replace(' ', '')}"
                    judge = InProcessJudge(candidates, model, seed=trial, **options)
                    expected = rank_in_process(strategy, candidates.arrival(trial), judge, args.cap)
                    ranked, requests = check.rank(strategy, trial, args.cap, model, seed=trial, **options)
                    same = "same ranklist" if ranked == expected[: args.cap] else "OTHER ranklist"
                    print(
                        f"  {label:10} {strategy:11} trial {trial}: {same}, {requests} HTTP calls (computed here: {judge.calls})"
                    )
    print(f"\nwall time {time.monotonic() - started:.0f}s; scratch data in {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
