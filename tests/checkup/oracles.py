"""Fake judges for the check-up that answer from the public sets' human labels, over the fake server.

`LabelOracle` reads the rendered Pairwise prompt, finds the pair by its message and its two replies, and
names the labelled output (as "1" or "2" for the order shown). With `noise` it gives the other answer on
that share of calls, drawn per prompt from a seeded hash, so each order of a pair is wrong independently
and the same prompt always gets the same answer.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from django.conf import settings

from fakejudge import completion
from judgeapp.checkup.core import SETS, load_pairs

DATASETS = Path(settings.BASE_DIR) / "datasets"


def prompt_parts(prompt: str) -> tuple[str, str, str]:
    """(customer message, reply 1, reply 2) of a rendered Pairwise prompt."""
    start = prompt.index("<customer_message>") + len("<customer_message>")
    end = prompt.index("</customer_message>\n<reply_1>", start)
    first_start = end + len("</customer_message>\n<reply_1>")
    first_end = prompt.index("</reply_1>\n<reply_2>", first_start)
    second_start = first_end + len("</reply_1>\n<reply_2>")
    second_end = prompt.rindex("</reply_2>")
    return prompt[start:end], prompt[first_start:first_end], prompt[second_start:second_end]


class LabelOracle:
    def __init__(self, *, noise: float = 0.0, seed: int = 0, datasets_dir: Path = DATASETS):
        self.noise, self.seed = noise, seed
        self.answers: dict[tuple[str, str, str], str] = {}
        for name in SETS:
            for pair in load_pairs(name, datasets_dir):
                self.answers[(pair.input, pair.output_1, pair.output_2)] = "1" if pair.label == "A" else "2"
                self.answers[(pair.input, pair.output_2, pair.output_1)] = "2" if pair.label == "A" else "1"
        self.unknown = 0

    def winner(self, prompt: str) -> str:
        truth = self.answers.get(prompt_parts(prompt))
        if truth is None:
            self.unknown += 1
            return "tie"
        if self.noise:
            draw = random.Random(f"{self.seed}:{hashlib.sha256(prompt.encode()).hexdigest()}").random()
            if draw < self.noise:
                return "2" if truth == "1" else "1"
        return truth

    def __call__(self, request):
        return completion(
            request, json.dumps({"reasoning": "Compared against the known label.", "winner": self.winner(request.prompt)}),
        )


def truncated_reply(request):
    """A reply cut at the token limit: half a JSON object and finish_reason "length"."""
    response = completion(request, '{"reasoning": "The first reply is better because')
    body = json.loads(response.body)
    body["choices"][0]["finish_reason"] = "length"
    response.body = json.dumps(body).encode()
    return response
