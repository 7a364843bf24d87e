"""Run the fake judge server on its own: `python -m fakejudge --port 8931`.

The demo starts it so that a new user can try every mode without a model; every verdict it gives carries
the note that it is a scripted demo server, not a language model.
"""

import argparse
import signal
import sys
import threading

from .brains import DemoBrain
from .server import FakeJudgeServer, IgnoreTools, Runaway, When


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fakejudge", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8931, help="port to listen on (0 picks a free one)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    parser.add_argument("--position-bias", type=float, default=0.0, help="probability of picking the first reply")
    parser.add_argument("--noise", type=float, default=0.0, help="probability of a random verdict")
    parser.add_argument(
        "--rubric-aware",
        action="store_true",
        help="score a pointwise prompt on the criterion it names (the support rubric's helpfulness, accuracy, tone) "
        "instead of alike on every criterion",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the per-prompt randomness")
    parser.add_argument(
        "--behaviour",
        choices=("demo", "runaway", "ignore-tools"),
        default="demo",
        help="demo: scripted verdicts; runaway: every reply a long non-JSON text cut at max_tokens (finish_reason "
        "length); ignore-tools: never calls a tool, answers a verdict at once",
    )
    args = parser.parse_args(argv)
    brain = DemoBrain(position_bias=args.position_bias, noise=args.noise, seed=args.seed, rubric_aware=args.rubric_aware)
    if args.behaviour == "runaway":
        brain = Runaway()
    elif args.behaviour == "ignore-tools":
        brain = When(lambda request: bool(request.tool_names), IgnoreTools(), brain)
    server = FakeJudgeServer(brain, latency=args.latency, host=args.host, port=args.port).start()
    print(f"fake judge (scripted, not a language model) listening on {server.url}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
