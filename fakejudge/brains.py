"""Brains: actions that read a judge prompt and answer it deterministically, the way a judge would.

A brain recognises each seed prompt by its fixed wording, pulls out what it grades, rates it with a
quality function, and answers in the form the prompt asks for. The default quality function is a small
text heuristic (on-topic words, concrete steps, refusals, length) so that the demo's verdicts look
plausible; tests pass their own quality function (an oracle) to know the true answer.

Options that make it a bad judge on purpose: `position_bias` (probability of picking the first reply or
artifact whatever the content) and `noise` (probability of a random verdict), both seeded per prompt, so
the same prompt always gets the same answer.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable

from .server import SCRIPTED_NOTE, FakeRequest, Response, completion, make_tool_calls

Quality = Callable[[str, str], float]  # (text graded, context such as the customer message or goal) -> 0..1

_STOP = set(
    "the a an and or but to of in on for with my your our is are was were be been it this that i you we they "
    "have has had do does did not no can could would should will just please hi hello thanks thank there "
    "what when where which who how why from at by as about into than then them their its im ive".split()
)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z][a-z']+", text.lower())


def support_reply_quality(reply: str, message: str = "") -> float:
    """A plausible, deterministic quality estimate for a customer-support reply."""
    words = _words(reply)
    if not words:
        return 0.0
    lower = reply.lower()
    score = 0.45
    topic = {w for w in _words(message) if len(w) > 3 and w not in _STOP}
    if topic:
        score += 0.35 * len(topic & set(words)) / len(topic)
    if re.search(r"\b(step|click|go to|settings|refund|reset|link|within \d|\d+ (business )?days?|hours?|replace|"
                 r"track|cancel|update|confirm|email)\b", lower):
        score += 0.15
    if re.search(r"\b(sorry|apolog|thanks for|thank you for|happy to help)", lower):
        score += 0.05
    if re.search(r"(can't help|cannot help|not our problem|no idea|i don't know|nothing we can do|"
                 r"contact someone else|figure it out)", lower):
        score -= 0.4
    if len(words) < 8:
        score -= 0.2
    if len(words) > 250:
        score -= 0.1
    return max(0.0, min(1.0, score))


def artifact_quality(artifact: str, goal: str = "") -> float:
    """A plausible quality estimate for a document ranked against a goal: coverage, structure, substance."""
    words = _words(artifact)
    if not words:
        return 0.0
    goal_words = {w for w in _words(goal) if len(w) > 3 and w not in _STOP}
    coverage = len(goal_words & set(words)) / len(goal_words) if goal_words else 0.5
    structure = min(1.0, (artifact.count("\n#") + artifact.count("\n- ") + artifact.count("\n* ")) / 12)
    substance = min(1.0, len(set(words)) / 400)
    return 0.4 * coverage + 0.25 * structure + 0.35 * substance


def _between(text: str, start: str, end: str) -> str | None:
    match = re.search(re.escape(start) + r"(.*?)" + re.escape(end), text, re.S)
    return match.group(1).strip() if match else None


def _unfence(text: str) -> str:
    """Drop a fence the app may have put around an artifact (``` or <<< >>> lines)."""
    lines = text.strip().splitlines()
    if len(lines) >= 2 and (lines[0].startswith("```") or lines[0].startswith("<<<")):
        if lines[-1].startswith("```") or lines[-1].startswith(">>>") or lines[-1].startswith("<<<"):
            lines = lines[1:-1]
    return "\n".join(lines)


class DemoBrain:
    def __init__(self, *, quality: Quality | None = None, artifact_quality_fn: Quality | None = None,
                 position_bias: float = 0.0, noise: float = 0.0, seed: int = 0, tie_margin: float = 0.02,
                 note: str = SCRIPTED_NOTE):
        self.quality = quality or support_reply_quality
        self.artifact_quality = artifact_quality_fn or artifact_quality
        self.position_bias = position_bias
        self.noise = noise
        self.seed = seed
        self.tie_margin = tie_margin
        self.note = note

    # Deterministic per prompt and model: the same prompt to the same model always draws the same number,
    # and two "models" served by one demo server disagree now and then, as a jury's members do.
    def _rng(self, request: FakeRequest) -> random.Random:
        digest = hashlib.sha256(f"{self.seed}:{request.model}:{request.prompt}".encode()).hexdigest()
        return random.Random(int(digest[:16], 16))

    def _say(self, text: str) -> str:
        return f"{text} {self.note}".strip()

    def __call__(self, request: FakeRequest) -> Response:
        prompt = request.prompt
        if "You are checking whether another agent's work meets one requirement" in prompt:
            return self.agent(request)
        if "Comparison goal:" in prompt and "Artifact A:" in prompt:
            return completion(request, self.ranker(request))
        if "<reply_1>" in prompt:
            return completion(request, self.pairwise(request))
        if "You are one of several independent graders" in prompt:
            return completion(request, self.juror(request))
        if "<assistant_reply>" in prompt:
            return completion(request, self.pointwise(request))
        return completion(request, self.generate(request))

    # --- one answer per seed prompt ----------------------------------------------------------------------

    def pointwise(self, request: FakeRequest) -> str:
        prompt = request.prompt
        reply = _between(prompt, "<assistant_reply>", "</assistant_reply>") or ""
        message = _between(prompt, "<customer_message>", "</customer_message>") or ""
        quality = self.quality(reply, message)
        rng = self._rng(request)
        score = 1 + round(4 * quality)
        if rng.random() < self.noise:
            score = rng.randint(1, 5)
        reasoning = self._say(
            f"The reply {'addresses' if quality >= 0.6 else 'only partly addresses' if quality >= 0.4 else 'misses'} "
            f"the customer's request; estimated quality {quality:.2f} on the rubric."
        )
        return json.dumps({"reasoning": reasoning, "score": score})

    def juror(self, request: FakeRequest) -> str:
        prompt = request.prompt
        reply = _between(prompt, "<assistant_reply>", "</assistant_reply>") or ""
        message = _between(prompt, "<customer_message>", "</customer_message>") or ""
        quality = self.quality(reply, message)
        rng = self._rng(request)
        verdict = "pass" if quality >= 0.55 else "fail"
        if rng.random() < self.noise:
            verdict = rng.choice(["pass", "fail"])
        return json.dumps({"reasoning": self._say(f"Estimated quality {quality:.2f}."), "verdict": verdict})

    def _prefer(self, request: FakeRequest, first_quality: float, second_quality: float) -> str:
        """'1', '2' or 'tie', with the brain's position bias and noise applied."""
        rng = self._rng(request)
        if rng.random() < self.position_bias:
            return "1"
        if rng.random() < self.noise:
            return rng.choice(["1", "2", "tie"])
        if abs(first_quality - second_quality) <= self.tie_margin:
            return "tie"
        return "1" if first_quality > second_quality else "2"

    def pairwise(self, request: FakeRequest) -> str:
        prompt = request.prompt
        message = _between(prompt, "<customer_message>", "</customer_message>") or ""
        first = _between(prompt, "<reply_1>", "</reply_1>") or ""
        second = _between(prompt, "<reply_2>", "</reply_2>") or ""
        winner = self._prefer(request, self.quality(first, message), self.quality(second, message))
        reasoning = self._say(
            "Both replies are about as good." if winner == "tie" else f"Reply {winner} answers the request better."
        )
        return json.dumps({"reasoning": reasoning, "winner": winner})

    def ranker(self, request: FakeRequest) -> str:
        prompt = request.prompt
        goal = (_between(prompt, "Comparison goal:", "\n") or "").strip()
        first = _unfence(_between(prompt, "Artifact A:", "\nArtifact B:") or "")
        second = _unfence(_between(prompt, "Artifact B:", "\nDecide which one better accomplishes the goal") or "")
        preference = self._prefer(request, self.artifact_quality(first, goal), self.artifact_quality(second, goal))
        winner = {"1": "A", "2": "B", "tie": "Equal"}[preference]
        rationale = {
            "A": "Artifact A covers the goal more completely and with more concrete detail than B.",
            "B": "Artifact B covers the goal more completely and with more concrete detail than A.",
            "Equal": "Both artifacts cover the goal to about the same depth; neither has a decisive gap.",
        }[winner]
        return f"WINNER: {winner}\nRATIONALE: {self._say(rationale)}"

    def generate(self, request: FakeRequest) -> str:
        """A system under test answering a customer: a helpful reply built from the message."""
        message = request.messages[-1].get("content", "") if request.messages else ""
        topic = [w for w in _words(message) if len(w) > 3 and w not in _STOP][:4]
        about = ", ".join(topic) if topic else "your request"
        instructions = " ".join(m.get("content", "") for m in request.messages if m.get("role") == "system").lower()
        if "brief" in instructions:
            # A system told to be brief answers in one short line: two versions of a system differ.
            return f"Please check your account about {topic[0] if topic else 'this'}."
        return (
            f"Thanks for reaching out about {about}. I'm sorry for the trouble. Here is what to do: go to "
            f"Settings, confirm the details, and we will update you by email within 2 business days."
        )

    def agent(self, request: FakeRequest) -> Response:
        """A small tool-using judge: look for the path the requirement names, then decide on what it saw."""
        prompt = request.prompt
        requirement = _between(prompt, "<requirement>", "</requirement>") or ""
        path_match = re.search(r"[\w./-]+\.[A-Za-z0-9]{1,5}\b", requirement)
        results = request.tool_results
        tools = request.tool_names
        if path_match and not results and tools:
            path = path_match.group(0)
            tool = next((t for t in tools if "read" in t), tools[0])
            return completion(request, None, tool_calls=make_tool_calls([(tool, {"path": path})]))
        if path_match and results:
            path = path_match.group(0)
            observed = str(results[-1].get("content", ""))
            missing = re.search(r"(not found|no such|does not exist|error)", observed, re.I)
            verdict = "not_met" if missing else "met"
            evidence = (
                f"{path}: not found in the workspace (tool said: {observed[:120]})"
                if missing
                else f"{path}:1 exists; first line read: {observed.splitlines()[0][:120] if observed else ''}"
            )
            return completion(request, json.dumps({"verdict": verdict, "evidence": evidence}))
        return completion(request, json.dumps({"verdict": "not_met", "evidence": "no file path in the requirement to check"}))
